// Package gittree reads git tree objects entry by entry, straight from
// their encoded bytes. The state branch's directories hold an entry per
// config or stage (10,000 and more in a large repository), and go-git's
// decode allocates a string for every name and grows a slice of every
// entry each time such a tree is read, where its readers only need each
// entry once, in order, and keep almost none of the names.
package gittree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Entry is one entry of a tree. Name points into the tree's bytes: it is
// valid while they are, and a caller that keeps it copies it.
type Entry struct {
	Mode filemode.FileMode
	Name []byte
	Hash plumbing.Hash
}

// Read returns the encoded content of tree h.
func Read(s storer.EncodedObjectStorer, h plumbing.Hash) ([]byte, error) {
	o, err := s.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	if o.Type() != plumbing.TreeObject {
		return nil, fmt.Errorf("object %s is a %s, not a tree", h, o.Type())
	}
	r, err := o.Reader()
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	defer r.Close()
	// Sized as the object says, so a wide tree is one allocation; the
	// object's reader decides the bytes there are (a damaged loose
	// object's header may say anything, below zero included).
	var buf bytes.Buffer
	buf.Grow(int(max(0, min(o.Size(), 64<<20))) + 1)
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	return buf.Bytes(), nil
}

// Entries yields the entries of tree, in the tree's order, and stops at
// the first malformed one with an error naming its offset.
func Entries(tree []byte) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		for rest := tree; len(rest) > 0; {
			e, n, err := next(rest)
			if err != nil {
				yield(Entry{}, fmt.Errorf("tree entry at byte %d: %w", len(tree)-len(rest), err))
				return
			}
			if !yield(e, nil) {
				return
			}
			rest = rest[n:]
		}
	}
}

// canonical is the mode git reads an entry's mode as (canon_mode): a file
// is regular or executable whatever other bits an old git wrote (100664),
// and a mode of no known type is a submodule's, as go-git decodes it.
func canonical(mode filemode.FileMode) filemode.FileMode {
	switch mode & 0o170000 {
	case 0o040000:
		return filemode.Dir
	case 0o100000:
		if mode&0o111 != 0 {
			return filemode.Executable
		}
		return filemode.Regular
	case 0o120000:
		return filemode.Symlink
	}
	return filemode.Submodule
}

// errMalformed is a tree entry that is not "<octal mode> <name>\0<hash>".
var errMalformed = errors.New("malformed")

// next parses the entry at the start of b and says how many bytes it took.
func next(b []byte) (Entry, int, error) {
	space := bytes.IndexByte(b, ' ')
	if space <= 0 {
		return Entry{}, 0, fmt.Errorf("%w mode", errMalformed)
	}
	var mode uint64 // git writes 6 digits at most; old trees may pad them
	for _, c := range b[:space] {
		if c < '0' || c > '7' || mode > math.MaxUint32>>3 {
			return Entry{}, 0, fmt.Errorf("%w mode %q", errMalformed, b[:space])
		}
		mode = mode<<3 | uint64(c-'0')
	}
	nul := bytes.IndexByte(b[space+1:], 0)
	if nul <= 0 {
		return Entry{}, 0, fmt.Errorf("%w name", errMalformed)
	}
	end := space + 1 + nul + 1 + len(plumbing.ZeroHash)
	if end > len(b) {
		return Entry{}, 0, fmt.Errorf("hash: %w", io.ErrUnexpectedEOF)
	}
	e := Entry{Mode: canonical(filemode.FileMode(mode)), Name: b[space+1 : space+1+nul]}
	copy(e.Hash[:], b[space+1+nul+1:end])
	return e, end, nil
}

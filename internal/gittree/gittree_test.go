package gittree

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// storeTree encodes entries as go-git does and stores the tree.
func storeTree(t testing.TB, s *memory.Storage, entries []object.TreeEntry) plumbing.Hash {
	t.Helper()
	o := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(o); err != nil {
		t.Fatal(err)
	}
	h, err := s.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func randomEntries(r *rand.Rand, n int) []object.TreeEntry {
	modes := []filemode.FileMode{filemode.Regular, filemode.Executable, filemode.Dir, filemode.Symlink, filemode.Submodule}
	entries := make([]object.TreeEntry, n)
	for i := range entries {
		var h plumbing.Hash
		for j := range h {
			h[j] = byte(r.IntN(256)) // zero bytes and spaces included
		}
		entries[i] = object.TreeEntry{Name: fmt.Sprintf("%05d-%s.yaml", i, strings.Repeat("x", r.IntN(40))), Mode: modes[r.IntN(len(modes))], Hash: h}
	}
	return entries
}

// collect reads tree h with Read and Entries, as go-git's TreeEntry.
func collect(t *testing.T, s *memory.Storage, h plumbing.Hash) []object.TreeEntry {
	t.Helper()
	raw, err := Read(s, h)
	if err != nil {
		t.Fatal(err)
	}
	var got []object.TreeEntry
	for e, err := range Entries(raw) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, object.TreeEntry{Name: string(e.Name), Mode: e.Mode, Hash: e.Hash})
	}
	return got
}

func TestEntriesAreGoGitsDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := memory.NewStorage()
	for _, n := range []int{0, 1, 2, 17, 10000} {
		h := storeTree(t, s, randomEntries(r, n))
		want, err := object.GetTree(s, h)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Entries, collect(t, s, h)); diff != "" {
			t.Errorf("%d entries (-go-git +Entries):\n%s", n, diff)
		}
	}
}

func TestEntriesStopAtTheFirstMalformedEntry(t *testing.T) {
	s := memory.NewStorage()
	entries := randomEntries(rand.New(rand.NewPCG(3, 4)), 3)
	raw, err := Read(s, storeTree(t, s, entries))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tree []byte
	}{
		{"no space after the mode", []byte("100644")},
		{"an empty mode", []byte(" a\x00" + strings.Repeat("h", 20))},
		{"a mode not octal", []byte("100648 a\x00" + strings.Repeat("h", 20))},
		{"a mode over 32 bits", []byte("100000000000 a\x00" + strings.Repeat("h", 20))},
		{"an empty name", []byte("100644 \x00" + strings.Repeat("h", 20))},
		{"no end of name", []byte("100644 a")},
		{"a short hash", []byte("100644 a\x00" + strings.Repeat("h", 19))},
		{"a good entry, then a cut one", append(raw[:len(raw):len(raw)], "40000 dir\x00abc"...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n int
			var last error
			for _, err := range Entries(c.tree) {
				if err != nil {
					last = err
					break
				}
				n++
			}
			if last == nil {
				t.Fatalf("read %d entries and no error", n)
			}
			if strings.HasPrefix(c.name, "a good entry") && n != len(entries) {
				t.Errorf("read %d entries before the error, want %d", n, len(entries))
			}
		})
	}
	// Every cut of a good tree inside an entry is an error; a cut
	// between entries is a shorter tree.
	for cut := range len(raw) {
		var n int
		var failed bool
		for _, err := range Entries(raw[:cut]) {
			if err != nil {
				failed = true
				break
			}
			n++
		}
		if !failed && treeLen(entries[:n]) != cut {
			t.Errorf("a tree cut at byte %d read %d entries and no error", cut, n)
		}
	}
}

// treeLen is the encoded length of entries.
func treeLen(entries []object.TreeEntry) int {
	n := 0
	for _, e := range entries {
		n += len(strings.TrimLeft(fmt.Sprintf("%o", uint32(e.Mode)), "0")) + 1 + len(e.Name) + 1 + 20
	}
	return n
}

func TestReadRefusesAnObjectNotATree(t *testing.T) {
	s := memory.NewStorage()
	o := s.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	w, _ := o.Writer()
	_, _ = w.Write([]byte("100644 a\x00" + strings.Repeat("h", 20)))
	_ = w.Close()
	h, err := s.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Read(s, h); err == nil {
		t.Error("a blob was read as a tree")
	}
	if _, err := Read(s, plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")); err == nil {
		t.Error("a missing tree was read")
	}
}

func BenchmarkWideTree(b *testing.B) {
	s := memory.NewStorage()
	h := storeTree(b, s, randomEntries(rand.New(rand.NewPCG(5, 6)), 10000))
	b.Run("go-git", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t, err := object.GetTree(s, h)
			if err != nil || len(t.Entries) != 10000 {
				b.Fatal(err)
			}
		}
	})
	b.Run("gittree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			raw, err := Read(s, h)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, err := range Entries(raw) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 10000 {
				b.Fatal(n)
			}
		}
	})
}

// Old git wrote modes padded with a zero, and file modes with other
// permission bits; git reads them as the modes it writes today.
func TestEntriesReadOldModesAsGitDoes(t *testing.T) {
	tree := []byte("040000 dir\x00" + strings.Repeat("h", 20) + "0100644 a\x00" + strings.Repeat("i", 20) +
		"100664 b\x00" + strings.Repeat("j", 20) + "100775 c\x00" + strings.Repeat("k", 20) + "100600 d\x00" + strings.Repeat("l", 20) +
		"1 e\x00" + strings.Repeat("m", 20))
	var modes []filemode.FileMode
	for e, err := range Entries(tree) {
		if err != nil {
			t.Fatal(err)
		}
		modes = append(modes, e.Mode)
	}
	want := []filemode.FileMode{filemode.Dir, filemode.Regular, filemode.Regular, filemode.Executable, filemode.Regular, filemode.Submodule}
	if diff := cmp.Diff(want, modes); diff != "" {
		t.Error(diff)
	}
}

// FuzzEntriesAreGoGitsDecode: whatever bytes Entries reads without an
// error, go-git decodes to the same entries; Entries refuses only what is
// not a tree entry git writes (an empty name, among others go-git takes).
func FuzzEntriesAreGoGitsDecode(f *testing.F) {
	s := memory.NewStorage()
	raw, err := Read(s, storeTree(f, s, randomEntries(rand.New(rand.NewPCG(7, 8)), 4)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte("0100644 a\x00" + strings.Repeat("h", 20)))
	f.Add([]byte("100644 \x00" + strings.Repeat("h", 20)))
	f.Add([]byte("77777777777 a\x00" + strings.Repeat("h", 20)))
	f.Fuzz(func(t *testing.T, tree []byte) {
		var got []object.TreeEntry
		for e, err := range Entries(tree) {
			if err != nil {
				return
			}
			got = append(got, object.TreeEntry{Name: string(e.Name), Mode: e.Mode, Hash: e.Hash})
		}
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.TreeObject)
		if _, err := o.Write(tree); err != nil {
			t.Fatal(err)
		}
		var want object.Tree
		if err := want.Decode(o); err != nil {
			t.Fatalf("Entries read %d entries that go-git refuses: %v", len(got), err)
		}
		if diff := cmp.Diff(want.Entries, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("(-go-git +Entries):\n%s", diff)
		}
	})
}

// TestReadTakesTheBytesThereAreWhateverTheSizeSays: a damaged loose
// object whose header claims a size below zero (go-git parses it signed
// and keeps it when the content is empty) reads as the bytes it holds.
func TestReadTakesTheBytesThereAreWhateverTheSizeSays(t *testing.T) {
	dir := t.TempDir()
	h := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	var loose bytes.Buffer
	z := zlib.NewWriter(&loose)
	if _, err := z.Write([]byte("tree -5\x00")); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "objects", h.String()[:2], h.String()[2:])
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, loose.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	got, err := Read(s, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("read %q from an empty object", got)
	}
}

package gitpack

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// packFixture stores a commit whose tree holds an empty file, a file of
// 100 KB and a directory of n files (n=10,000 is a 340 KB tree, as a
// directory of 10,000 overlays is). It returns the objects a promotion
// commit changing one of those files makes (the commit, the trees, the
// large file), then the n files.
func packFixture(tb testing.TB, s storer.EncodedObjectStorer, n int) (made, files []plumbing.Hash) {
	tb.Helper()
	blob := func(content []byte) plumbing.Hash { return testutil.StoreBlob(tb, s, content) }
	empty, large := blob(nil), blob(bytes.Repeat([]byte("kind: Kustomization\n"), 5000))
	wide := &object.Tree{}
	for i := range n {
		files = append(files, blob(fmt.Appendf(nil, "newTag: %d\n", i)))
		wide.Entries = append(wide.Entries, object.TreeEntry{Name: fmt.Sprintf("dev%05d", i), Mode: filemode.Regular, Hash: files[i]})
	}
	wideHash := testutil.StoreObject(tb, s, wide)
	root := testutil.StoreObject(tb, s, &object.Tree{Entries: []object.TreeEntry{
		{Name: "empty", Mode: filemode.Regular, Hash: empty},
		{Name: "large", Mode: filemode.Regular, Hash: large},
		{Name: "overlays", Mode: filemode.Dir, Hash: wideHash},
	}})
	sig := object.Signature{Name: "vectorflow", Email: "vectorflow@example.com", When: time.Unix(1700000000, 0)}
	commit := testutil.StoreObject(tb, s, &object.Commit{Author: sig, Committer: sig, Message: "promote\n", TreeHash: root})
	return []plumbing.Hash{commit, root, wideHash, empty, large}, files
}

// TestWriteGitReads: a pack written is one git's index-pack takes whole
// and strict (every object well-formed, every reference inside it),
// holding the objects as they are, each deflated at zlib's best speed.
func TestWriteGitReads(t *testing.T) {
	s := memory.NewStorage()
	made, files := packFixture(t, s, 2000)
	objects := append(made, files...)
	var pack bytes.Buffer
	if err := Write(&pack, s, objects, nil); err != nil {
		t.Fatal(err)
	}
	// The first entry's header (type and size, seven bits a byte after
	// the first four), then its zlib stream: the top two bits of its
	// second byte are the level class, 0 for the fastest.
	data := pack.Bytes()[12:]
	for data[0]&0x80 != 0 {
		data = data[1:]
	}
	if level := data[2] >> 6; level != 0 {
		t.Errorf("the first entry is deflated at level class %d, want 0 (best speed)", level)
	}
	gitReads(t, s, pack.Bytes(), objects)
}

// gitReads checks that git's index-pack takes pack whole and strict
// (every object well-formed, every reference and delta base inside it) and
// that it holds objects as s does. It returns git verify-pack's report.
func gitReads(t *testing.T, s storer.EncodedObjectStorer, pack []byte, objects []plumbing.Hash) string {
	t.Helper()
	dir := t.TempDir()
	git := func(stdin []byte, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"--git-dir", dir}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	git(nil, "init", "-q", "--bare")
	fields := strings.Fields(git(pack, "index-pack", "--strict", "--stdin")) // "pack\t<name>"
	name := fields[len(fields)-1]
	// One cat-file for them all: "<name> <type> <size>\n<content>\n" each.
	var names strings.Builder
	for _, h := range objects {
		names.WriteString(h.String() + "\n")
	}
	got := []byte(git([]byte(names.String()), "cat-file", "--batch"))
	for _, h := range objects {
		o, err := s.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := o.Reader()
		var want bytes.Buffer
		want.ReadFrom(r)
		header := fmt.Sprintf("%s %s %d\n", h, o.Type(), want.Len())
		if !bytes.HasPrefix(got, []byte(header)) || !bytes.HasPrefix(got[len(header):], append(want.Bytes(), '\n')) {
			t.Fatalf("%s %s does not read back as its %d bytes", o.Type(), h, want.Len())
		}
		got = got[len(header)+want.Len()+1:]
	}
	return git(nil, "verify-pack", "-v", dir+"/objects/pack/pack-"+name+".idx")
}

// versions stores n versions of a directory of width files, each changing
// two files far apart and one file of its own, newest first, as a push of
// n commits lists them; bases names each older version's newer one.
func versions(tb testing.TB, s storer.EncodedObjectStorer, n, width int) (objects []plumbing.Hash, bases map[plumbing.Hash]plumbing.Hash) {
	tb.Helper()
	bases = map[plumbing.Hash]plumbing.Hash{}
	files := make([]plumbing.Hash, width)
	status := make([]byte, 0, 4000)
	for i := range 100 {
		status = fmt.Appendf(status, "  condition%d: true\n", i)
	}
	common := make([]plumbing.Hash, width)
	for i := range common {
		common[i] = testutil.StoreBlob(tb, s, fmt.Appendf(nil, "file %d\n", i))
	}
	var newer, newerStatus plumbing.Hash
	for v := n; v > 0; v-- {
		copy(files, common)
		files[v%width] = testutil.StoreBlob(tb, s, fmt.Appendf(nil, "version %d\n", v))
		files[(v+width/2)%width] = testutil.StoreBlob(tb, s, fmt.Appendf(nil, "version %d, again\n", v))
		statusHash := testutil.StoreBlob(tb, s, fmt.Appendf(bytes.Clone(status), "sequence: %d\n", v))
		tree := &object.Tree{}
		for i, f := range files {
			tree.Entries = append(tree.Entries, object.TreeEntry{Name: fmt.Sprintf("dev%05d", i), Mode: filemode.Regular, Hash: f})
		}
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: "status", Mode: filemode.Regular, Hash: statusHash})
		h := testutil.StoreObject(tb, s, tree)
		objects = append(objects, h, statusHash, files[v%width], files[(v+width/2)%width])
		if !newer.IsZero() {
			bases[h], bases[statusHash] = newer, newerStatus
		}
		newer, newerStatus = h, statusHash
	}
	return append(objects, common...), bases
}

// TestWriteIndexedIndexesAsGitDoes: the index WriteIndexed makes of its
// pack, whole objects and deltas alike, is byte for byte the index git's
// index-pack makes of the same pack, so the store may keep it without
// reading the pack back.
func TestWriteIndexedIndexesAsGitDoes(t *testing.T) {
	s := memory.NewStorage()
	objects, bases := versions(t, s, 60, 500)
	made, _ := packFixture(t, s, 300)
	objects = append(objects, made...)
	var pack bytes.Buffer
	index, err := WriteIndexed(&pack, s, objects, bases)
	if err != nil {
		t.Fatal(err)
	}
	var ours bytes.Buffer
	if _, err := idxfile.NewEncoder(&ours).Encode(index); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	indexPack(t, dir, pack.Bytes())
	idx, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.idx"))
	if len(idx) != 1 {
		t.Fatalf("git index-pack left %v, want one index", idx)
	}
	gits := must(os.ReadFile(idx[0]))
	if !bytes.Equal(ours.Bytes(), gits) {
		t.Errorf("WriteIndexed's index (%d bytes) differs from git's (%d bytes)", ours.Len(), len(gits))
	}
	if want := "pack-" + plumbing.Hash(index.PackfileChecksum).String() + ".idx"; filepath.Base(idx[0]) != want {
		t.Errorf("git named the pack %s, want %s", filepath.Base(idx[0]), want)
	}
}

// TestWriteDeltas: versions of one directory named as each other's bases
// are sent as deltas (a few bytes a version, not the whole tree), in
// chains no longer than git's default depth, and git reads every object
// back; a base outside the pack, later in it, or of another type leaves
// the object whole, so the pack is always complete on its own.
func TestWriteDeltas(t *testing.T) {
	s := memory.NewStorage()
	objects, bases := versions(t, s, 120, 2000)
	var whole, pack bytes.Buffer
	if err := Write(&whole, s, objects, nil); err != nil {
		t.Fatal(err)
	}
	if err := Write(&pack, s, objects, bases); err != nil {
		t.Fatal(err)
	}
	report := gitReads(t, s, pack.Bytes(), objects)
	if pack.Len()*10 > whole.Len() {
		t.Errorf("the pack with deltas is %d bytes, the one without %d: want a tenth at most", pack.Len(), whole.Len())
	}
	// verify-pack -v ends with "chain length = N: M objects" lines.
	deltas, longest := 0, 0
	for _, line := range strings.Split(report, "\n") {
		var length, count int
		if _, err := fmt.Sscanf(line, "chain length = %d: %d object", &length, &count); err == nil {
			deltas += count
			longest = max(longest, length)
		}
	}
	if want := 2 * (120 - 120/(MaxDepth+1) - 1); deltas < want {
		t.Errorf("%d objects written as deltas, want at least %d (every older tree and status but one in %d):\n%s", deltas, want, MaxDepth+1, report)
	}
	if longest > MaxDepth {
		t.Errorf("a delta chain of %d, want at most %d", longest, MaxDepth)
	}

	// Bases the pack cannot use: each object comes whole, and the pack is
	// as large as the one without bases.
	unusable := map[plumbing.Hash]plumbing.Hash{}
	outside := testutil.StoreBlob(t, s, []byte("not in the pack\n"))
	for i, h := range objects {
		switch i % 3 {
		case 0:
			unusable[h] = outside
		case 1:
			if i+1 < len(objects) {
				unusable[h] = objects[i+1] // written after it
			}
		case 2: // an earlier object of another type
			o, err := s.EncodedObject(plumbing.AnyObject, h)
			if err != nil {
				t.Fatal(err)
			}
			unusable[h] = objects[0] // the newest tree
			if o.Type() == plumbing.TreeObject {
				unusable[h] = objects[1] // its status file
			}
		}
	}
	var unused bytes.Buffer
	if err := Write(&unused, s, objects, unusable); err != nil {
		t.Fatal(err)
	}
	if report := gitReads(t, s, unused.Bytes(), objects); strings.Contains(report, "chain length") {
		t.Errorf("deltas on bases the pack cannot use:\n%s", report)
	}
	if unused.Len() != whole.Len() {
		t.Errorf("the pack with unusable bases is %d bytes, the one without bases %d", unused.Len(), whole.Len())
	}
}

// TestWriteThin: a version whose older version the receiver holds goes as
// a delta of it, a few bytes instead of the whole directory; git fixes
// the thin pack with the base it holds, and cannot without it. A held
// base the writer cannot read, or of another type, leaves the object
// whole.
func TestWriteThin(t *testing.T) {
	s := memory.NewStorage()
	objects, bases := versions(t, s, 2, 2000)
	// objects: the new tree, its status and two files, the old version's
	// four, then the files both share.
	newer, older, common := objects[:4], objects[4:8], objects[8:]
	held := map[plumbing.Hash]plumbing.Hash{}
	for old, n := range bases {
		held[n] = old
	}
	var whole, thin bytes.Buffer
	if err := Write(&whole, s, newer, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteThin(&thin, s, newer, nil, held); err != nil {
		t.Fatal(err)
	}
	if thin.Len()*20 > whole.Len() {
		t.Errorf("the thin pack is %d bytes, the whole one %d: want a twentieth at most", thin.Len(), whole.Len())
	}

	receiver := func(holds []plumbing.Hash) string {
		dir := t.TempDir()
		testutil.Git(t, dir, nil, "init", "-q", "--bare")
		if len(holds) > 0 {
			var pack bytes.Buffer
			if err := Write(&pack, s, holds, nil); err != nil {
				t.Fatal(err)
			}
			indexPack(t, dir, pack.Bytes(), "--strict")
		}
		return dir
	}
	if out, err := tryIndexPack(receiver(nil), thin.Bytes(), "--fix-thin"); err == nil {
		t.Errorf("a receiver without the held versions took the thin pack:\n%s", out)
	}
	dir := receiver(append(slices.Clone(older), common...))
	indexPack(t, dir, thin.Bytes(), "--fix-thin", "--strict")
	for _, h := range newer {
		o, err := s.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := io.ReadAll(must(o.Reader()))
		if got := testutil.Git(t, dir, nil, "cat-file", o.Type().String(), h.String()); got != string(want) {
			t.Fatalf("%s %s reads back as %d bytes, want %d", o.Type(), h, len(got), len(want))
		}
	}

	// Held bases it cannot use: missing, or of another type.
	unusable := map[plumbing.Hash]plumbing.Hash{
		newer[0]: plumbing.ComputeHash(plumbing.TreeObject, []byte("never stored")),
		newer[1]: older[0], // the status file's base, a tree
	}
	var unused bytes.Buffer
	if err := WriteThin(&unused, s, newer, nil, unusable); err != nil {
		t.Fatal(err)
	}
	if unused.Len() != whole.Len() {
		t.Errorf("the pack with unusable held bases is %d bytes, the whole one %d", unused.Len(), whole.Len())
	}
}

// indexPack runs git index-pack on pack in the repository dir.
func indexPack(t *testing.T, dir string, pack []byte, args ...string) {
	t.Helper()
	if out, err := tryIndexPack(dir, pack, args...); err != nil {
		t.Fatalf("git index-pack %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func tryIndexPack(dir string, pack []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"--git-dir", dir, "index-pack", "--stdin"}, args...)...)
	cmd.Stdin = bytes.NewReader(pack)
	return cmd.CombinedOutput()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkWriteVersions packs 100 versions of a directory of 10,000
// files, as a push of 100 commits each changing two of them: whole, each
// older version as a delta of the newer one, and those deltas copied from
// a store that packed them so.
func BenchmarkWriteVersions(b *testing.B) {
	s := memory.NewStorage()
	objects, bases := versions(b, s, 100, 10_000)
	// The same objects as a store holds them, packed with their deltas.
	var stored bytes.Buffer
	index := must(WriteIndexed(&stored, s, objects, bases))
	store := newPackStore(b, s, stored.Bytes(), index)
	for _, bench := range []struct {
		name  string
		from  Objects
		bases map[plumbing.Hash]plumbing.Hash
	}{{"whole", s, nil}, {"deltas", s, bases}, {"copied", store, bases}} {
		b.Run(bench.name, func(b *testing.B) {
			var pack bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				pack.Reset()
				if err := Write(&pack, bench.from, objects, bench.bases); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(pack.Len()), "pack-bytes")
		})
	}
}

// BenchmarkWriteWideTree packs the objects of a promotion commit in a
// repository of 10,000 overlays: its 340 KB directory tree is most of it.
func BenchmarkWriteWideTree(b *testing.B) {
	s := memory.NewStorage()
	objects, _ := packFixture(b, s, 10_000)
	var pack bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		pack.Reset()
		if err := Write(&pack, s, objects, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pack.Len()), "pack-bytes")
}

// claimedSize is an object whose header claims a size its content does
// not have, as a damaged object's may: below zero, or far beyond memory.
type claimedSize struct {
	*plumbing.MemoryObject
	size int64
}

func (o claimedSize) Size() int64 { return o.size }

// TestReadAllRefusesASizeItsContentDoesNotHave: the claimed size is never
// allocated, and the object is refused, not packed.
func TestReadAllRefusesASizeItsContentDoesNotHave(t *testing.T) {
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.BlobObject)
	if _, err := o.Write([]byte("kind: Kustomization\n")); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{-5, 1 << 50} {
		if _, err := readAll(claimedSize{o, size}); err == nil {
			t.Errorf("an object claiming %d bytes for %d was read", size, o.Size())
		}
	}
}

// packStore is a store whose objects are in one pack (and, read whole, in
// s): it offers the pack's entries as Stored, checked against the index's
// CRC-32, as the object store does, and counts those copied.
type packStore struct {
	storer.EncodedObjectStorer
	pack   []byte
	index  *idxfile.MemoryIndex
	next   map[uint64]uint64 // an entry's offset → the next entry's
	copied int
}

func newPackStore(t testing.TB, s storer.EncodedObjectStorer, pack []byte, index *idxfile.MemoryIndex) *packStore {
	t.Helper()
	iter := must(index.EntriesByOffset())
	defer iter.Close()
	ps := &packStore{EncodedObjectStorer: s, pack: pack, index: index, next: map[uint64]uint64{}}
	var last *idxfile.Entry
	for e, err := iter.Next(); err != io.EOF; e, err = iter.Next() {
		if err != nil {
			t.Fatal(err)
		}
		if last != nil {
			ps.next[last.Offset] = e.Offset
		}
		last = e
	}
	ps.next[last.Offset] = uint64(len(pack) - 20)
	return ps
}

func (p *packStore) StoredEntry(h plumbing.Hash) (plumbing.Hash, bool) {
	offset, err := p.index.FindOffset(h)
	if err != nil {
		return plumbing.ZeroHash, false
	}
	entry := p.pack[offset:]
	i := 0
	for entry[i]&0x80 != 0 {
		i++
	}
	switch entry[0] >> 4 & 7 {
	case 1, 2, 3, 4:
		return plumbing.ZeroHash, true
	case 7:
		return plumbing.Hash(entry[i+1 : i+21]), true
	}
	return plumbing.ZeroHash, false
}

func (p *packStore) AppendStoredEntry(b []byte, h plumbing.Hash) ([]byte, error) {
	offset, err := p.index.FindOffset(h)
	if err != nil {
		return nil, err
	}
	entry := p.pack[offset:p.next[uint64(offset)]]
	if crc, err := p.index.FindCRC32(h); err != nil || crc32.ChecksumIEEE(entry) != crc {
		return nil, fmt.Errorf("entry of %s does not match its CRC-32", h)
	}
	p.copied++
	return append(b, entry...), nil
}

// TestWriteCopiesStoredEntries: what a store holds packed, whole or as a
// delta of an object written before it, is copied as it is stored (the
// same objects in the same order make the same pack, byte for byte); a
// delta whose base the pack does not hold, or holds later, is written
// anew, so the pack still reads alone, strictly; a version whose base is
// copied is still a delta of it; a damaged entry fails the pack.
func TestWriteCopiesStoredEntries(t *testing.T) {
	s := memory.NewStorage()
	objects, bases := versions(t, s, 120, 500)
	made, files := packFixture(t, s, 300)
	objects = append(append(objects, made...), files...)
	var stored bytes.Buffer
	index := must(WriteIndexed(&stored, s, objects, bases))
	store := newPackStore(t, s, stored.Bytes(), index)

	var same bytes.Buffer
	if err := Write(&same, store, objects, bases); err != nil {
		t.Fatal(err)
	}
	if store.copied != len(objects) || !bytes.Equal(same.Bytes(), stored.Bytes()) {
		t.Errorf("copied %d of %d entries; the pack equals the stored one: %t", store.copied, len(objects), bytes.Equal(same.Bytes(), stored.Bytes()))
	}
	if report := gitReads(t, s, same.Bytes(), objects); !strings.Contains(report, "chain length = 50:") || strings.Contains(report, "chain length = 51:") {
		t.Errorf("want chains of up to 50 deltas, as stored:\n%s", report)
	}

	// The older half of the versions alone: the newest of them is stored
	// as a delta of a version the pack does not hold.
	older := objects[4*120/2:] // versions 60 to 1, then the files
	store.copied = 0
	var part bytes.Buffer
	if err := Write(&part, store, older, bases); err != nil {
		t.Fatal(err)
	}
	gitReads(t, s, part.Bytes(), older)
	if store.copied == 0 || store.copied == len(older) {
		t.Errorf("copied %d of %d entries, want some and not those whose base is missing", store.copied, len(older))
	}

	// Oldest first: no stored delta has its base before it; every
	// version is written anew and the pack still reads strictly.
	reversed := slices.Clone(objects)
	slices.Reverse(reversed)
	store.copied = 0
	var backwards bytes.Buffer
	if err := Write(&backwards, store, reversed, nil); err != nil {
		t.Fatal(err)
	}
	gitReads(t, s, backwards.Bytes(), reversed)

	// A version the store does not hold, older than all it holds: a delta
	// of the newest of them, which is copied whole.
	v := objects[0]
	o := must(s.EncodedObject(plumbing.TreeObject, v))
	tree := must(object.DecodeTree(s, o))
	tree.Entries = tree.Entries[1:]
	fresh := testutil.StoreObject(t, s, tree)
	withFresh := append(slices.Clone(objects), fresh)
	freshBases := maps.Clone(bases)
	freshBases[fresh] = v
	var mixed bytes.Buffer
	if err := Write(&mixed, store, withFresh, freshBases); err != nil {
		t.Fatal(err)
	}
	report := gitReads(t, s, mixed.Bytes(), withFresh)
	if !strings.Contains(report, fresh.String()+" tree") || !regexp.MustCompile(fresh.String()+` tree\s+\d+ \d+ \d+ 1 `+v.String()).MatchString(report) {
		t.Errorf("the version the store does not hold is not a delta of %s:\n%s", v, report)
	}

	// A damaged entry: the pack is not written.
	damaged := slices.Clone(stored.Bytes())
	offset := must(index.FindOffset(objects[3]))
	damaged[store.next[uint64(offset)]-1] ^= 0xff
	broken := newPackStore(t, s, damaged, index)
	if err := Write(io.Discard, broken, objects, bases); err == nil || !strings.Contains(err.Error(), objects[3].String()) {
		t.Errorf("a damaged stored entry: err = %v, want one naming %s", err, objects[3])
	}
}

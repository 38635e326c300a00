package gitpack

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
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
	if err := Write(&pack, s, objects); err != nil {
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
	git(pack.Bytes(), "index-pack", "--strict", "--stdin")
	for _, h := range objects {
		o, err := s.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := o.Reader()
		var want bytes.Buffer
		want.ReadFrom(r)
		if got := git(nil, "cat-file", o.Type().String(), h.String()); got != want.String() {
			t.Errorf("%s %s reads back as %d bytes, want %d", o.Type(), h, len(got), want.Len())
		}
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
		if err := Write(&pack, s, objects); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pack.Len()), "pack-bytes")
}

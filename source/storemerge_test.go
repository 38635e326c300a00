package source

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// versionsRepository makes a bare repository at gitDir of commits
// commits, each rewriting one growing file (so its versions pack as
// deltas) and adding a file of its own, packed by git into packs packs of
// consecutive objects. It returns every object's name.
func versionsRepository(t testing.TB, gitDir string, commits, packs int) []string {
	t.Helper()
	testutil.Git(t, "", nil, "init", "-q", "--bare", gitDir)
	var stream bytes.Buffer
	var grown strings.Builder
	for i := range commits {
		fmt.Fprintf(&grown, "line %d of a file every commit rewrites, long enough to make a delta worth it\n", i)
		own := fmt.Sprintf("the file of commit %d\n", i)
		fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter A <a@example.com> %d +0000\ndata 8\ncommit%2d\n", 1700000000+i, i%100)
		fmt.Fprintf(&stream, "M 100644 inline grown.txt\ndata %d\n%s\n", grown.Len(), grown.String())
		fmt.Fprintf(&stream, "M 100644 inline own/%d.txt\ndata %d\n%s\n", i, len(own), own)
	}
	testutil.GitInput(t, gitDir, stream.Bytes(), "fast-import", "--quiet")
	testutil.Git(t, gitDir, nil, "repack", "-q", "-a", "-d", "-f")
	names := strings.Fields(testutil.Git(t, gitDir, nil, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)", "--unordered"))
	if packs > 1 {
		old, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "pack-*"))
		size := (len(names) + packs - 1) / packs
		for chunk := range slices.Chunk(names, size) {
			testutil.GitInput(t, gitDir, []byte(strings.Join(chunk, "\n")+"\n"), "pack-objects", "-q", filepath.Join(gitDir, "objects", "pack", "pack"))
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	return names
}

func packNames(t testing.TB, gitDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "pack-*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(filepath.Base(f), ".pack")
	}
	return names
}

// damagePack flips a byte in the middle of the pack file at path, where
// its objects' data is.
func damagePack(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// TestMergePacksCopiesEveryObjectOnceWithItsDeltas: packs made by git,
// deltas at offsets, one pack holding another's objects again, merge into
// one pack that git itself reads whole, holding each object once, no
// larger than the packs were.
func TestMergePacksCopiesEveryObjectOnceWithItsDeltas(t *testing.T) {
	gitDir := filepath.Join(t.TempDir(), "repo.git")
	names := versionsRepository(t, gitDir, 200, 4)
	packDir := filepath.Join(gitDir, "objects", "pack")
	// Every object once more, in a pack of its own: the merge copies one.
	testutil.Git(t, gitDir, nil, "repack", "-q", "-a", "-f")
	packs := packNames(t, gitDir)
	if len(packs) != 5 {
		t.Fatalf("the repository has %d packs, want 5", len(packs))
	}
	if out := testutil.Git(t, gitDir, nil, "verify-pack", "-v", filepath.Join(packDir, packs[0]+".idx")); !strings.Contains(out, "chain length") {
		t.Fatalf("git made no deltas to copy:\n%s", out)
	}
	var before int64
	for _, p := range packs {
		before += fileSize(t, filepath.Join(packDir, p+".pack"))
	}

	merged, err := mergePacks(packDir, packs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range packs {
		for _, ext := range []string{".pack", ".idx"} {
			if err := os.Remove(filepath.Join(packDir, p+ext)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := packNames(t, gitDir); !slices.Equal(got, []string{merged}) {
		t.Fatalf("packs after the merge: %v, want only %s", got, merged)
	}
	verified := testutil.Git(t, gitDir, nil, "verify-pack", "-v", filepath.Join(packDir, merged+".idx"))
	if !strings.Contains(verified, "chain length") {
		t.Errorf("the merged pack holds no delta:\n%s", verified)
	}
	testutil.Git(t, gitDir, nil, "fsck", "--full", "--strict", "--no-dangling")
	idx, err := readIndex(filepath.Join(packDir, merged+".idx"))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := idx.Count(); int(n) != len(names) {
		t.Errorf("the merged pack holds %d objects, want %d", n, len(names))
	}
	for _, name := range names {
		if ok, _ := idx.Contains(plumbing.NewHash(name)); !ok {
			t.Fatalf("the merged pack lacks %s", name)
		}
	}
	// The doubled pack's bytes are dropped; each delta grows by at most the
	// 20 bytes of its base's name.
	if after := fileSize(t, filepath.Join(packDir, merged+".pack")); after > before {
		t.Errorf("the merged pack is %d bytes, more than the %d of the packs it merged", after, before)
	}
}

// TestMergePacksRefusesADamagedPack: a pack whose bytes do not match its
// index fails the merge, which leaves no pack and no temporary file.
func TestMergePacksRefusesADamagedPack(t *testing.T) {
	gitDir := filepath.Join(t.TempDir(), "repo.git")
	versionsRepository(t, gitDir, 50, 2)
	packDir := filepath.Join(gitDir, "objects", "pack")
	packs := packNames(t, gitDir)
	damagePack(t, filepath.Join(packDir, packs[1]+".pack"))
	_, err := mergePacks(packDir, packs)
	if err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), packs[1]) {
		t.Fatalf("merging a damaged pack: %v, want an error naming %s as damaged", err, packs[1])
	}
	entries, _ := os.ReadDir(packDir)
	if len(entries) != 4 {
		var left []string
		for _, e := range entries {
			left = append(left, e.Name())
		}
		t.Errorf("the pack directory holds %v after a failed merge, want the 2 packs and their indexes", left)
	}
}

// TestStoreMergesManyPacks: a store past its pack limit merges its packs
// at a fetch; the merged packs stay until they are looseAge old, and then
// go. Every object still reads: in the process that merged, in a new one,
// and in one that read the old packs' indexes before they went.
func TestStoreMergesManyPacks(t *testing.T) {
	open, cacheDir := storeFixture(t)
	repo := open()
	// Every compaction packs what is loose and removes the loose copies,
	// so that readers look objects up in the packs.
	repo.store.looseLimit, repo.store.looseAge, repo.store.packLimit = -1, 0, 1000
	fetchBranch(t, repo)
	var blobs []plumbing.Hash
	for i := range 5 {
		blobs = append(blobs, writeBlobs(t, repo, 5, fmt.Sprint(i))...)
		if err := repo.Compact(context.Background()); err != nil { // packs them
			t.Fatal(err)
		}
	}
	gitDir := storeGitDirs(t, cacheDir)[0]
	old := packNames(t, gitDir)
	if len(old) < 5 {
		t.Fatalf("the store has %d packs, want at least 5", len(old))
	}
	reader := open()
	readsAll(t, reader, blobs[:1]) // go-git's indexes name the old packs

	repo.store.packLimit, repo.store.looseAge = 3, time.Hour
	fetchBranch(t, repo)
	all := packNames(t, gitDir)
	if len(all) != len(old)+1 {
		t.Fatalf("after the merge the store has packs %v, want the %d old ones and one more", all, len(old))
	}
	retired := repo.store.retiredPacks(time.Now())
	for _, p := range old {
		if _, ok := retired[p]; !ok {
			t.Errorf("pack %s is not retired", p)
		}
	}
	readsAll(t, repo, blobs)
	fresh := open()
	readsAll(t, fresh, blobs) // its indexes name the old packs and the merged one
	fetchBranch(t, repo)      // a second compaction within the hour merges nothing
	if got := packNames(t, gitDir); len(got) != len(all) {
		t.Fatalf("a compaction an hour before the retired packs go changed the packs to %v", got)
	}

	repo.store.looseAge = 0
	fetchBranch(t, repo)
	left := packNames(t, gitDir)
	if len(left) != 1 || slices.Contains(old, left[0]) {
		t.Fatalf("once the retired packs are old enough the store has packs %v, want the merged one only", left)
	}
	if _, err := os.Stat(filepath.Join(gitDir, storeRetiredFile)); !os.IsNotExist(err) {
		t.Errorf("the retired list is still there once its packs went: %v", err)
	}
	readsAll(t, repo, blobs)
	readsAll(t, reader, blobs)
	findsAll(t, reader, blobs)
	readsAll(t, open(), blobs)
	testutil.Git(t, gitDir, nil, "fsck", "--no-dangling")
	// A removed pack's disk is freed once no process holds it open: each
	// closes the removed packs at its next fetch.
	fetchBranch(t, reader)
	fetchBranch(t, fresh)
	if held := openRemovedFiles(t, gitDir); len(held) > 0 {
		t.Errorf("the process still holds removed packs open: %v", held)
	}
}

// openRemovedFiles are the files below dir this process holds open that
// were removed (Linux's /proc).
func openRemovedFiles(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var held []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir) && strings.HasSuffix(target, " (deleted)") {
			held = append(held, target)
		}
	}
	return held
}

// BenchmarkStoreReadsEveryObject: a process opening a store of 200 packs
// and reading each object, against the same packs merged into one.
func BenchmarkStoreReadsEveryObject(b *testing.B) {
	many := b.TempDir()
	names := versionsRepository(b, filepath.Join(many, storeGitDir), 1000, 200)
	hashes := make([]plumbing.Hash, len(names))
	for i, n := range names {
		hashes[i] = plumbing.NewHash(n)
	}
	merged := b.TempDir()
	testutil.Git(b, "", nil, "clone", "-q", "--bare", "--no-local", filepath.Join(many, storeGitDir), filepath.Join(merged, storeGitDir))
	packDir := filepath.Join(merged, storeGitDir, "objects", "pack")
	for _, f := range must(filepath.Glob(filepath.Join(packDir, "pack-*"))) {
		if err := os.Remove(f); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range must(filepath.Glob(filepath.Join(many, storeGitDir, "objects", "pack", "pack-*"))) {
		if err := os.Link(f, filepath.Join(packDir, filepath.Base(f))); err != nil {
			b.Fatal(err)
		}
	}
	merging := packNames(b, filepath.Join(merged, storeGitDir))
	if _, err := mergePacks(packDir, merging); err != nil {
		b.Fatal(err)
	}
	for _, p := range merging {
		for _, ext := range []string{".pack", ".idx"} {
			if err := os.Remove(filepath.Join(packDir, p+ext)); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, dir := range []string{many, merged} {
		b.Run(fmt.Sprintf("packs=%d", len(packNames(b, filepath.Join(dir, storeGitDir)))), func(b *testing.B) {
			for range b.N {
				d := &diskStore{dir: dir, warnings: io.Discard, looseLimit: compactLooseLimit, looseAge: compactLooseAge, packLimit: compactPackLimit}
				if err := d.open(); err != nil {
					b.Fatal(err)
				}
				for _, h := range hashes {
					if _, err := d.storer.EncodedObject(plumbing.AnyObject, h); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkMergePacks: merging 200 packs costs a copy of their bytes.
func BenchmarkMergePacks(b *testing.B) {
	gitDir := filepath.Join(b.TempDir(), storeGitDir)
	versionsRepository(b, gitDir, 1000, 200)
	packDir := filepath.Join(gitDir, "objects", "pack")
	packs := packNames(b, gitDir)
	var size int64
	for _, p := range packs {
		size += fileSize(b, filepath.Join(packDir, p+".pack"))
	}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		merged, err := mergePacks(packDir, packs)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, ext := range []string{".pack", ".idx"} {
			if err := os.Remove(filepath.Join(packDir, merged+ext)); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
}

// TestStoreLeavesPacksAMergeFailsOn: a pack damaged where no read of the
// fetched branch goes fails the merge, which leaves every pack as it was,
// and the process does not copy them all again at each fetch.
func TestStoreLeavesPacksAMergeFailsOn(t *testing.T) {
	open, cacheDir := storeFixture(t)
	repo := open()
	repo.store.looseLimit, repo.store.looseAge, repo.store.packLimit = -1, 0, 1000
	fetchBranch(t, repo)
	for i := range 4 {
		writeBlobs(t, repo, 5, fmt.Sprint(i))
		if err := repo.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	gitDir := storeGitDirs(t, cacheDir)[0]
	packs := packNames(t, gitDir)
	// The newest pack holds only unreferenced blobs.
	newest, newestTime := "", time.Time{}
	for _, p := range packs {
		info, err := os.Stat(filepath.Join(gitDir, "objects", "pack", p+".pack"))
		if err != nil {
			t.Fatal(err)
		}
		if info.ModTime().After(newestTime) {
			newest, newestTime = p, info.ModTime()
		}
	}
	damagePack(t, filepath.Join(gitDir, "objects", "pack", newest+".pack"))

	repo.store.packLimit = 3
	fetchBranch(t, repo)
	if got := packNames(t, gitDir); !slices.Equal(got, packs) {
		t.Fatalf("a failed merge changed the packs from %v to %v", packs, got)
	}
	if repo.store.unmerged != strings.Join(packs, " ") {
		t.Errorf("the store does not remember the packs its merge failed on: %q", repo.store.unmerged)
	}
	if left, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "tmp_*")); len(left) > 0 {
		t.Errorf("a failed merge left %v", left)
	}
	if _, err := os.Stat(filepath.Join(gitDir, storeRetiredFile)); !os.IsNotExist(err) {
		t.Errorf("a failed merge retired packs: %v", err)
	}
}

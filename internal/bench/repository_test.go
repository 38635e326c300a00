package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestWriteBlobs: the blobs shape's unrelated files are written as they are
// generated, so a gigabyte of them never sits in the generating process;
// Files holds only the small ones, and the same settings give the same bytes.
func TestWriteBlobs(t *testing.T) {
	const total = 64<<20 + 5
	repo, err := Generate(Blobs, 10, []byte("key"), total)
	if err != nil {
		t.Fatal(err)
	}
	for p, b := range repo.Files {
		if strings.HasPrefix(p, "assets/") || len(b) > 1<<20 {
			t.Fatalf("Generate holds %s (%d bytes) in memory", p, len(b))
		}
	}
	dirs := []string{t.TempDir(), t.TempDir()}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := repo.Write(dirs[0]); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2*blobChunk {
		t.Errorf("writing %d bytes of blobs allocated %d bytes; want at most two chunks (%d)", total, alloc, 2*blobChunk)
	}
	if err := repo.Write(dirs[1]); err != nil {
		t.Fatal(err)
	}
	var sum int64
	entries, err := os.ReadDir(filepath.Join(dirs[0], "assets"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		a, err := os.ReadFile(filepath.Join(dirs[0], "assets", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dirs[1], "assets", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two writes", e.Name())
		}
		sum += int64(len(a))
	}
	if sum != total || len(entries) != 5 {
		t.Errorf("wrote %d bytes in %d files, want %d in 5", sum, len(entries), total)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], filepath.FromSlash(repo.Template))); err != nil {
		t.Errorf("the template was not written: %v", err)
	}
}

func TestGenerateRefuses(t *testing.T) {
	for _, tc := range []struct {
		shape  Shape
		stages int
		blobs  int64
		want   string
	}{
		{Chain, 0, 0, "at least one stage"},
		{Apps, 15, 0, "not a multiple of 10"},
		{Blobs, 10, -1, "at least 0 bytes"},
		{"ring", 10, 0, `unknown shape "ring"`},
	} {
		if _, err := Generate(tc.shape, tc.stages, nil, tc.blobs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate(%s, %d, %d): err = %v, want one saying %q", tc.shape, tc.stages, tc.blobs, err, tc.want)
		}
	}
}

// TestAppsAutoPromotesEveryStageOnItsOwn: apps-auto is apps with no
// approver anywhere, and its bump lands in the first application's last
// stage.
func TestAppsAutoPromotesEveryStageOnItsOwn(t *testing.T) {
	repo, err := Generate(AppsAuto, 20, []byte("key"), 0)
	if err != nil {
		t.Fatal(err)
	}
	configs, automatic := 0, 0
	for name, content := range repo.Files {
		if !strings.HasPrefix(name, "vectorflow/app") {
			continue
		}
		configs += strings.Count(string(content), "kind: VectorPromotionConfig")
		automatic += strings.Count(string(content), "required: false")
		if strings.Contains(string(content), "approvers:") {
			t.Errorf("%s names an approver; apps-auto has none", name)
		}
	}
	if configs != 20 || automatic != 20 {
		t.Errorf("%d configs, %d of them automatic; want 20 and 20", configs, automatic)
	}
	if repo.Overlay != "apps/app0000/overlays/s10" {
		t.Errorf("Overlay = %s, want the first application's last stage", repo.Overlay)
	}
	if _, ok := repo.Files[repo.Overlay+"/kustomization.yaml"]; !ok {
		t.Errorf("%s has no kustomization.yaml", repo.Overlay)
	}
	if !repo.Shape.Automatic() || Apps.Automatic() || Chain.Automatic() || !Auto.Automatic() {
		t.Errorf("Automatic: apps-auto %v, auto %v, apps %v, chain %v; want true, true, false, false",
			AppsAuto.Automatic(), Auto.Automatic(), Apps.Automatic(), Chain.Automatic())
	}
}

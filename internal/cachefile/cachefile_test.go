package cachefile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSweep: files unused for maxAge go, and the directories they leave
// empty; fresh files stay; a temporary file older than an hour goes; a
// second sweep within every does nothing.
func TestSweep(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	file := func(name string, age time.Duration) string {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := file("ab/abcd/old", 31*24*time.Hour)
	fresh := file("ab/abce/fresh", time.Hour)
	lonely := file("cd/cdef/old", 40*24*time.Hour)
	torn := file("ab/abce/.tmp-123", 2*time.Hour)
	Sweep(root, 30*24*time.Hour, 24*time.Hour, now)
	for _, gone := range []string{old, filepath.Dir(old), lonely, filepath.Join(root, "cd"), torn} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the sweep (err %v)", gone, err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh entry was swept: %v", err)
	}
	again := file("ef/efab/old", 31*24*time.Hour)
	Sweep(root, 30*24*time.Hour, 24*time.Hour, now.Add(time.Hour))
	if _, err := os.Stat(again); err != nil {
		t.Errorf("a second sweep within a day removed %s: %v", again, err)
	}
}

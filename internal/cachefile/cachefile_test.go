package cachefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
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

// TestWriteRead: Write makes missing directories and replaces a file
// whole; Read returns the body for the same format only, and a miss for a
// file damaged, foreign, too large, missing or a directory.
func TestWriteRead(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	file := filepath.Join(root, "ab", "cd", "entry")
	if err := Write(file, "format 1\n", []byte("first")); err != nil {
		t.Fatalf("write into missing directories: %v", err)
	}
	if err := Write(file, "format 1\n", []byte("the body")); err != nil {
		t.Fatalf("write over a file: %v", err)
	}
	if body, ok := Read(file, "format 1\n", 1<<10, now); !ok || string(body) != "the body" {
		t.Errorf("read back %q, %t; want the body of the last write", body, ok)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := append([]byte{}, data...)
	flipped[len(flipped)-1] ^= 1
	for _, tt := range []struct {
		name, file, format string
		max                int64
	}{
		{"another format", file, "format 2\n", 1 << 10},
		{"larger than max", file, "format 1\n", int64(len(data)) - 1},
		{"a byte flipped", write("flipped", flipped), "format 1\n", 1 << 10},
		{"cut short", write("short", data[:len(data)-1]), "format 1\n", 1 << 10},
		{"shorter than a checksum", write("tiny", data[:10]), "format 1\n", 1 << 10},
		{"missing", filepath.Join(root, "missing"), "format 1\n", 1 << 10},
		{"a directory", filepath.Join(root, "ab"), "format 1\n", 1 << 10},
	} {
		if body, ok := Read(tt.file, tt.format, tt.max, now); ok {
			t.Errorf("%s: read %q, want a miss", tt.name, body)
		}
	}
	if _, ok := Read(file, "format 1\n", int64(len(data)), now); !ok {
		t.Errorf("a file of exactly max bytes is a miss")
	}
}

// TestWriteFunc: a streamed body reads back like Write's, and a body that
// fails leaves the file as it was, with no temporary file behind.
func TestWriteFunc(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "new", "entry")
	body := bytes.Repeat([]byte("0123456789"), 20000) // beyond one buffer
	err := WriteFunc(file, "format 1\n", func(w io.Writer) error {
		for i := 0; i < len(body); i += 1000 {
			if _, err := w.Write(body[i : i+1000]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := Read(file, "format 1\n", 1<<20, time.Now()); !ok || !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes (ok %t), want the %d written", len(got), ok, len(body))
	}
	broken := errors.New("broken")
	if err := WriteFunc(file, "format 1\n", func(w io.Writer) error {
		_, _ = w.Write([]byte("partial"))
		return broken
	}); !errors.Is(err, broken) {
		t.Errorf("a failing body: %v, want its error", err)
	}
	if got, ok := Read(file, "format 1\n", 1<<20, time.Now()); !ok || !bytes.Equal(got, body) {
		t.Errorf("after a failed write the file changed (%d bytes, ok %t)", len(got), ok)
	}
	if entries, _ := os.ReadDir(filepath.Dir(file)); len(entries) != 1 {
		t.Errorf("files left: %v, want the entry only", entries)
	}
}

// TestWriteBesideSweep: a sweep that finds a directory a write has just
// made, still empty, removes it; the write makes it again instead of
// failing. Writes into fresh directories race the first sweep of a cache
// (when a process stores many entries at once, as a config directory's
// decodes are stored from every core).
func TestWriteBesideSweep(t *testing.T) {
	for round := range 50 {
		root := t.TempDir()
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				file := filepath.Join(root, fmt.Sprintf("%02x", i), "entry")
				errs <- Write(file, "format 1\n", []byte("body"))
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			Sweep(root, 30*24*time.Hour, 24*time.Hour, time.Now())
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: a write beside a sweep failed: %v", round, err)
			}
		}
	}
}

// BenchmarkRead reads back an entry the size of a 10,000-stage state
// branch's codec memory (17 MB), checksum included: what a restarted run
// pays before it decodes anything.
func BenchmarkRead(b *testing.B) {
	file := filepath.Join(b.TempDir(), "entry")
	body := bytes.Repeat([]byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Stage\n"), 17<<20/48)
	if err := Write(file, "format 1\n", body); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, ok := Read(file, "format 1\n", 1<<30, now); !ok {
			b.Fatal("miss")
		}
	}
}

// TestFields: fields read back as written, empty ones included, sharing
// the container's bytes; a container cut short or with a length past its
// end reads as malformed, never as a shorter field.
func TestFields(t *testing.T) {
	want := [][]byte{[]byte("name"), {}, bytes.Repeat([]byte("x"), 300), []byte("last")}
	b := AppendFields(nil, want...)
	size := 0
	for _, w := range want {
		size += FieldsSize(len(w))
	}
	if len(b) > size {
		t.Errorf("AppendFields wrote %d bytes, more than FieldsSize's %d", len(b), size)
	}
	f := Fields(b)
	for i, w := range want {
		got, ok := f.Next()
		if !ok || !bytes.Equal(got, w) {
			t.Fatalf("field %d: %q, %t; want %q", i, got, ok, w)
		}
		if cap(got) != len(got) {
			t.Errorf("field %d: capacity %d beyond its length %d: an append would write over the next field", i, cap(got), len(got))
		}
	}
	if got, ok := f.Next(); ok || len(f) != 0 {
		t.Errorf("past the last field: %q, %t, %d bytes left", got, ok, len(f))
	}
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"cut short", b[:len(b)-1]},
		{"a length past the end", []byte{0x7f, 'a'}},
		{"a length that never ends", []byte{0x80, 0x80}},
	} {
		f := Fields(tt.data)
		ok := true
		for ok && len(f) > 0 {
			_, ok = f.Next()
		}
		if ok {
			t.Errorf("%s: read to the end, want a malformed field", tt.name)
		}
	}
}

// Package cachefile reads and writes the files of vectorflow's on-disk
// caches: each written whole or not at all (a temporary file renamed), and
// checked by a checksum when read, so a crash, a concurrent writer or a
// damaged disk costs a miss, never a wrong answer.
//
// The checksum is a 64-bit xxHash: it finds damage, which is all it is
// for. A cryptographic hash would protect nothing more, since whoever can
// write the cache directory can compute any checksum, and SHA-256 cost a
// restarted run at 10,000 stages 50 ms of CPU for its 50 MB of entries.
package cachefile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cespare/xxhash/v2"
)

// checksumSize is the length of the checksum every file starts with.
const checksumSize = 8

// TouchAfter bounds the writes reads make to keep a used file fresh (see
// Read).
const TouchAfter = time.Hour

// Read returns the body of a file Write wrote with the same format line;
// ok is false for a missing, damaged, foreign or larger than max file. A
// file read is touched (at most once per TouchAfter), so sweeps that drop
// unused files by age keep it.
func Read(file, format string, max int64, now time.Time) (body []byte, ok bool) {
	f, err := os.Open(file)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	// Files are replaced whole, never written in place: the size read now
	// is the file's, so one read fills it (io.ReadAll would take several).
	info, err := f.Stat()
	if err != nil || info.Size() > max || info.Size() < checksumSize {
		return nil, false
	}
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, false
	}
	if xxhash.Sum64(data[checksumSize:]) != binary.LittleEndian.Uint64(data) {
		return nil, false
	}
	body, ok = bytes.CutPrefix(data[checksumSize:], []byte(format))
	if !ok {
		return nil, false
	}
	if now.Sub(info.ModTime()) > TouchAfter {
		_ = os.Chtimes(file, now, now)
	}
	return body, true
}

// Write stores body under file, with its format line and checksum,
// creating the directory. Errors are for callers that care; a cache may
// ignore them.
func Write(file, format string, body []byte) error {
	data := make([]byte, checksumSize, checksumSize+len(format)+len(body))
	data = append(append(data, format...), body...)
	binary.LittleEndian.PutUint64(data, xxhash.Sum64(data[checksumSize:]))
	return writeTemp(file, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// WriteFunc is Write with the body written by body as it goes, for a
// body not worth holding whole in memory; an error from body leaves file
// as it was.
func WriteFunc(file, format string, body func(w io.Writer) error) error {
	return writeTemp(file, func(f *os.File) error { return writeChecked(f, format, body) })
}

// writeTemp writes a temporary file beside file with write and renames it
// to file; on any error file is left as it was.
func writeTemp(file string, write func(f *os.File) error) error {
	// The directory is made only when missing: most writes go to one that
	// exists, and a check first would cost each a system call. A sweep may
	// remove the directory made, while it is still empty, before the
	// temporary file is in it; it is then made again (a sweep visits each
	// directory once).
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	for tries := 0; errors.Is(err, fs.ErrNotExist) && tries < 3; tries++ {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		tmp, err = os.CreateTemp(dir, ".tmp-*")
	}
	if err != nil {
		return err
	}
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// writeChecked writes the checksum's place, the format line and the body,
// then the checksum of what follows it into its place.
func writeChecked(f *os.File, format string, body func(w io.Writer) error) error {
	sum := xxhash.New()
	buf := bufio.NewWriterSize(f, 64<<10)
	if _, err := buf.Write(make([]byte, checksumSize)); err != nil {
		return err
	}
	w := io.MultiWriter(buf, sum)
	if _, err := io.WriteString(w, format); err != nil {
		return err
	}
	if err := body(w); err != nil {
		return err
	}
	if err := buf.Flush(); err != nil {
		return err
	}
	_, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, sum.Sum64()), 0)
	return err
}

// Sweep removes, at most once per every (a stamp file in root says when it
// last ran, for every process sharing root), the files under root unused
// for maxAge (Read keeps used ones fresh), temporary files of writes that
// never finished, and the directories that leaves empty. Nothing it meets
// is an error: a file another process is writing is skipped or rewritten.
func Sweep(root string, maxAge, every time.Duration, now time.Time) {
	stamp := filepath.Join(root, ".swept")
	if info, err := os.Stat(stamp); err == nil && now.Sub(info.ModTime()) < every {
		return
	}
	if err := os.WriteFile(stamp, nil, 0o600); err != nil {
		return
	}
	_ = os.Chtimes(stamp, now, now)
	sweepDir(root, stamp, maxAge, now)
}

// sweepDir sweeps dir and reports whether it kept anything.
func sweepDir(dir, stamp string, maxAge time.Duration, now time.Time) bool {
	entries, _ := os.ReadDir(dir)
	kept := false
	for _, e := range entries {
		name := filepath.Join(dir, e.Name())
		if e.IsDir() {
			if sweepDir(name, stamp, maxAge, now) {
				kept = true
			} else {
				_ = os.Remove(name) // fails, harmlessly, if a write just started
			}
			continue
		}
		info, err := e.Info()
		if err != nil || name == stamp {
			kept = true
			continue
		}
		age := maxAge
		if e.Name()[0] == '.' {
			age = time.Hour // a write that never finished
		}
		if now.Sub(info.ModTime()) > age {
			_ = os.Remove(name)
			continue
		}
		kept = true
	}
	return kept
}

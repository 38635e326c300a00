package reconcilers

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	"github.com/vectorflow-dev/vectorflow/internal/cachefile"
	"github.com/vectorflow-dev/vectorflow/internal/parallel"
)

// A Codec's memory, kept between processes by the shell: a restarted
// controller decodes only the state files that changed since. Export and
// Import do no I/O; the bytes are the caller's to store.

// memoEntry is one remembered file: its bytes and its object as JSON.
type memoEntry struct {
	Name   string
	Data   []byte
	Object []byte
}

// Changed reports whether a file was decoded or encoded since the last
// Export: only then has Export anything new to say.
func (c *Codec) Changed() bool { return c.changed }

// Export is what the codec remembers, for Import in another process: each
// file's bytes and the object they decode to. Files Encode wrote are
// decoded here, once, so what is exported is always a decode. An object
// whose JSON does not give it back exactly, read as Import reads it
// (cachefile.Unmarshal), is left out (it is decoded again there).
func (c *Codec) Export() ([]byte, error) {
	c.changed = false
	names := slices.Sorted(maps.Keys(c.known))
	entries := make([]memoEntry, len(names))
	var checks []int
	for i, name := range names {
		// An entry exported (or imported) before with these very bytes was
		// checked then: a pass that changed one file checks one object.
		if prev, ok := c.exported[name]; ok && bytes.Equal(prev.Data, c.known[name].data) {
			entries[i] = prev
			continue
		}
		checks = append(checks, i)
	}
	c.exportChecks += len(checks)
	// Each check decodes, encodes and compares one file of its own, so
	// they run on every core: a run --once that promoted 10,000 stages
	// checks some 30,000 files as it ends.
	left := make([]bool, len(names))
	parallel.Each(len(checks), func(k int) {
		i := checks[k]
		entries[i], left[i] = checkedEntry(names[i], c.known[names[i]])
	})
	exported := make(map[string]memoEntry, len(names))
	leftOut := map[string][]byte{}
	kept := entries[:0]
	for i, name := range names {
		if left[i] {
			leftOut[name] = c.known[name].data
			continue
		}
		exported[name] = entries[i]
		kept = append(kept, entries[i])
	}
	c.exported, c.leftOut = exported, leftOut
	return encodeMemo(kept), nil
}

// checkedEntry is file name's entry in the memory; leftOut when its object
// does not come back exactly from its JSON.
func checkedEntry(name string, e codecEntry) (entry memoEntry, leftOut bool) {
	if !e.decoded {
		decoded, err := decodeFile(name, e.data)
		if err != nil || decoded == nil {
			return memoEntry{}, true
		}
		e = codecEntry{data: e.data, obj: decoded, decoded: true}
	}
	obj, err := json.Marshal(e.obj.value())
	if err != nil {
		return memoEntry{}, true
	}
	back := newRuntimeObject(name)
	if back == nil || cachefile.Unmarshal(obj, back.value()) != nil || !reflect.DeepEqual(back, e.obj) {
		return memoEntry{}, true
	}
	return memoEntry{Name: name, Data: e.data, Object: obj}, false
}

// encodeMemo writes the entries one after the other, each field a uvarint
// length and its bytes (cachefile.AppendFields), into one buffer sized
// first; decodeMemo reads them without copying. A 10,000-stage state
// branch's memory is 30 MB, which gob took half a second to read back.
func encodeMemo(entries []memoEntry) []byte {
	size := 0
	for _, e := range entries {
		size += cachefile.FieldsSize(len(e.Name), len(e.Data), len(e.Object))
	}
	b := make([]byte, 0, size)
	for _, e := range entries {
		b = cachefile.AppendFields(b, []byte(e.Name), e.Data, e.Object)
	}
	return b
}

// decodeMemo reads encodeMemo's entries; their Data and Object share
// data's bytes. A memory cut short or otherwise malformed reads as none.
func decodeMemo(data []byte) ([]memoEntry, bool) {
	var entries []memoEntry
	fields := cachefile.Fields(data)
	for len(fields) > 0 {
		name, ok1 := fields.Next()
		file, ok2 := fields.Next()
		obj, ok3 := fields.Next()
		if !ok1 || !ok2 || !ok3 {
			return nil, false
		}
		entries = append(entries, memoEntry{Name: string(name), Data: file, Object: obj})
	}
	return entries, true
}

// Stale counts the files the last Export (or Import) does not answer as
// they are now (files added or changed since, and files gone) among the
// files the codec knows. A restart decodes the stale ones itself, so a few
// of them cost less than exporting a large state again. A file Export left
// out, as not giving its object back, counts only once its bytes change.
func (c *Codec) Stale() (stale, files int) {
	for name, e := range c.known {
		if prev, ok := c.exported[name]; ok && bytes.Equal(prev.Data, e.data) {
			continue
		}
		if data, ok := c.leftOut[name]; ok && bytes.Equal(data, e.data) {
			continue
		}
		stale++
	}
	for name := range c.exported {
		if _, ok := c.known[name]; !ok {
			stale++
		}
	}
	return stale, len(c.known)
}

// Import adds what another codec exported. A file is still decoded unless
// its bytes are exactly those remembered, so a stale memory costs only
// time; data that does not decode is ignored.
func (c *Codec) Import(data []byte) {
	entries, ok := decodeMemo(data)
	if !ok {
		return
	}
	// Sized once: a restarted process imports thousands of entries.
	if len(c.known) == 0 {
		c.known = make(map[string]codecEntry, len(entries))
	}
	if c.exported == nil {
		c.exported = make(map[string]memoEntry, len(entries))
	}
	for _, e := range entries {
		if _, ok := c.known[e.Name]; ok {
			continue
		}
		obj := newRuntimeObject(e.Name)
		if obj == nil || cachefile.Unmarshal(e.Object, obj.value()) != nil {
			continue
		}
		c.known[e.Name] = codecEntry{data: e.Data, obj: obj, decoded: true}
		c.exported[e.Name] = e
	}
}

// Files are the state files the codec knows, by path: what it decoded or
// encoded, or imported.
func (c *Codec) Files() map[string][]byte {
	files := make(map[string][]byte, len(c.known))
	for name, e := range c.known {
		files[name] = e.data
	}
	return files
}

package gitwriter

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/gitpack"
)

// storedMemory is a memory store that says it packed every object whole.
type storedMemory struct{ *memory.Storage }

func (storedMemory) StoredEntry(plumbing.Hash) (plumbing.Hash, bool) { return plumbing.ZeroHash, true }
func (storedMemory) AppendStoredEntry(b []byte, _ plumbing.Hash) ([]byte, error) {
	return append(b, "entry"...), nil
}

// TestSharedStorageOffersStoredEntries: a push through a shared store
// copies the entries that store's packs hold (gitpack.Stored); a store
// without packs of its own offers none.
func TestSharedStorageOffersStoredEntries(t *testing.T) {
	h := plumbing.NewHash("8ab686eafeb1f44702738c8b0f24f2567c36da6d")
	var s gitpack.Objects = sharedStorage{EncodedObjectStorer: storedMemory{memory.NewStorage()}}
	stored, ok := s.(gitpack.Stored)
	if !ok {
		t.Fatal("a shared store is not gitpack.Stored")
	}
	if _, ok := stored.StoredEntry(h); !ok {
		t.Error("the shared store's entry is not offered")
	}
	if b, err := stored.AppendStoredEntry(nil, h); err != nil || string(b) != "entry" {
		t.Errorf("AppendStoredEntry = %q, %v; want the shared store's entry", b, err)
	}
	plain := sharedStorage{EncodedObjectStorer: memory.NewStorage()}
	if _, ok := plain.StoredEntry(h); ok {
		t.Error("a memory store offers a stored entry")
	}
	if _, err := plain.AppendStoredEntry(nil, h); err == nil {
		t.Error("a memory store appends a stored entry")
	}
}

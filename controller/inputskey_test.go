package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
)

func inputsFixture(stages int) (*source.Snapshot, registryResolution) {
	snap := &source.Snapshot{Commit: "c0ffee", StageIndex: map[string]source.StageRef{}}
	for i := range stages {
		key := source.StageKey("apps", fmt.Sprintf("app%05d-dev", i))
		snap.StageIndex[key] = source.StageRef{OverlayHash: fmt.Sprintf("%040x", i), Vector: overlays.StageVector{Vector: fmt.Sprintf("app%05d:1.0.%d", i, i)}}
	}
	reg := registryResolution{
		resolved: map[string]map[string]string{"app": {"api": "1.2.0@sha256:aa", "worker": "1.2.0@sha256:bb"}},
		problems: map[string]string{"web": "registry unreachable; kept 1.1.0"},
	}
	return snap, reg
}

// TestInputsKeyIsTheHashOfItsFields: an earlier process's settled pass is
// compared with this key, so its bytes are the documented layout (each
// field ended by a NUL), whatever writes them.
func TestInputsKeyIsTheHashOfItsFields(t *testing.T) {
	snap, reg := inputsFixture(2)
	tip := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	h := sha256.New()
	h.Write([]byte("c0ffee\x000123456789abcdef0123456789abcdef01234567\x00"))
	for _, key := range snap.ResolvedStageKeys() {
		ref := snap.StageIndex[key]
		h.Write([]byte(key + "\x00" + ref.OverlayHash + "\x00" + ref.Vector.Vector + "\x00"))
	}
	h.Write([]byte("app\x00api\x001.2.0@sha256:aa\x00app\x00worker\x001.2.0@sha256:bb\x00"))
	h.Write([]byte("web\x00registry unreachable; kept 1.1.0\x00"))
	if got, want := inputsKey(snap, tip, reg), hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("inputsKey = %s, want %s", got, want)
	}
}

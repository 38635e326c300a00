package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"time"

	"github.com/vectorflow-dev/vectorflow/internal/buildid"
	"github.com/vectorflow-dev/vectorflow/internal/cachefile"
)

// The state codec's memory persists in the cache directory, so a restarted
// controller decodes only the state files that changed since (the codec
// takes a remembered object only for a file of exactly the remembered
// bytes). It is keyed by the build, the repository and the state branch.
const (
	stateMemoFormat = "vectorflow state codec 1\n"
	stateMemoMax    = 1 << 30
	// stateMemoEvery bounds how often a running controller rewrites it:
	// between writes, a restart decodes the few files that changed.
	stateMemoEvery = time.Minute
)

type stateMemo struct {
	file   string // "" for none
	loaded bool
	saved  time.Time
}

func newStateMemo(cacheDir, url, stateBranch string) stateMemo {
	if cacheDir == "" {
		return stateMemo{}
	}
	sum := sha256.Sum256([]byte(buildid.String() + "\x00" + url + "\x00" + stateBranch))
	return stateMemo{file: filepath.Join(cacheDir, "configs", "state-"+hex.EncodeToString(sum[:]))}
}

// importStateMemo gives the codec what an earlier process remembered,
// once, before its first decode.
func (c *Controller) importStateMemo() {
	m := &c.stateMemo
	if m.file == "" || m.loaded {
		return
	}
	m.loaded = true
	if body, ok := cachefile.Read(m.file, stateMemoFormat, stateMemoMax, c.opts.Clock()); ok {
		c.codec.Import(body)
	}
}

// exportStateMemo writes the codec's memory when it learnt something new,
// at most once per stateMemoEvery after the first unless now is set (the
// end of run --once).
func (c *Controller) exportStateMemo(now bool) {
	m := &c.stateMemo
	at := c.opts.Clock()
	if m.file == "" || !c.codec.Changed() || !now && !m.saved.IsZero() && at.Sub(m.saved) < stateMemoEvery {
		return
	}
	body, err := c.codec.Export()
	if err != nil {
		return
	}
	if cachefile.Write(m.file, stateMemoFormat, body) == nil {
		m.saved = at
	}
}

package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// KustomizeBuild runs the real kustomize CLI (the code behind
// `kubectl kustomize`, built by hack/tools.sh at the version matching our
// render library) on dir and returns its output.
func KustomizeBuild(t testing.TB, dir string) []byte {
	t.Helper()
	cmd := exec.Command(KustomizeBinary(t), "build", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kustomize build %s: %v: %s", dir, err, stderr.String())
	}
	return stdout.Bytes()
}

// KustomizeBinary finds the kustomize CLI: $VECTORFLOW_KUSTOMIZE, the tools
// cache that hack/tools.sh fills, or PATH.
func KustomizeBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("VECTORFLOW_KUSTOMIZE"); p != "" {
		return p
	}
	cache := os.Getenv("VECTORFLOW_TOOLS")
	if cache == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(dir, "vectorflow", "tools")
		}
	}
	if p := filepath.Join(cache, "bin", "kustomize"); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("kustomize"); err == nil {
		return p
	}
	t.Fatalf("the kustomize CLI is required: run hack/tools.sh (make test does)")
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Package kubetest starts a real Kubernetes control plane for tests: the
// kube-apiserver and etcd that hack/envtest.sh builds, run by
// controller-runtime's envtest, with vectorflow's CRDs installed.
package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Kubeconfig is a kubeconfig file for Config, for processes.
	Kubeconfig string
	env        *envtest.Environment
}

// Options add to what Start installs.
type Options struct {
	// CRDPaths are more CRD files or directories to install (Flux's and
	// Argo CD's, from testdata); vectorflow's own are always installed.
	CRDPaths []string
}

// Start starts kube-apiserver and etcd and installs vectorflow's CRDs
// (config/crd/bases); they stop when the test ends. Without the binaries it
// skips the test, saying how to build them, except on CI (CI=true), where
// a missing control plane fails the test.
func Start(t testing.TB, o Options) *Env {
	t.Helper()
	assets, err := Assets()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: the Kubernetes tests must run)", err)
		}
		t.Skip(err)
	}
	root := RepoRoot(t)
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     append([]string{filepath.Join(root, "config", "crd", "bases")}, o.CRDPaths...),
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd from %s: %v", assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the control plane: %v", err)
		}
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return &Env{Config: cfg, Kubeconfig: kubeconfig, env: env}
}

// Assets is the directory holding kube-apiserver and etcd: the
// KUBEBUILDER_ASSETS environment variable, else where hack/envtest.sh
// caches the versions it pins.
func Assets() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		var err error
		if dir, err = cacheDir(); err != nil {
			return "", err
		}
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("no %s in %s: build the control plane with hack/envtest.sh (or make tools), or set KUBEBUILDER_ASSETS", bin, dir)
		}
	}
	return dir, nil
}

// cacheDir is hack/envtest.sh's cache directory, from the versions the
// script pins, so the two cannot disagree.
func cacheDir() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "hack", "envtest.sh")
	b, err := os.ReadFile(script)
	if err != nil {
		return "", fmt.Errorf("find the envtest binaries: %w", err)
	}
	version := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S+)`).FindSubmatch(b)
		if m == nil {
			return ""
		}
		return string(m[1])
	}
	k8s, etcd := version("KUBERNETES_VERSION"), version("ETCD_VERSION")
	if k8s == "" || etcd == "" {
		return "", fmt.Errorf("%s pins no KUBERNETES_VERSION or ETCD_VERSION", script)
	}
	cache := os.Getenv("VECTORFLOW_TOOLS")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("find the envtest binaries: %w", err)
			}
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "vectorflow", "tools")
	}
	return filepath.Join(cache, "envtest", k8s+"-etcd-"+etcd), nil
}

// RepoRoot is the root of the vectorflow module.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

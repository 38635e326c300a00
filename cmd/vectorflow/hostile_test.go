package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// billionLaughs is the classic alias bomb, as a ConfigMap: nine levels of
// nine aliases, 387 million nodes expanded from under 1 KB of text.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  l0: &l0 [lol]\n")
	for i := 1; i <= 9; i++ {
		refs := make([]string, 9)
		for j := range refs {
			refs[j] = fmt.Sprintf("*l%d", i-1)
		}
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.Join(refs, ", "))
	}
	return b.String()
}

func wideConfigMap(name string, keys int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n", name)
	for i := 0; i < keys; i++ {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	return b.String()
}

// TestValidateRefusesHostileYAML: an alias bomb or a 40,000-key mapping
// reached through vectorflow/kustomization.yaml, or a file over
// --max-file-size, is one clear problem at that file. On main the bomb took
// 19 GB in 40 s and the mapping 37 s; the bound makes each cost what its
// text costs, which the allocation check stands guard for.
func TestValidateRefusesHostileYAML(t *testing.T) {
	isolateCredentials(t)
	tests := []struct {
		name, file, content string
		args                []string
		want                string
	}{
		{name: "alias bomb", file: "vectorflow/bomb.yaml", content: billionLaughs(), want: "vectorflow/bomb.yaml: document 1: YAML aliases expand to more than 10000 extra nodes"},
		{name: "40,000 keys", file: "vectorflow/wide.yaml", content: wideConfigMap("wide", 40000), want: "vectorflow/wide.yaml: document 1: a mapping at line 6 has 40000 keys, more than the limit of at most 5000 keys"},
		{name: "file over --max-file-size", file: "vectorflow/wide.yaml", content: wideConfigMap("wide", 1000), args: []string{"--max-file-size", "4Ki"},
			want: fmt.Sprintf("vectorflow/wide.yaml: file is %d bytes, more than the limit of 4096 bytes (raise it with --max-file-size)", len(wideConfigMap("wide", 1000)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testutil.CopyDir(t, goodFixture)
			writeTestFile(t, dir, "vectorflow/kustomization.yaml",
				"resources: [landscapes.yaml, stages.yaml, templates.yaml, configs.yaml, "+filepath.Base(tt.file)+"]\n")
			writeTestFile(t, dir, tt.file, tt.content)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out, err := runValidate(t, append([]string{dir}, tt.args...)...)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(out, tt.want) {
				t.Errorf("validate: %v, want a problem %q in:\n%s", err, tt.want, out)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 512<<20 {
				t.Errorf("validate allocated %d MiB; the bound should keep it far below", alloc>>20)
			}
		})
	}
}

// slowConfig is a config repository, committed, whose config directory
// and every stage overlay compose files that stay within the limits (16
// mappings of 5000 keys is the most mapping work one build may do) but take
// kustomize seconds each: what a process must be stoppable during.
func slowConfig(t *testing.T) string {
	t.Helper()
	dir := testutil.CopyDir(t, goodFixture)
	slowResources := func(subdir string) []string {
		var names []string
		for i := 0; i < 15; i++ {
			name := fmt.Sprintf("slow-%d.yaml", i)
			writeTestFile(t, dir, subdir+"/"+name, wideConfigMap(fmt.Sprintf("slow-%d", i), 5000))
			names = append(names, name)
		}
		return names
	}
	resources := append([]string{"landscapes.yaml", "stages.yaml", "templates.yaml", "configs.yaml"}, slowResources("vectorflow")...)
	writeTestFile(t, dir, "vectorflow/kustomization.yaml", "resources: ["+strings.Join(resources, ", ")+"]\n")
	for _, overlay := range []string{"apps/overlays/dev", "apps/overlays/test", "environments/prod"} {
		file := filepath.Join(dir, filepath.FromSlash(overlay), "kustomization.yaml")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		extra := "resources:\n  - " + strings.Join(slowResources(overlay), "\n  - ") + "\n"
		writeTestFile(t, dir, overlay+"/kustomization.yaml", strings.Replace(string(data), "resources:\n", extra, 1))
	}
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	testutil.Git(t, dir, nil, "add", "-A")
	testutil.Git(t, dir, nil, "commit", "-q", "-m", "slow config")
	return dir
}

// TestProcessStopsOnSIGTERMWhileParsing: validate and run --once, busy in
// long kustomize builds, exit within seconds of SIGTERM. On main, run
// caught the signal and kept parsing to the end (14.5 s on a fixture of 80
// such files); validate was killed by the signal. run reads three such
// repositories, one after the other, so it is still busy when the signal
// comes.
func TestProcessStopsOnSIGTERMWhileParsing(t *testing.T) {
	// Built before isolateCredentials moves HOME, and with it the module
	// cache the build would otherwise fill from scratch.
	bin := buildVectorflow(t)
	isolateCredentials(t)
	testutil.RequireGit(t)
	dir := slowConfig(t)
	key := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	keyFile := filepath.Join(t.TempDir(), "controller.asc")
	if err := os.WriteFile(keyFile, key.PrivateArmored, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"validate":   {"validate", dir},
		"run --once": {"run", "--once", "--repo", dir, "--repo", slowConfig(t), "--repo", slowConfig(t), "--signing-key", keyFile, "--log-encoding", "json"},
	} {
		t.Run(name, func(t *testing.T) {
			p := startProcess(t, bin, args...)
			// Long enough to be inside the build, far shorter than it.
			time.Sleep(2 * time.Second)
			select {
			case err := <-p.done:
				t.Fatalf("vectorflow %s finished before the signal (%v): the fixture is not slow enough\n%s", name, err, p.logs())
			default:
			}
			sent := time.Now()
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-p.done:
				var exit *exec.ExitError
				if err == nil && name == "validate" {
					t.Errorf("vectorflow %s exited 0 after SIGTERM mid-check; a check cut short is not a success", name)
				} else if errors.As(err, &exit) && !exit.Exited() {
					t.Errorf("vectorflow %s was killed by the signal instead of stopping: %v", name, err)
				}
				t.Logf("exited %s after SIGTERM: %v", time.Since(sent).Round(time.Millisecond), err)
			case <-time.After(5 * time.Second):
				t.Fatalf("vectorflow %s did not exit within 5s of SIGTERM\n%s", name, p.logs())
			}
		})
	}
}

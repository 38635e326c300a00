package render

import (
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

func TestTreesAreFileSystems(t *testing.T) {
	trees := map[string]repofs.Tree{"repofs.DirTree": repofs.DirTree(fixtureRepo), "repofs.GitTree": commitDir(t, fixtureRepo)}
	for name, tree := range trees {
		t.Run(name, func(t *testing.T) {
			if err := fstest.TestFS(tree, "apps/base/kustomization.yaml", "apps/overlays/staging/kustomization.yml", "apps/overlays/dev/settings.properties"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestTreeHashesAgree: a folder hashes like the commit made from it, so
// both share cache entries, and equal hashes mean equal content.
func TestTreeHashesAgree(t *testing.T) {
	dir, trees := bothTrees(t, map[string]file{
		"a/x.yaml":      {content: "x: 1\n"},
		"a/b/y.yaml":    {content: "y: 2\n"},
		"a/b-c/z.yaml":  {content: "z: 3\n"}, // git sorts "b-c" before "b/"
		"a/link":        {link: "b/y.yaml"},
		"copy/x.yaml":   {content: "x: 1\n"},
		"copy/empty/.d": {content: ""},
	})
	_ = dir
	for _, name := range []string{".", "a", "a/b", "a/x.yaml", "a/link", "copy"} {
		d, err := trees["repofs.DirTree"].Hash(name)
		if err != nil {
			t.Fatal(err)
		}
		g, err := trees["repofs.GitTree"].Hash(name)
		if err != nil {
			t.Fatal(err)
		}
		if d != g {
			t.Errorf("Hash(%q): repofs.DirTree %s, repofs.GitTree %s", name, d, g)
		}
	}
	for treeName, tree := range trees {
		x, _ := tree.Hash("a/x.yaml")
		cx, _ := tree.Hash("copy/x.yaml")
		y, _ := tree.Hash("a/b/y.yaml")
		if x != cx || x == y {
			t.Errorf("%s: equal content must hash equal and different content differently: %s %s %s", treeName, x, cx, y)
		}
	}
}

func TestTreeLinks(t *testing.T) {
	_, trees := bothTrees(t, map[string]file{
		"base/cm.yaml":  {content: "kind: ConfigMap\n"},
		"dev/cm.yaml":   {link: "../base/cm.yaml"},
		"dev/base":      {link: "../base"},
		"dev/loop":      {link: "loop"},
		"dev/abs":       {link: "/etc/hostname"},
		"dev/up":        {link: "../../etc/hostname"},
		"dev/via-up":    {link: "../dev/up"},
		"dev/dangling":  {link: "nothing-here"},
		"dev/inner/up2": {link: "../../../x"},
	})
	tests := []struct {
		name     string
		wantData string
		wantErr  error
	}{
		{name: "dev/cm.yaml", wantData: "kind: ConfigMap\n"},
		{name: "dev/base/cm.yaml", wantData: "kind: ConfigMap\n"},
		{name: "base/missing", wantErr: fs.ErrNotExist},
		{name: "dev/dangling", wantErr: fs.ErrNotExist},
		{name: "base/cm.yaml/below-a-file", wantErr: fs.ErrNotExist},
		{name: "dev/abs", wantErr: repofs.ErrSymlinkEscape},
		{name: "dev/up", wantErr: repofs.ErrSymlinkEscape},
		{name: "dev/via-up", wantErr: repofs.ErrSymlinkEscape},
		{name: "dev/inner/up2", wantErr: repofs.ErrSymlinkEscape},
		{name: "dev/loop"}, // any error: too many links
		{name: "../outside", wantErr: fs.ErrInvalid},
		{name: "/etc/hostname", wantErr: fs.ErrInvalid},
	}
	for treeName, tree := range trees {
		for _, tt := range tests {
			data, err := tree.ReadFile(tt.name)
			switch {
			case tt.wantData != "":
				if err != nil || string(data) != tt.wantData {
					t.Errorf("%s: ReadFile(%q) = %q, %v; want %q", treeName, tt.name, data, err, tt.wantData)
				}
			case tt.wantErr == nil:
				if err == nil {
					t.Errorf("%s: ReadFile(%q) succeeded, want an error", treeName, tt.name)
				}
			case !errors.Is(err, tt.wantErr):
				t.Errorf("%s: ReadFile(%q) = %v, want %v", treeName, tt.name, err, tt.wantErr)
			}
			for op, call := range map[string]func() error{
				"Stat": func() error { _, err := tree.Stat(tt.name); return err },
				"Hash": func() error { _, err := tree.Hash(tt.name); return err },
				"Open": func() error { _, err := tree.Open(tt.name); return err },
			} {
				if err := call(); tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("%s: %s(%q) = %v, want %v", treeName, op, tt.name, err, tt.wantErr)
				}
			}
		}
		var esc *repofs.EscapeError
		_, err := tree.ReadFile("dev/up")
		if !errors.As(err, &esc) {
			t.Fatalf("%s: %v is not an *repofs.EscapeError", treeName, err)
		}
		if diff := cmp.Diff(repofs.EscapeError{Ref: "dev/up", Target: "../../etc/hostname", Kind: repofs.ErrSymlinkEscape}, *esc,
			cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", treeName, diff)
		}
	}
}

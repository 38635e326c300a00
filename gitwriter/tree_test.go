package gitwriter

import (
	"errors"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"
)

func TestEditTree(t *testing.T) {
	base := map[string][]byte{
		"README.md":                             []byte("readme\n"),
		"apps/overlays/dev/kustomization.yaml":  []byte("dev\n"),
		"apps/overlays/prod/kustomization.yaml": []byte("prod\n"),
		"state/vectors/a.yaml":                  []byte("a\n"),
	}
	appendLine := func(p, line string) FileEdit {
		return FileEdit{Path: p, Edit: func(old []byte, exists bool) ([]byte, bool, error) {
			if !exists {
				return nil, false, errors.New("file does not exist")
			}
			return append(append([]byte{}, old...), line...), false, nil
		}}
	}
	tests := []struct {
		name    string
		edits   []FileEdit
		want    map[string][]byte
		same    bool
		wantErr string
	}{{
		name:  "edit a nested file, siblings untouched",
		edits: []FileEdit{appendLine("apps/overlays/dev/kustomization.yaml", "x\n")},
		want: map[string][]byte{"README.md": []byte("readme\n"), "apps/overlays/dev/kustomization.yaml": []byte("dev\nx\n"),
			"apps/overlays/prod/kustomization.yaml": []byte("prod\n"), "state/vectors/a.yaml": []byte("a\n")},
	}, {
		name: "create in a new directory, remove the last file of another",
		edits: []FileEdit{SetFile("state/promotions/p-1.yaml", []byte("p\n")), SetFile("state/vectors/a.yaml", nil),
			SetFile("./README.md", []byte("new\n"))},
		want: map[string][]byte{"README.md": []byte("new\n"), "apps/overlays/dev/kustomization.yaml": []byte("dev\n"),
			"apps/overlays/prod/kustomization.yaml": []byte("prod\n"), "state/promotions/p-1.yaml": []byte("p\n")},
	}, {
		name:  "two edits of one file compose",
		edits: []FileEdit{appendLine("README.md", "1\n"), appendLine("README.md", "2\n")},
		want: map[string][]byte{"README.md": []byte("readme\n1\n2\n"), "apps/overlays/dev/kustomization.yaml": []byte("dev\n"),
			"apps/overlays/prod/kustomization.yaml": []byte("prod\n"), "state/vectors/a.yaml": []byte("a\n")},
	}, {
		name:  "an edit that writes the same bytes changes nothing",
		edits: []FileEdit{SetFile("README.md", []byte("readme\n")), SetFile("absent.yaml", nil)},
		same:  true,
	}, {
		name:    "missing file the edit needs",
		edits:   []FileEdit{appendLine("apps/overlays/qa/kustomization.yaml", "x\n")},
		wantErr: `change "c": edit apps/overlays/qa/kustomization.yaml: file does not exist`,
	}, {
		name:    "path escaping the repository",
		edits:   []FileEdit{SetFile("../x", []byte("x"))},
		wantErr: `change "c": edit ../x: path "../x" must be relative to the repository root and inside it`,
	}, {
		name:    "a file where a directory is",
		edits:   []FileEdit{SetFile("apps/overlays", []byte("x"))},
		wantErr: `change "c": edit apps/overlays: apps/overlays is not a regular file`,
	}, {
		name:    "a directory under a file",
		edits:   []FileEdit{SetFile("README.md/x", []byte("x"))},
		wantErr: `change "c": edit README.md/x: README.md is a file, not a directory`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := memory.NewStorage()
			root, _, err := editTree(s, plumbing.ZeroHash, "seed", filesEdits(base))
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := editTree(s, root, "c", tt.edits)
			if tt.wantErr != "" {
				var ee *EditError
				if err == nil || !errors.As(err, &ee) {
					t.Fatalf("want an EditError, got %v", err)
				}
				if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.same {
				if got != root {
					t.Errorf("tree changed to %s, want unchanged %s", got, root)
				}
				return
			}
			tree, err := object.GetTree(s, got)
			if err != nil {
				t.Fatal(err)
			}
			files, err := readTreeFiles(tree, "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
}

func filesEdits(files map[string][]byte) []FileEdit {
	var edits []FileEdit
	for p, c := range files {
		edits = append(edits, SetFile(p, c))
	}
	return edits
}

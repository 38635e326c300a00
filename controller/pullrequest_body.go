package controller

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// PullRequestDescription is what a promotion's pull request says.
type PullRequestDescription struct {
	Promotion, Vector, Source, Target string
	// From are the overlay's images before, To the vector's components.
	From, To []v1alpha1.VectorComponent
	// Manifests is the rendered change; RenderProblem says why there is none.
	Manifests     pass.ManifestChanges
	RenderProblem string
	// Merge is the config's spec.approval.pullRequest.merge.
	Merge string
}

// PullRequestBody renders d as Markdown: a table of the components that
// change, a summary of the rendered objects, how the promotion is approved.
func PullRequestBody(d PullRequestDescription) string {
	var b strings.Builder
	fmt.Fprintf(&b, "vectorflow promotion **%s**: vector `%s` from %s to %s.\n\n", d.Promotion, d.Vector, d.Source, d.Target)
	b.WriteString(d.Diff())
	b.WriteString("\n### Approval\n\n")
	if d.Merge == v1alpha1.PullRequestMergeVectorflow {
		b.WriteString("An approving review by someone other than the author, on the current head, approves this promotion: vectorflow then writes the signed promotion commit to the target branch itself and closes this pull request.\n")
	} else {
		b.WriteString("Merging this pull request (under the branch's protection rules) approves and executes the promotion.\n")
	}
	return b.String()
}

// Diff is the change the promotion makes, as Markdown: the components that
// change their version and the rendered objects it adds, changes and
// removes. The pull request body and `vectorflow diff` show it.
func (d PullRequestDescription) Diff() string {
	var b strings.Builder
	b.WriteString("### Components\n\n")
	rows := componentRows(d.From, d.To)
	if len(rows) == 0 {
		b.WriteString("No component changes its version.\n")
	} else {
		b.WriteString("| Component | Old | New |\n|---|---|---|\n")
		for _, r := range rows {
			b.WriteString(r + "\n")
		}
	}
	b.WriteString("\n### Rendered manifests\n\n")
	switch {
	case d.RenderProblem != "":
		fmt.Fprintf(&b, "Not rendered: %s\n", d.RenderProblem)
	case len(d.Manifests.Added)+len(d.Manifests.Changed)+len(d.Manifests.Removed) == 0:
		b.WriteString("No object changes.\n")
	default:
		fmt.Fprintf(&b, "%d added, %d changed, %d removed.\n\n", len(d.Manifests.Added), len(d.Manifests.Changed), len(d.Manifests.Removed))
		for _, l := range []struct {
			verb string
			ids  []string
		}{{"added", d.Manifests.Added}, {"changed", d.Manifests.Changed}, {"removed", d.Manifests.Removed}} {
			for _, id := range l.ids {
				fmt.Fprintf(&b, "- %s `%s`\n", l.verb, id)
			}
		}
	}
	return b.String()
}

// componentRows are the table rows of the components whose image, tag or
// digest differ, by name.
func componentRows(from, to []v1alpha1.VectorComponent) []string {
	var rows []string
	for _, ch := range gitwriter.DiffComponents(from, to) {
		old, cur := "—", "—"
		if ch.Old != nil {
			old = componentVersion(*ch.Old)
		}
		if ch.New != nil {
			cur = componentVersion(*ch.New)
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |", ch.Name, old, cur))
	}
	return rows
}

func componentVersion(c v1alpha1.VectorComponent) string {
	v := "`" + reconcilers.VectorOrNone(c.Tag) + "`"
	if c.Tag == "" {
		v = "no tag"
	}
	if c.Image != "" && c.Image != c.Name {
		v = "`" + c.Image + "` " + v
	}
	if c.Digest != "" {
		v += " (`" + c.Digest + "`)"
	}
	return v
}

// pullRequestBody describes p's promotion of vector into the overlay of
// ref, file its kustomization.
func (c *Controller) pullRequestBody(ref source.StageRef, file string, p *v1alpha1.VectorPromotion, vector *v1alpha1.Vector, policy *v1alpha1.PullRequestApproval) (string, error) {
	d, err := DescribePromotion(c.overlayRenderer(), ref, file, p.Name, p.Spec.Source.Ref(), p.Spec.Target.Ref(), vector)
	if err != nil {
		return "", err
	}
	d.Merge = policy.MergeMode()
	return PullRequestBody(d), nil
}

// DescribePromotion describes promoting vector into the overlay of ref
// (file is its kustomization): the overlay is rendered as it is and as the
// promotion edit leaves it. A render failure is reported in the
// description, not as an error: the pull request is still the place to
// review the promotion.
func DescribePromotion(renderer *render.Renderer, ref source.StageRef, file, promotion, sourceRef, targetRef string, vector *v1alpha1.Vector) (PullRequestDescription, error) {
	d := PullRequestDescription{Promotion: promotion, Vector: vector.Ref(), Source: sourceRef,
		Target: targetRef, From: ref.Vector.Images, To: pass.OverlayEntries(ref.Vector, vector.Spec.Components)}
	old, err := fs.ReadFile(ref.Tree, file)
	if err != nil {
		return d, fmt.Errorf("read %s: %w", file, err)
	}
	edited, err := gitwriter.EditOverlay(file, old, vector.Ref(), vector.Spec.Components)
	if err != nil {
		return d, err
	}
	before, err := renderer.Build(ref.Tree, ref.Overlay)
	var after []byte
	if err == nil {
		after, err = renderer.Build(editedTree{Tree: ref.Tree, path: file, data: edited}, ref.Overlay)
	}
	if err == nil {
		d.Manifests, err = pass.DiffManifests(before, after)
	}
	if err != nil {
		d.RenderProblem = err.Error()
	}
	return d, nil
}

// KustomizationPath is the kustomization file of the overlay dir in tree.
func KustomizationPath(tree repofs.Tree, dir string) (string, error) {
	return kustomizationPath(tree, dir)
}

// editedTree is a tree with one file's content replaced. Its hashes differ
// from the original's along the edited path, so the renderer's cache keeps
// the two renderings apart.
type editedTree struct {
	repofs.Tree
	path string
	data []byte
}

func (t editedTree) ReadFile(name string) ([]byte, error) {
	if path.Clean(name) == t.path {
		return bytes.Clone(t.data), nil
	}
	return t.Tree.ReadFile(name)
}

func (t editedTree) Stat(name string) (fs.FileInfo, error) {
	info, err := t.Tree.Stat(name)
	if err != nil || path.Clean(name) != t.path {
		return info, err
	}
	return sizedInfo{FileInfo: info, size: int64(len(t.data))}, nil
}

func (t editedTree) Hash(name string) (string, error) {
	h, err := t.Tree.Hash(name)
	if err != nil {
		return h, err
	}
	name = path.Clean(name)
	if name == t.path || name == "." || strings.HasPrefix(t.path, name+"/") {
		sum := sha256.Sum256(append([]byte(h+"\x00"), t.data...))
		return "edited-" + hex.EncodeToString(sum[:]), nil
	}
	return h, nil
}

type sizedInfo struct {
	fs.FileInfo
	size int64
}

func (i sizedInfo) Size() int64 { return i.size }

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
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// pullRequestBody describes p's promotion of vector into the overlay of
// ref: the overlay is rendered as it is and as the promotion edit leaves it.
// A render failure is reported in the body, not as an error: the pull
// request is still the place to review the promotion.
func (c *Controller) pullRequestBody(ref source.StageRef, file string, p *v1alpha1.VectorPromotion, vector *v1alpha1.Vector, policy *v1alpha1.PullRequestApproval) (string, error) {
	d := pass.PullRequestDescription{Promotion: p.Name, Vector: p.Spec.Vector, Source: p.Spec.Source.Ref(),
		Target: p.Spec.Target.Ref(), From: ref.Vector.Images, To: pass.OverlayEntries(ref.Vector, vector.Spec.Components), Merge: policy.MergeMode()}
	old, err := fs.ReadFile(ref.Tree, file)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	edited, err := gitwriter.EditOverlay(file, old, p.Spec.Vector, vector.Spec.Components)
	if err != nil {
		return "", err
	}
	renderer := c.overlayRenderer()
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
	return pass.PullRequestBody(d), nil
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

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
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// pullRequestBody describes p's promotion of vector into the overlay of
// ref (see DescribePromotion) as the pull request's Markdown.
func (c *Controller) pullRequestBody(ref source.StageRef, p *v1alpha1.VectorPromotion, vector *v1alpha1.Vector, policy *v1alpha1.PullRequestApproval) (string, error) {
	d, err := DescribePromotion(c.overlayRenderer(), ref, p.Name, p.Spec.Source.Ref(), p.Spec.Target.Ref(), vector)
	if err != nil {
		return "", err
	}
	d.Merge = policy.MergeMode()
	return pass.PullRequestBody(d), nil
}

// DescribePromotion is what p's promotion of vector changes in the overlay
// of ref: the components (the overlay's images before, the vector's after)
// and the objects of the overlay rendered as it is and as the promotion
// edit leaves it. A render failure is in RenderProblem, not an error: the
// pull request and the web view still show the promotion.
func DescribePromotion(renderer *render.Renderer, ref source.StageRef, promotion, sourceRef, targetRef string, vector *v1alpha1.Vector) (pass.PullRequestDescription, error) {
	d := pass.PullRequestDescription{Promotion: promotion, Vector: vector.Ref(), Source: sourceRef,
		Target: targetRef, From: ref.Vector.Images, To: pass.OverlayEntries(ref.Vector, vector.Spec.Components)}
	file, err := kustomizationPath(ref.Tree, ref.Overlay)
	if err != nil {
		return d, err
	}
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

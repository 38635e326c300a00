package controller

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/registry"
	"github.com/vectorflow-dev/vectorflow/source/registry/registrytest"
)

// TestRegistryDiscoveryPinsPromotesAndSurvivesAnOutage runs the quickstart
// with semver ranges against a real OCI registry: the newest matching tags
// are pinned to their digests and promoted to dev; a newer tag makes a new
// vector once the tag list's TTL has passed; and when the registry goes
// away the template keeps its vector, says so on its Ready condition, and
// nothing is promoted.
func TestRegistryDiscoveryPinsPromotesAndSurvivesAnOutage(t *testing.T) {
	ctx := context.Background()
	f := newDiscoveryRepo(t, "")
	f.push(t, "acme/frontend", "1.0.0", "1.2.0", "2.0.0", "latest")
	f.push(t, "acme/service-a", "1.0.1", "1.0.2", "1.1.0-rc.1")
	f.push(t, "acme/service-b", "0.9.0", "1.0.0", "1.1.0")
	c := f.controller(t, nil)

	res, err := c.Pass(ctx)
	if err != nil {
		t.Fatalf("first pass: %v", err)
	}
	if diff := cmp.Diff([]string{"latest-to-dev-1"}, res.Executed); diff != "" {
		t.Errorf("first pass executed (-want +got):\n%s", diff)
	}
	want := f.pinned(map[string]string{"acme/frontend": "1.2.0", "acme/service-a": "1.0.2", "acme/service-b": "1.1.0"})
	first := f.latestVector(t)
	if diff := cmp.Diff(want, first.Spec.Components); diff != "" {
		t.Fatalf("first vector's components (-want +got):\n%s", diff)
	}
	f.wantDevOverlay(t, first)

	// A new tag is not seen while the tag list is fresh, and is once it is
	// stale.
	f.push(t, "acme/service-a", "1.0.3")
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if got := f.latestVector(t); got.Ref() != first.Ref() {
		t.Fatalf("a tag pushed within the tag list TTL made vector %s, want %s kept until the TTL passes", got.Ref(), first.Ref())
	}
	f.advance(2 * discoveryTTL)
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	second := f.latestVector(t)
	want = f.pinned(map[string]string{"acme/frontend": "1.2.0", "acme/service-a": "1.0.3", "acme/service-b": "1.1.0"})
	if diff := cmp.Diff(want, second.Spec.Components); diff != "" {
		t.Fatalf("vector after pushing service-a 1.0.3 (-want +got):\n%s", diff)
	}
	if second.Ref() == first.Ref() {
		t.Fatalf("pushing service-a 1.0.3 made no new vector: latest is still %s", first.Ref())
	}
	f.wantDevOverlay(t, second)

	// The registry goes away.
	mainBefore := f.tip(t, "main")
	vectorsBefore := keys.Sorted(f.state(t).Vectors)
	f.reg.Close()
	f.advance(2 * discoveryTTL)
	passes, err := c.RunUntilStable(ctx, 10)
	if err != nil {
		t.Fatalf("passes with the registry down: %v", err)
	}
	for _, p := range passes {
		if len(p.Executed) > 0 {
			t.Errorf("a pass with the registry down executed %v", p.Executed)
		}
	}
	state := f.state(t)
	if diff := cmp.Diff(vectorsBefore, keys.Sorted(state.Vectors)); diff != "" {
		t.Errorf("vectors on the state branch changed with the registry down (-before +after):\n%s", diff)
	}
	tmpl := state.Templates["acme"]
	if tmpl == nil || tmpl.Status.LatestVector != second.Ref() {
		t.Fatalf("template acme with the registry down: %+v, want latestVector %s kept", tmpl, second.Ref())
	}
	ready := meta.FindStatusCondition(tmpl.Status.Conditions, v1alpha1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != v1alpha1.RegistryUnavailableReason {
		t.Fatalf("Ready condition of template acme with the registry down: %+v, want False/%s", ready, v1alpha1.RegistryUnavailableReason)
	}
	for _, comp := range second.Spec.Components {
		kept := "kept " + comp.Tag + "@" + comp.Digest
		if !strings.Contains(ready.Message, comp.Name) || !strings.Contains(ready.Message, kept) {
			t.Errorf("Ready message does not name image %s and say %q:\n%s", comp.Name, kept, ready.Message)
		}
	}
	if got := f.tip(t, "main"); got != mainBefore {
		t.Errorf("main moved from %s to %s with the registry down; the dev overlay must not be written", mainBefore, got)
	}
	// The outage is stable: another pass decides nothing new.
	res, err = c.Pass(ctx)
	if err != nil || res.Changed() {
		t.Errorf("another pass with the registry down: %+v, %v; want no change", res, err)
	}
}

// TestAssembledVectorIsUploaded: a template with spec.uploadTarget has each
// assembled vector pushed there as an OCI artifact that decodes to the
// vector on the state branch.
func TestAssembledVectorIsUploaded(t *testing.T) {
	ctx := context.Background()
	f := newDiscoveryRepo(t, "acme/vectors")
	f.push(t, "acme/frontend", "1.2.0")
	f.push(t, "acme/service-a", "1.0.2")
	f.push(t, "acme/service-b", "1.0.0", "1.0.1")
	c := f.controller(t, f.resolver)
	if _, err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	onState := f.latestVector(t)
	target := "oci://" + f.reg.Host() + "/acme/vectors"
	data, err := f.resolver.PullVector(ctx, target, onState.Spec.Version)
	if err != nil {
		t.Fatalf("pull the vector the pass assembled: %v", err)
	}
	var uploaded v1alpha1.Vector
	if err := yaml.UnmarshalStrict(data, &uploaded); err != nil {
		t.Fatalf("the uploaded vector does not decode: %v\n%s", err, data)
	}
	if diff := cmp.Diff(onState.Spec, uploaded.Spec); diff != "" {
		t.Errorf("uploaded vector (-state branch +uploaded):\n%s", diff)
	}
	want := f.pinned(map[string]string{"acme/frontend": "1.2.0", "acme/service-a": "1.0.2", "acme/service-b": "1.0.1"})
	if diff := cmp.Diff(want, uploaded.Spec.Components); diff != "" {
		t.Errorf("uploaded vector's components (-want +got):\n%s", diff)
	}
}

// discoveryTTL is the resolver's tag list TTL; the test moves the
// resolver's clock past it rather than waiting.
const discoveryTTL = time.Hour

// discoveryRepo is the quickstart on a git server with its images in an
// in-process registry and every component following discoveryRange.
type discoveryRepo struct {
	srv      *testutil.GitServer
	reg      *registrytest.Registry
	url      string
	resolver *registry.Resolver
	skew     atomic.Int64 // added to the resolver's clock
	digests  map[string]string
}

const discoveryRange = ">=1.0.0 <2.0.0"

// newDiscoveryRepo rewrites the quickstart to use the registry; a non-empty
// vectors repository becomes the template's uploadTarget.
func newDiscoveryRepo(t *testing.T, vectors string) *discoveryRepo {
	t.Helper()
	testutil.RequireGit(t)
	f := &discoveryRepo{srv: testutil.StartGitServer(t), reg: registrytest.Start(t), digests: map[string]string{}}
	dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "registry.example.com", f.reg.Host())), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	var tmpl strings.Builder
	tmpl.WriteString("apiVersion: vectorflow.dev/v1alpha1\nkind: VectorTemplate\nmetadata:\n  name: acme\nspec:\n  components:\n")
	for _, c := range []string{"acme/frontend", "acme/service-a", "acme/service-b"} {
		fmt.Fprintf(&tmpl, "    - name: %s/%s\n      version: %q\n", f.reg.Host(), c, discoveryRange)
	}
	if vectors != "" {
		fmt.Fprintf(&tmpl, "  uploadTarget: oci://%s/%s\n", f.reg.Host(), vectors)
	}
	if err := os.WriteFile(filepath.Join(dir, "vectorflow", "template.yaml"), []byte(tmpl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f.srv.InitRepo(t, dir, "main", "acme.git")
	f.url = f.srv.HTTPURL("acme.git")
	// The registry's own keychain is anonymous: the user's docker config is
	// never read.
	f.resolver = registry.NewResolver(registry.Options{Keychain: f.reg.Keychain(), TagListTTL: discoveryTTL,
		Clock: func() time.Time { return time.Now().Add(time.Duration(f.skew.Load())) }})
	return f
}

func (f *discoveryRepo) controller(t *testing.T, uploader Uploader) *Controller {
	t.Helper()
	c, err := New(Options{URL: f.url, Branch: "main", Writer: signedWriter(t), Auth: f.auth, Resolver: f.resolver, Uploader: uploader})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *discoveryRepo) auth(string) source.Auth {
	return source.Auth{Username: f.srv.Username, Password: f.srv.Password}
}

// push pushes tags of repo and remembers their digests.
func (f *discoveryRepo) push(t *testing.T, repo string, tags ...string) {
	t.Helper()
	for tag, digest := range f.reg.PushTags(t, repo, tags...) {
		f.digests[repo+":"+tag] = digest
	}
}

func (f *discoveryRepo) advance(d time.Duration) { f.skew.Add(int64(d)) }

// pinned is the vector components for tags by repository, with the digests
// the registry gave them, sorted by name as vectors are.
func (f *discoveryRepo) pinned(tags map[string]string) []v1alpha1.VectorComponent {
	var out []v1alpha1.VectorComponent
	for _, repo := range keys.Sorted(tags) {
		out = append(out, v1alpha1.VectorComponent{Name: f.reg.Host() + "/" + repo, Tag: tags[repo], Digest: f.digests[repo+":"+tags[repo]]})
	}
	return out
}

func (f *discoveryRepo) state(t *testing.T) *reconcilers.State {
	t.Helper()
	repo, err := source.Open(f.url, f.auth(f.url))
	if err != nil {
		t.Fatal(err)
	}
	_, _, state, err := ReadState(context.Background(), repo, DefaultStateBranch)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// latestVector is the vector template acme names as its latest.
func (f *discoveryRepo) latestVector(t *testing.T) *v1alpha1.Vector {
	t.Helper()
	state := f.state(t)
	tmpl := state.Templates["acme"]
	if tmpl == nil {
		t.Fatalf("no status of template acme on the state branch")
	}
	v := state.Vectors[tmpl.Status.LatestVector]
	if v == nil {
		t.Fatalf("template acme's latest vector %q is not on the state branch: %+v", tmpl.Status.LatestVector, tmpl.Status.Conditions)
	}
	return v
}

func (f *discoveryRepo) tip(t *testing.T, branch string) string {
	t.Helper()
	out := testutil.Git(t, t.TempDir(), nil, "ls-remote", f.srv.HTTPURLWithCredentials("acme.git"), "refs/heads/"+branch)
	fields := strings.Fields(out)
	if len(fields) == 0 {
		t.Fatalf("no branch %s on the server", branch)
	}
	return fields[0]
}

// wantDevOverlay checks that dev's overlay on the server runs v: its
// annotation names it and every image is pinned to v's tag and digest.
func (f *discoveryRepo) wantDevOverlay(t *testing.T, v *v1alpha1.Vector) {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", "main", f.srv.HTTPURLWithCredentials("acme.git"), ".")
	data, err := os.ReadFile(filepath.Join(dir, "apps", "overlays", "dev", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var overlay struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Images []overlayImage `json:"images"`
	}
	if err := yaml.Unmarshal(data, &overlay); err != nil {
		t.Fatalf("dev overlay: %v\n%s", err, data)
	}
	if got := overlay.Metadata.Annotations["vectorflow.dev/vector"]; got != v.Ref() {
		t.Errorf("dev overlay runs vector %q, want %q", got, v.Ref())
	}
	var want []overlayImage
	for _, c := range v.Spec.Components {
		want = append(want, overlayImage{Name: c.Name, NewTag: c.Tag, Digest: c.Digest})
	}
	if diff := cmp.Diff(want, overlay.Images); diff != "" {
		t.Errorf("dev overlay images (-want +got):\n%s", diff)
	}
}

type overlayImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
)

// upgradeRepo is the quickstart where service-a has stepping stone 1.5.0
// and the template asks for it, and dev-to-test is automatic with an
// updateDelay of an hour, so test skips what dev ran meanwhile.
func upgradeRepo(t *testing.T, more ...func(dir string)) string {
	t.Helper()
	dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	edit := func(file, old, new string) {
		t.Helper()
		p := filepath.Join(dir, file)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), old) {
			t.Fatalf("%s changed; update this test", file)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("vectorflow/template.yaml", "      version: \"1.0.2\"\n", "      version: \"1.5.0\"\n      steppingStones: [\"1.5.0\"]\n")
	edit("vectorflow/promotions.yaml", "    name: test\n    landscape: test\n  approval:\n    required: true\n",
		"    name: test\n    landscape: test\n  updateDelay: 1h\n  approval:\n    required: false\n")
	for _, f := range more {
		f(dir)
	}
	return dir
}

// upgradeWorld serves the repository over the real git server and runs a
// controller that signs with its own OpenPGP key; requests are written
// with that key (the operator of an automatic config).
type upgradeWorld struct {
	t      *testing.T
	srv    *testutil.GitServer
	url    string
	auth   func(string) source.Auth
	clock  *testClock
	c      *Controller
	w      *gitwriter.Writer
	clone  string
	repo   *source.Repository
	ctx    context.Context
	remote gitwriter.Remote
}

func newUpgradeWorld(t *testing.T, more ...func(dir string)) *upgradeWorld {
	testutil.RequireGit(t)
	u := &upgradeWorld{t: t, srv: testutil.StartGitServer(t), clock: &testClock{start: time.Now()}, ctx: context.Background()}
	u.srv.InitRepo(t, upgradeRepo(t, more...), "main", "acme.git")
	u.url = u.srv.HTTPURL("acme.git")
	u.auth = func(string) source.Auth { return source.Auth{Username: u.srv.Username, Password: u.srv.Password} }
	u.w = signedWriter(t)
	var err error
	u.c, err = New(Options{URL: u.url, Branch: "main", Writer: u.w, Auth: u.auth, Clock: u.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	u.repo, err = source.Open(u.url, u.auth(u.url))
	if err != nil {
		t.Fatal(err)
	}
	u.clone = t.TempDir()
	testutil.Git(t, u.clone, nil, "clone", "-q", "--branch", "main", u.srv.HTTPURLWithCredentials("acme.git"), ".")
	u.remote = gitwriter.Remote{URL: u.url, Auth: u.repo.AuthMethod()}
	return u
}

func (u *upgradeWorld) run() *reconcilers.State {
	u.t.Helper()
	if _, err := u.c.RunUntilStable(u.ctx, 20); err != nil {
		u.t.Fatal(err)
	}
	return readDriftState(u.t, u.repo)
}

// setServiceA changes the template's service-a version and pushes it.
func (u *upgradeWorld) setServiceA(from, to string) {
	u.t.Helper()
	testutil.Git(u.t, u.clone, nil, "pull", "-q", "--rebase", "origin", "main")
	p := filepath.Join(u.clone, "vectorflow", "template.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		u.t.Fatal(err)
	}
	changed := strings.Replace(string(data), "version: \""+from+"\"", "version: \""+to+"\"", 1)
	if changed == string(data) {
		u.t.Fatalf("template has no service-a %s", from)
	}
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		u.t.Fatal(err)
	}
	testutil.Git(u.t, u.clone, nil, "commit", "-qam", "service-a "+to)
	testutil.Git(u.t, u.clone, nil, "push", "-q", "origin", "main")
}

// request adds a promotion request to the state branch, signed with the
// controller's key.
func (u *upgradeWorld) request(id string, r reconcilers.PromotionRequest) {
	u.t.Helper()
	r.APIVersion, r.Kind, r.RequestedAt = v1alpha1.GroupVersion.String(), reconcilers.PromotionRequestKind, metav1.NewTime(u.clock.now().UTC().Truncate(time.Second))
	b, err := yaml.Marshal(r)
	if err != nil {
		u.t.Fatal(err)
	}
	change := gitwriter.Change{Message: func([]gitwriter.FileDiff) string { return "request " + id + "\n" },
		Files: []gitwriter.FileEdit{gitwriter.SetFile(reconcilers.RequestPath(r.Config, id), b)}}
	if _, err := u.w.Apply(u.ctx, gitwriter.Target{Remote: u.remote, Branch: DefaultStateBranch}, change); err != nil {
		u.t.Fatal(err)
	}
}

// vectorWith is the state's vector of acme whose service-a is tag.
func vectorWith(t *testing.T, s *reconcilers.State, tag string) string {
	t.Helper()
	var found string
	for ref, v := range s.Vectors {
		for _, c := range v.Spec.Components {
			if c.Name == "registry.example.com/acme/service-a" && c.Tag == tag && (found == "" || ref > found) {
				found = ref
			}
		}
	}
	if found == "" {
		t.Fatalf("no vector has service-a %s", tag)
	}
	return found
}

func promotionsOf(s *reconcilers.State, config string) map[string]*v1alpha1.VectorPromotion {
	out := map[string]*v1alpha1.VectorPromotion{}
	for name, p := range s.Promotions {
		if p.Spec.VectorPromotionConfigName == config {
			out[name] = p
		}
	}
	return out
}

func succeededCondition(p *v1alpha1.VectorPromotion) *metav1.Condition {
	return meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition)
}

// TestUpgradePathsEndToEnd runs the safe-upgrade rules over the real git
// server with signed commits:
//  1. test runs service-a 1.0.1 and dev moved to 1.5.0 (a stepping stone)
//     and then 1.6.0 within test's updateDelay: test is promoted to the
//     stone's vector first, then to 1.6.0;
//  2. a rollback to the stone's vector runs (Vectorflow-Rollback: true) and
//     holds test, so the next vector from dev waits (StageHeld);
//  3. a promotion of the vector test ran first (1.0.1) goes down across the
//     stone and is refused (SteppingStoneDowngrade), and runs when forced
//     (Vectorflow-Forced: true).
func TestUpgradePathsEndToEnd(t *testing.T) {
	u := newUpgradeWorld(t)
	s := u.run()
	v15 := vectorWith(t, s, "1.5.0")
	if got := s.Stages["dev/dev"].Status.Vector; got != v15 {
		t.Fatalf("dev runs %s, want %s", got, v15)
	}
	original := s.Stages["test/test"].Status.Vector
	u.setServiceA("1.5.0", "1.6.0")
	s = u.run()
	v16 := vectorWith(t, s, "1.6.0")
	if got := s.Stages["dev/dev"].Status.Vector; got != v16 {
		t.Fatalf("dev runs %s, want %s", got, v16)
	}
	if n := len(promotionsOf(s, "dev-to-test")); n != 0 {
		t.Fatalf("dev-to-test made %d promotions within its updateDelay", n)
	}

	// 1. The stone first.
	u.clock.advance(2 * time.Hour)
	s = u.run()
	ps := promotionsOf(s, "dev-to-test")
	if p := ps["dev-to-test-1"]; p == nil || p.Spec.Vector != v15 || reconcilers.DeriveState(p) != v1alpha1.PromotionSucceeded {
		t.Fatalf("dev-to-test-1 = %+v, want the stone's vector %s Succeeded", p, v15)
	}
	if p := ps["dev-to-test-2"]; p == nil || p.Spec.Vector != v16 || reconcilers.DeriveState(p) != v1alpha1.PromotionSucceeded {
		t.Fatalf("dev-to-test-2 = %+v, want %s Succeeded after the stone", p, v16)
	}
	testutil.Git(t, u.clone, nil, "fetch", "-q", "origin")
	log := testutil.Git(t, u.clone, nil, "log", "--format=%(trailers:key=Vectorflow-Vector,valueonly)", "origin/main", "--", "apps/overlays/test")
	if got := strings.Fields(log); len(got) < 2 || got[0] != v16 || got[1] != v15 {
		t.Fatalf("test's overlay history names %v, want %s after %s", got, v16, v15)
	}

	// 2. A rollback holds the stage.
	u.request("rollback", reconcilers.PromotionRequest{Config: "dev-to-test", PromoteVector: v15, Rollback: true, Reason: "1.6.0 leaks memory"})
	s = u.run()
	rb := s.Promotions["dev-to-test-3"]
	if rb == nil || rb.Spec.Vector != v15 || !rb.Spec.Rollback || reconcilers.DeriveState(rb) != v1alpha1.PromotionSucceeded {
		t.Fatalf("the rollback dev-to-test-3 = %+v, want %s Succeeded", rb, v15)
	}
	if msg := testutil.Git(t, u.clone, nil, "fetch", "-q", "origin"); msg != "" {
		t.Log(msg)
	}
	if body := testutil.Git(t, u.clone, nil, "log", "-1", "--format=%B", rb.Status.Commit); !strings.Contains(body, "Vectorflow-Rollback: true") {
		t.Fatalf("the rollback commit says:\n%s", body)
	}
	held := meta.FindStatusCondition(s.Stages["test/test"].Status.Conditions, pass.HeldCondition)
	if held == nil || held.Reason != v1alpha1.StageHeldReason || !strings.Contains(held.Message, "1.6.0 leaks memory") {
		t.Fatalf("test's Held condition = %+v, want StageHeld naming the rollback's reason", held)
	}
	u.setServiceA("1.6.0", "1.7.0")
	u.run()
	u.clock.advance(2 * time.Hour)
	s = u.run()
	v17 := vectorWith(t, s, "1.7.0")
	var waiting *v1alpha1.VectorPromotion
	for _, p := range promotionsOf(s, "dev-to-test") {
		if p.Spec.Vector == v17 {
			waiting = p
		}
	}
	if waiting == nil || reconcilers.DeriveState(waiting) != v1alpha1.PromotionBlocked || succeededCondition(waiting).Reason != v1alpha1.StageHeldReason {
		t.Fatalf("the candidate of %s in a held stage = %+v, want Blocked with StageHeld", v17, waiting)
	}
	if got := s.Stages["test/test"].Status.Vector; got != v15 {
		t.Fatalf("test runs %s while held, want %s", got, v15)
	}

	// 3. Down across the stone: refused, then forced.
	u.request("down", reconcilers.PromotionRequest{Config: "dev-to-test", PromoteVector: original})
	s = u.run()
	var refused *v1alpha1.VectorPromotion
	for _, p := range promotionsOf(s, "dev-to-test") {
		if p.Spec.Vector == original && !p.Spec.Forced {
			refused = p
		}
	}
	if refused == nil || reconcilers.DeriveState(refused) != v1alpha1.PromotionBlocked || succeededCondition(refused).Reason != v1alpha1.SteppingStoneDowngradeReason {
		t.Fatalf("the downgrade = %+v, want Blocked with SteppingStoneDowngrade", refused)
	}
	u.request("forced", reconcilers.PromotionRequest{Config: "dev-to-test", PromoteVector: original, Force: true})
	s = u.run()
	if got := s.Stages["test/test"].Status.Vector; got != original {
		t.Fatalf("test runs %s after the forced downgrade, want %s", got, original)
	}
	var forced *v1alpha1.VectorPromotion
	for _, p := range promotionsOf(s, "dev-to-test") {
		if p.Spec.Forced {
			forced = p
		}
	}
	testutil.Git(t, u.clone, nil, "fetch", "-q", "origin")
	if body := testutil.Git(t, u.clone, nil, "log", "-1", "--format=%B", forced.Status.Commit); !strings.Contains(body, "Vectorflow-Forced: true") {
		t.Fatalf("the forced commit says:\n%s", body)
	}
	snap, err := u.c.opts.Loader.Load(u.ctx, u.url, "main")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Audit(u.ctx, AuditInput{Snapshot: snap, StateRepo: u.repo, StateBranch: DefaultStateBranch, Stage: "test/test",
		Open: func(url, branch string) (*source.Repository, error) {
			r, err := source.Open(url, u.auth(url))
			if err != nil {
				return nil, err
			}
			_, err = r.Fetch(u.ctx, branch)
			return r, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	var audited bool
	for _, e := range entries {
		if e.Commit == forced.Status.Commit {
			audited = e.Forced
		}
	}
	if !audited {
		t.Fatalf("audit does not show %s as forced: %+v", forced.Status.Commit, entries)
	}
}

// TestHandRevertHoldsTheStage: latest-to-dev (automatic) promotes a vector
// to dev, a person reverts the promotion commit, and the template then
// moves on. vectorflow holds dev by itself (ManualChange, naming the
// commit), so the newer vector waits instead of undoing the revert; the
// hold record is on the state branch, written with the controller's key.
func TestHandRevertHoldsTheStage(t *testing.T) {
	u := newUpgradeWorld(t)
	s := u.run()
	p := s.Promotions["latest-to-dev-1"]
	if p == nil || reconcilers.DeriveState(p) != v1alpha1.PromotionSucceeded {
		t.Fatalf("latest-to-dev-1 is %+v, want Succeeded", p)
	}
	testutil.Git(t, u.clone, nil, "pull", "-q", "--rebase", "origin", "main")
	testutil.Git(t, u.clone, nil, "revert", "--no-edit", p.Status.Commit)
	testutil.Git(t, u.clone, nil, "push", "-q", "origin", "main")
	reverted := strings.TrimSpace(testutil.Git(t, u.clone, nil, "rev-parse", "HEAD"))

	s = u.run()
	held := meta.FindStatusCondition(s.Stages["dev/dev"].Status.Conditions, pass.HeldCondition)
	if held == nil || held.Reason != v1alpha1.ManualChangeReason || !strings.Contains(held.Message, v1alpha1.ShortCommit(reverted)) {
		t.Fatalf("dev's Held condition = %+v, want ManualChange naming %s", held, v1alpha1.ShortCommit(reverted))
	}
	_, files, err := u.w.Read(u.ctx, gitwriter.Target{Remote: u.remote, Branch: DefaultStateBranch}, reconcilers.HoldsDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("hold records %v, want one", files)
	}

	u.setServiceA("1.5.0", "1.6.0")
	s = u.run()
	// The newer vector skips the stone the revert took dev off, so the
	// stone's vector is offered first: it waits for the hold.
	var waiting *v1alpha1.VectorPromotion
	for _, q := range promotionsOf(s, "latest-to-dev") {
		if q.Name != "latest-to-dev-1" && (waiting == nil || q.Spec.Sequence > waiting.Spec.Sequence) {
			waiting = q
		}
	}
	if waiting == nil || reconcilers.DeriveState(waiting) != v1alpha1.PromotionBlocked || succeededCondition(waiting).Reason != v1alpha1.StageHeldReason {
		t.Fatalf("the newest candidate = %+v, want Blocked with StageHeld", waiting)
	}
	testutil.Git(t, u.clone, nil, "fetch", "-q", "origin")
	if log := testutil.Git(t, u.clone, nil, "log", "--format=%H %s", reverted+"..origin/main", "--", "apps/overlays/dev"); strings.TrimSpace(log) != "" {
		t.Errorf("dev was written after the revert:\n%s", log)
	}

	// A release by a key nobody trusts counts for nothing (and, being an
	// added record, does not taint the state branch).
	mallory, err := gitwriter.NewSigner(testutil.NewOpenPGPKey(t, "mallory", "mallory@example.com", nil).PrivateArmored, nil)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "mallory", Email: "mallory@example.com"}, Signer: mallory})
	if err != nil {
		t.Fatal(err)
	}
	u.clock.advance(time.Minute) // newer than the hold: it would lift it if it counted
	u.addHoldRecord(mw, "1-mallory", reconcilers.ReleaseKind)
	s = u.run()
	if held := meta.FindStatusCondition(s.Stages["dev/dev"].Status.Conditions, pass.HeldCondition); held == nil {
		t.Fatal("an untrusted release lifted the hold")
	}

	// The operator's release lifts it for good: the same change is not
	// held again, and dev moves on (through the stone).
	u.clock.advance(time.Minute)
	u.addHoldRecord(u.w, "2-operator", reconcilers.ReleaseKind)
	s = u.run()
	if held := meta.FindStatusCondition(s.Stages["dev/dev"].Status.Conditions, pass.HeldCondition); held != nil {
		t.Fatalf("dev is still held after the release: %+v", held)
	}
	if got, want := s.Stages["dev/dev"].Status.Vector, vectorWith(t, s, "1.6.0"); got != want {
		t.Fatalf("dev runs %s after the release, want %s", got, want)
	}
	_, files, err = u.w.Read(u.ctx, gitwriter.Target{Remote: u.remote, Branch: DefaultStateBranch}, reconcilers.HoldsDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("hold records %d, want the ManualChange hold and the two releases", len(files))
	}
}

// addHoldRecord adds a record for dev/dev with w's key.
func (u *upgradeWorld) addHoldRecord(w *gitwriter.Writer, id, kind string) {
	u.t.Helper()
	b, err := yaml.Marshal(reconcilers.HoldRecord{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind, Stage: "dev/dev",
		Reason: "checked", At: metav1.NewTime(u.clock.now().UTC().Truncate(time.Second))})
	if err != nil {
		u.t.Fatal(err)
	}
	change := gitwriter.Change{Message: func([]gitwriter.FileDiff) string { return kind + " dev/dev\n" },
		Files: []gitwriter.FileEdit{gitwriter.SetFile(reconcilers.HoldPath("dev/dev", id), b)}}
	if _, err := w.Apply(u.ctx, gitwriter.Target{Remote: u.remote, Branch: DefaultStateBranch}, change); err != nil {
		u.t.Fatal(err)
	}
}

// TestNamespaceRemovalWaitsForApproval: latest-to-dev (automatic) promoted
// a vector to dev; a person then drops dev's Namespace from the overlay.
// The next vector's promotion would release that removal, so it is not
// pushed: it waits for an approval (ProtectedRemoval) naming the
// Namespace, although its config needs none.
func TestNamespaceRemovalWaitsForApproval(t *testing.T) {
	alice := testutil.NewOpenPGPKey(t, "alice", "alice@example.com", nil)
	u := newUpgradeWorld(t, func(dir string) {
		// latest-to-dev stays automatic, and names alice as its approver.
		p := filepath.Join(dir, "vectorflow", "promotions.yaml")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		key := "          " + strings.ReplaceAll(strings.TrimSpace(string(alice.PublicArmored)), "\n", "\n          ")
		old := "    name: dev\n    landscape: dev\n---\n"
		if !strings.Contains(string(data), old) {
			t.Fatal("the quickstart's latest-to-dev changed; update this test")
		}
		changed := strings.Replace(string(data), old, "    name: dev\n    landscape: dev\n  approval:\n    required: false\n    approvers:\n"+
			"      - name: alice\n        publicKey: |\n"+key+"\n---\n", 1)
		if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	s := u.run()
	if p := s.Promotions["latest-to-dev-1"]; p == nil || reconcilers.DeriveState(p) != v1alpha1.PromotionSucceeded {
		t.Fatalf("latest-to-dev-1 is %+v, want Succeeded", p)
	}
	testutil.Git(t, u.clone, nil, "pull", "-q", "--rebase", "origin", "main")
	file := filepath.Join(u.clone, "apps", "overlays", "dev", "kustomization.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "  - namespace.yaml\n") {
		t.Fatal("dev's overlay changed; update this test")
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), "  - namespace.yaml\n", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, u.clone, nil, "commit", "-qam", "dev: the namespace is managed elsewhere now")
	testutil.Git(t, u.clone, nil, "push", "-q", "origin", "main")
	before := strings.TrimSpace(testutil.Git(t, u.clone, nil, "rev-parse", "HEAD"))

	u.setServiceA("1.5.0", "1.6.0")
	s = u.run()
	v16 := vectorWith(t, s, "1.6.0")
	var p *v1alpha1.VectorPromotion
	for _, q := range promotionsOf(s, "latest-to-dev") {
		if q.Spec.Vector == v16 {
			p = q
		}
	}
	if p == nil || reconcilers.DeriveState(p) != v1alpha1.PromotionWaiting {
		t.Fatalf("the promotion of %s = %+v, want Waiting", v16, p)
	}
	approved := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ApprovedCondition)
	if approved == nil || approved.Reason != v1alpha1.ProtectedRemovalReason || !strings.Contains(approved.Message, "Namespace acme-dev") {
		t.Fatalf("Approved = %+v, want ProtectedRemoval naming Namespace acme-dev", approved)
	}
	want := []v1alpha1.InventoryEntry{{Kind: "Namespace", Name: "acme-dev"}}
	if got := p.Status.RemovesProtected; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("status.removesProtected = %+v, want %+v", got, want)
	}
	testutil.Git(t, u.clone, nil, "fetch", "-q", "origin")
	if log := testutil.Git(t, u.clone, nil, "log", "--format=%H %s", before+"..origin/main", "--", "apps/overlays/dev"); strings.TrimSpace(log) != "" {
		t.Fatalf("dev was written without an approval:\n%s", log)
	}

	// Alice approves it, naming what it removes; it runs, and its commit
	// lists the Namespace.
	signer, err := gitwriter.NewSigner(alice.PrivateArmored, nil)
	if err != nil {
		t.Fatal(err)
	}
	aw, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "alice", Email: "alice@example.com"}, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := ApproverKeyIDs(string(alice.PublicArmored))
	if err != nil {
		t.Fatal(err)
	}
	path, err := NewApprovalPath(p.Name, ids[0], u.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(reconcilers.Approval{APIVersion: v1alpha1.GroupVersion.String(), Kind: reconcilers.ApprovalKind, Promotion: p.Name,
		Vector: p.Spec.Vector, ApprovedBy: "alice", ApprovedAt: metav1.NewTime(u.clock.now().UTC().Truncate(time.Second)), Removes: []string{"Namespace acme-dev"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aw.Apply(u.ctx, gitwriter.Target{Remote: u.remote, Branch: DefaultStateBranch}, gitwriter.Change{
		Message: func([]gitwriter.FileDiff) string { return "approve " + p.Name + "\n" },
		Files:   []gitwriter.FileEdit{gitwriter.SetFile(path, b)}}); err != nil {
		t.Fatal(err)
	}
	s = u.run()
	done := s.Promotions[p.Name]
	if done == nil || reconcilers.DeriveState(done) != v1alpha1.PromotionSucceeded {
		t.Fatalf("%s after alice's approval = %+v, want Succeeded", p.Name, done)
	}
	testutil.Git(t, u.clone, nil, "fetch", "-q", "origin")
	body := testutil.Git(t, u.clone, nil, "log", "-1", "--format=%B", done.Status.Commit)
	if !strings.Contains(body, "- Namespace acme-dev") || !strings.Contains(body, "Approved-by: alice") {
		t.Fatalf("the commit says:\n%s", body)
	}
	if trailers, ok := gitwriter.ParseTrailers(body); !ok || trailers.Promotion != p.Name {
		t.Fatalf("the commit's trailers no longer parse:\n%s", body)
	}
}

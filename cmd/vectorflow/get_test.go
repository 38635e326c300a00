package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// cliSplit runs vectorflow in-process against the fixture's repository,
// standard output and standard error apart.
func (f *flowFixture) cliSplit(args ...string) (stdout, stderr string, err error) {
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append(args, "--repo", f.url))
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// TestGetOnANeverReconciledRepository: before the first run there is no
// state branch; get says so, with what to do, instead of an empty table.
func TestGetOnANeverReconciledRepository(t *testing.T) {
	f := newFlowFixture(t)
	stdout, stderr, err := f.cliSplit("get", "vp")
	if err != nil || stdout != "" || !strings.Contains(stderr, "No state branch vectorflow/state") || !strings.Contains(stderr, "vectorflow run --once") {
		t.Fatalf("get vp before any run: err %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if strings.Contains(stderr, "unverified") {
		t.Errorf("get vp warns about verifying a branch that does not exist:\n%s", stderr)
	}
	if _, _, err := f.cliSplit("get", "vp", "dev-to-test-1"); err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "vectorflow run --once") {
		t.Fatalf("get vp NAME before any run: %v, want not found and the hint", err)
	}
}

// TestGetLikeKubectl: one object by name, short names, AGE, every output
// format (json and yaml as a kind: List), the filters, describe with the
// transitions from the state branch's history, completion of names, and
// diff of a promotion.
func TestGetLikeKubectl(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	trust := []string{"--trust", f.controllerPublic}
	get := func(args ...string) string {
		t.Helper()
		stdout, stderr, err := f.cliSplit(append(append([]string{"get"}, args...), trust...)...)
		if err != nil {
			t.Fatalf("get %v: %v\n%s", args, err, stderr)
		}
		return stdout
	}

	// A single object, by name; an unknown name fails, naming it.
	table := get("vp", "dev-to-test-1")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "dev-to-test-1 ") || !regexp.MustCompile(`\bAGE$`).MatchString(lines[0]) {
		t.Fatalf("get vp dev-to-test-1:\n%s", table)
	}
	if age := strings.Fields(lines[1]); age[len(age)-1] == "<unknown>" {
		t.Errorf("dev-to-test-1 has no AGE, though the state branch added it:\n%s", table)
	}
	if _, _, err := f.cliSplit(append([]string{"get", "vp", "dev-to-test-99"}, trust...)...); err == nil || !strings.Contains(err.Error(), `"dev-to-test-99" not found`) {
		t.Fatalf("get vp dev-to-test-99: %v, want not found", err)
	}

	// Short names and the README's words name the same kinds.
	for _, words := range [][]string{{"vp", "promotions", "vectorpromotions"}, {"vpc", "configs"}, {"vec", "vectors"},
		{"st", "stages"}, {"vt", "templates"}, {"ls", "landscapes"}} {
		want := get(words[0], "-o", "name")
		for _, w := range words[1:] {
			if got := get(w, "-o", "name"); got != want {
				t.Errorf("get %s differs from get %s:\n%s\n%s", w, words[0], got, want)
			}
		}
		if table := get(words[0]); strings.Count(table, "\n") < 2 || strings.Contains(table, "<unknown>") != (words[0] == "ls") {
			t.Errorf("get %s lists nothing, or without an AGE (landscapes have none on the state branch):\n%s", words[0], table)
		}
	}
	if out, _, err := f.cliSplit("get", "sv"); err != nil || !strings.Contains(out, "dev/dev") {
		t.Errorf("get sv: %v, want the StageVersions of dev listed:\n%s", err, out)
	}

	// -o json and -o yaml: a kind: List of objects with their kind; one
	// object by name is printed as itself.
	var list struct {
		APIVersion, Kind string
		Items            []v1alpha1.VectorPromotion
	}
	if err := json.Unmarshal([]byte(get("vp", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) != 3 || list.Items[0].Kind != v1alpha1.VectorPromotionKind {
		t.Fatalf("get vp -o json: %+v", list)
	}
	list.Items = nil
	if err := yaml.Unmarshal([]byte(get("vp", "-o", "yaml")), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "List" || len(list.Items) != 3 {
		t.Fatalf("get vp -o yaml: %+v", list)
	}
	var one v1alpha1.VectorPromotion
	if err := json.Unmarshal([]byte(get("vp", "latest-to-dev-1", "-o", "json")), &one); err != nil || one.Kind != v1alpha1.VectorPromotionKind || one.Name != "latest-to-dev-1" {
		t.Fatalf("get vp latest-to-dev-1 -o json: %v %+v", err, one)
	}
	if got := get("vp", "latest-to-dev-1", "-o", "jsonpath={.status.state}"); got != "Succeeded" {
		t.Errorf("-o jsonpath={.status.state}: %q", got)
	}
	if got := get("vp", "-o", "jsonpath={.items[*].metadata.name}"); got != "dev-to-test-2 dev-to-test-1 latest-to-dev-1" {
		t.Errorf("-o jsonpath={.items[*].metadata.name}: %q", got)
	}
	if diff := cmp.Diff("vectorpromotion.vectorflow.dev/dev-to-test-2\nvectorpromotion.vectorflow.dev/dev-to-test-1\nvectorpromotion.vectorflow.dev/latest-to-dev-1\n",
		get("vp", "-o", "name")); diff != "" {
		t.Errorf("-o name (-want +got):\n%s", diff)
	}
	if wide := get("vp", "-o", "wide"); !strings.Contains(strings.SplitN(wide, "\n", 2)[0], "SOURCE") || !strings.Contains(wide, "Stage/dev/dev") {
		t.Errorf("-o wide has no SOURCE column:\n%s", wide)
	}
	if _, _, err := f.cliSplit("get", "vp", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "jsonpath=") {
		t.Errorf("-o xml: %v, want the formats named", err)
	}

	// Filters.
	names := func(args ...string) string {
		return get(append(append([]string{"vp"}, args...), "-o", "jsonpath={.items[*].metadata.name}")...)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--state", "Waiting"}, "dev-to-test-2 dev-to-test-1"},
		{[]string{"--config", "latest-to-dev"}, "latest-to-dev-1"},
		{[]string{"--stage", "test"}, "dev-to-test-2 dev-to-test-1"},
		{[]string{"--stage", "dev/dev"}, "latest-to-dev-1"},
		{[]string{"--stage", "test", "--state", "Succeeded"}, ""},
	} {
		if got := names(tt.args...); got != tt.want {
			t.Errorf("get vp %v: %q, want %q", tt.args, got, tt.want)
		}
	}
	if _, _, err := f.cliSplit("get", "stages", "--state", "Waiting"); err == nil || !strings.Contains(err.Error(), "--state does not apply to stages") {
		t.Errorf("get stages --state: %v", err)
	}
	if _, _, err := f.cliSplit("get", "vp", "--watch", "--watch-interval", "0s"); err == nil || !strings.Contains(err.Error(), "positive duration") {
		t.Errorf("get --watch --watch-interval 0s: %v", err)
	}
	if _, _, err := f.cliSplit("get", "vp", "--state", "Approved"); err == nil || !strings.Contains(err.Error(), "not a promotion state") {
		t.Errorf("get vp --state Approved: %v", err)
	}

	// diff of a waiting promotion: what its pull request's body would show,
	// the components that change and the rendered objects.
	diff := f.cli(t, append([]string{"diff", "dev-to-test-2"}, trust...)...)
	for _, want := range []string{"### Components", "| `registry.example.com/acme/service-a` | `1.0.1` | `1.0.2` |",
		"### Rendered manifests", "- changed `Deployment acme-test/service-a`"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff dev-to-test-2 lacks %q:\n%s", want, diff)
		}
	}
	stages := f.cli(t, append([]string{"diff", "--from", "dev", "--to", "test/test"}, trust...)...)
	if _, section, _ := strings.Cut(diff, "\n\n"); !strings.HasSuffix(stages, section) {
		t.Errorf("diff --from dev --to test differs from diff dev-to-test-2, which promotes dev's vector to test:\n%s\n%s", stages, diff)
	}

	// Alice approves dev-to-test-2 and it runs: describe shows the snapshot,
	// the approval, the conditions and each transition, oldest first.
	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	f.run(t)
	desc := f.cli(t, append([]string{"describe", "vp", "dev-to-test-2"}, trust...)...)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Sequence: +2$`), regexp.MustCompile(`(?m)^Target: +Stage test in Landscape test$`),
		regexp.MustCompile(`(?m)^  alice at \S+, signed state commit [0-9a-f]{12}$`),
		regexp.MustCompile(`(?m)^  Succeeded +True +PromotionSucceeded +\S+Z +promoted`),
		regexp.MustCompile(`(?s)created.*state: Waiting\n.*state: Waiting → (Ready|InProgress).*Approved: False \(WaitingForApproval\) → True \(Approved\).*state: InProgress → Succeeded`),
	} {
		if !want.MatchString(desc) {
			t.Errorf("describe vp dev-to-test-2 does not match %s:\n%s", want, desc)
		}
	}
	// diff of a promotion that ran shows what its commit changed.
	if diff := f.cli(t, append([]string{"diff", "dev-to-test-2"}, trust...)...); !strings.Contains(diff, "as its commit") || !strings.Contains(diff, "`1.0.1` | `1.0.2`") {
		t.Errorf("diff of the promotion that ran:\n%s", diff)
	}

	// Completion reads the names from the state branch.
	complete := func(args ...string) string {
		cmd := newRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append([]string{"__complete"}, args...))
		if err := cmd.Execute(); err != nil {
			t.Fatalf("__complete %v: %v", args, err)
		}
		return out.String()
	}
	if got := complete("get", "vp", "--repo", f.url, "dev-"); !strings.HasPrefix(got, "dev-to-test-2\ndev-to-test-1\n:4\n") {
		t.Errorf("completion of get vp dev-:\n%s", got)
	}
	if got := complete("describe", "v"); !strings.Contains(got, "\nvp\n") || !strings.Contains(got, "\nvpc\n") {
		t.Errorf("completion of kinds:\n%s", got)
	}
	if got := complete("get", "vp", "--repo", f.url, "--stage", ""); !strings.Contains(got, "dev/dev\n") {
		t.Errorf("completion of --stage:\n%s", got)
	}
	for shell, want := range map[string]string{"bash": "__start_vectorflow", "zsh": "#compdef vectorflow"} {
		if out := f.cliNoRepo(t, "completion", shell); !strings.Contains(out, want) {
			t.Errorf("completion %s lacks %q", shell, want)
		}
	}
}

func (f *flowFixture) cliNoRepo(t *testing.T, args ...string) string {
	t.Helper()
	out, err := f.cliNoRepoE(args...)
	if err != nil {
		t.Fatalf("vectorflow %v: %v\n%s", args, err, out)
	}
	return out
}

// cliNoRepoE runs vectorflow in-process with args alone.
func (f *flowFixture) cliNoRepoE(args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestGetWatch: get --watch prints the table, then each object again when
// a pass changes it, without repeating the header, until interrupted.
func TestGetWatch(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out testutil.SyncBuffer
	done := make(chan error, 1)
	go func() {
		cmd := newRootCommand()
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs([]string{"get", "vp", "--watch", "--watch-interval", "50ms", "--trust", f.controllerPublic, "--repo", f.url})
		done <- cmd.ExecuteContext(ctx)
	}()
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !ok(out.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("get --watch never printed %s:\n%s", what, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the table", func(s string) bool { return strings.Contains(s, "latest-to-dev-1") })
	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	f.run(t)
	succeeded := regexp.MustCompile(`(?m)^dev-to-test-2 .* Succeeded +alice `)
	waitFor("dev-to-test-2 Succeeded", succeeded.MatchString)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("get --watch ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("get --watch did not end when interrupted")
	}
	got := out.String()
	if n := strings.Count(got, "NAME "); n != 1 {
		t.Errorf("get --watch printed the header %d times:\n%s", n, got)
	}
	// latest-to-dev-1 did not change: printed once, in the table.
	if n := strings.Count(got, "latest-to-dev-1 "); n != 1 {
		t.Errorf("get --watch printed the unchanged latest-to-dev-1 %d times:\n%s", n, got)
	}
}

// TestPromoteWarnsOfAWaitingCandidate: a request for the vector a waiting
// promotion already holds is made, with a warning naming that promotion.
func TestPromoteWarnsOfAWaitingCandidate(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	_, stderr, err := f.cliSplit("promote", "--config", "dev-to-test", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "warning: dev-to-test-2 already waits for approval with the same vector") {
		t.Errorf("promote of the vector dev-to-test-2 waits with:\n%s", stderr)
	}
	if strings.Contains(stderr, "dev-to-test-1") {
		t.Errorf("promote warns of dev-to-test-1, which holds another vector:\n%s", stderr)
	}
}

// TestTransitionsPrintOnce: on a terminal the log shows each transition
// as it happens, so run --once does not print them again at the end.
func TestTransitionsPrintOnce(t *testing.T) {
	for _, tt := range []struct {
		level          zapcore.Level
		stdout, stderr bool
		want           bool
	}{
		{zapcore.InfoLevel, true, true, true},
		{zapcore.DebugLevel, true, true, true},
		{zapcore.ErrorLevel, true, true, false}, // the log does not show them
		{zapcore.InfoLevel, false, true, false}, // a pipe gets the summary
		{zapcore.InfoLevel, true, false, false}, // the log goes to a file
	} {
		if got := transitionsShownByLog(logLevel(tt.level), tt.stdout, tt.stderr); got != tt.want {
			t.Errorf("level %s, stdout terminal %v, stderr terminal %v: shown by the log %v, want %v", tt.level, tt.stdout, tt.stderr, got, tt.want)
		}
	}
}

// TestTransitionLines: what describe says changed between two versions of
// a state file.
func TestTransitionLines(t *testing.T) {
	waiting := "status:\n  state: Waiting\n  conditions:\n  - type: Approved\n    status: \"False\"\n    reason: WaitingForApproval\n    lastTransitionTime: \"2026-01-01T00:00:00Z\"\n    message: m\n"
	approved := "status:\n  state: InProgress\n  approvals:\n  - approvedBy: alice\n    approvedAt: \"2026-01-01T00:00:00Z\"\n  conditions:\n  - type: Approved\n    status: \"True\"\n    reason: Approved\n    lastTransitionTime: \"2026-01-01T00:00:00Z\"\n    message: m\n"
	for _, tt := range []struct {
		before, after string
		want          []string
	}{
		{"", waiting, []string{"created", "state: Waiting", "Approved: False (WaitingForApproval)"}},
		{waiting, approved, []string{"state: Waiting → InProgress", "Approved: False (WaitingForApproval) → True (Approved)", "approved by alice"}},
		{approved, approved, nil},
		{approved, "status: {}\n", []string{"state: InProgress → none", "Approved: removed"}},
	} {
		var before []byte
		if tt.before != "" {
			before = []byte(tt.before)
		}
		got, err := transitions(before, []byte(tt.after))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("transitions(%q, %q) (-want +got):\n%s", tt.before, tt.after, diff)
		}
	}
	if got, _ := transitions([]byte(waiting), nil); !cmp.Equal(got, []string{"deleted"}) {
		t.Errorf("a deleted file: %v", got)
	}
}

// TestPrintableWriter: control characters in what others wrote cannot
// drive the terminal; tabs and newlines pass.
func TestPrintableWriter(t *testing.T) {
	var b bytes.Buffer
	if _, err := (printableWriter{&b}).Write([]byte("ok\tline\n\x1b[2Jgone\x07\x7f")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("ok\tline\n^[[2Jgone^G^?", b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

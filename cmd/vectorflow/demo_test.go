package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestDemo runs `vectorflow demo --keep DIR` in-process: the narration
// tells every step, the kept clone's test overlay holds an approved
// promotion commit that git verify-commit accepts with the key the
// landscapes trust, stale candidates ended Superseded, and nothing is left
// in the temporary directory.
func TestDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	keep := filepath.Join(t.TempDir(), "acme")

	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"demo", "--keep", keep})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("vectorflow demo: %v\n%s", err, out.String())
	}
	narration := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`Assembled vector acme:\S+ from the registry: frontend 1\.2\.0, service-a 1\.0\.1, service-b 1\.1\.0\.`),
		regexp.MustCompile(`Promotion latest-to-dev-1 committed acme:\S+ into Stage dev/dev: commit [0-9a-f]{12}\.`),
		regexp.MustCompile(`Created promotion dev-to-test-\d+ of acme:\S+ from Stage dev/dev to Stage test/test: Waiting for approval\.`),
		regexp.MustCompile(`approved dev-to-test-\d+ \(acme:\S+ to test/test\) in signed commit [0-9a-f]{40}`),
		regexp.MustCompile(`Promotion dev-to-test-\d+ committed acme:\S+ into Stage test/test`),
		regexp.MustCompile(`Vectorflow-Promotion: dev-to-test-\d+\n\s+Vectorflow-Sequence: \d+`),
		regexp.MustCompile(`Approved-by: alice`),
		regexp.MustCompile(`CI pushes new tags \(round 3 of 3\)`),
		regexp.MustCompile(`Assembled vector acme:\S+ from the registry: frontend 1\.3\.0, service-a 1\.0\.3, service-b 1\.1\.0\.`),
		regexp.MustCompile(`Promotion dev-to-test-\d+ \(acme:\S+\) is Superseded by dev-to-test-\d+`),
		regexp.MustCompile(`COMMIT\s+STAGE\s+TIME\s+PROMOTION`),
		regexp.MustCompile(`test/test\s+\S+\s+dev-to-test-\d+\s+\d+\s+acme:\S+\s+alice\s+verified \(vectorflow\)\s+verified`),
		regexp.MustCompile(`Kept the repository in ` + regexp.QuoteMeta(keep)),
	} {
		if !want.MatchString(narration) {
			t.Errorf("the narration lacks %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("narration:\n%s", narration)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the demo left %v in its temporary directory", left)
	}

	// The newest commit to the test overlay is an approved promotion, signed
	// by the key the landscapes name as their signer.
	commit := strings.TrimSpace(testutil.Git(t, keep, nil, "log", "-1", "--format=%H", "--", "apps/overlays/test"))
	trailers := testutil.Git(t, keep, nil, "log", "-1", "--format=%(trailers:only,unfold)", commit)
	m := regexp.MustCompile(`Vectorflow-Promotion: (dev-to-test-\d+)`).FindStringSubmatch(trailers)
	if m == nil || !strings.Contains(trailers, "Approved-by: alice") {
		t.Fatalf("newest test overlay commit %s has trailers\n%s\nwant an approved dev-to-test promotion", commit, trailers)
	}
	key := signerKey(t, filepath.Join(keep, "vectorflow", "landscapes.yaml"))
	if out, err := testutil.GitVerifyCommit(keep, testutil.GPGHome(t, key), nil, commit); err != nil ||
		!strings.Contains(out, "Good signature") {
		t.Fatalf("git verify-commit %s: %v\n%s", commit, err, out)
	}

	// The kept clone carries the state branch: its promotions say the
	// approved one succeeded and the stale candidates were superseded.
	var list v1alpha1.VectorPromotionList
	cli := newRootCommand()
	var js bytes.Buffer
	cli.SetOut(&js)
	cli.SetArgs([]string{"get", "promotions", "-o", "json", "--repo", keep})
	if err := cli.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("vectorflow get promotions --repo %s: %v", keep, err)
	}
	if err := json.Unmarshal(js.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "List" {
		t.Fatalf("get -o json printed kind %q, want a List", list.Kind)
	}
	states := map[string]v1alpha1.PromotionState{}
	superseded := 0
	for _, p := range list.Items {
		states[p.Name] = p.Status.State
		if p.Status.State == v1alpha1.PromotionSuperseded {
			superseded++
		}
	}
	if states[m[1]] != v1alpha1.PromotionSucceeded {
		t.Errorf("%s, named by the test overlay's commit, is %q, want Succeeded (all: %v)", m[1], states[m[1]], states)
	}
	if superseded < 2 {
		t.Errorf("%d promotions ended Superseded, want the stale candidates of both approvals (all: %v)", superseded, states)
	}
}

// signerKey reads the first landscape signer's OpenPGP key from the kept
// repository, for gpg.
func signerKey(t *testing.T, file string) testutil.OpenPGPKey {
	t.Helper()
	docs := strings.Split(readFile(t, file), "\n---\n")
	var l v1alpha1.Landscape
	if err := yaml.Unmarshal([]byte(docs[len(docs)-1]), &l); err != nil || len(l.Spec.Signers) == 0 {
		t.Fatalf("%s: no landscape signer (%v)", file, err)
	}
	armored := l.Spec.Signers[0].PublicKey
	ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armored))
	if err != nil || len(ring) != 1 {
		t.Fatalf("%s: the signer's key is not one OpenPGP key: %v", file, err)
	}
	return testutil.OpenPGPKey{
		Email: l.Spec.Signers[0].Name, PublicArmored: []byte(armored),
		Fingerprint: strings.ToUpper(fmt.Sprintf("%x", ring[0].PrimaryKey.Fingerprint)),
	}
}

// TestBinaryLinksNoTestServer: the demo serves its throwaway repository
// with the git binary's own http-backend, so the release binary links no
// git server written for tests (and none of what such a server brings).
func TestBinaryLinksNoTestServer(t *testing.T) {
	// go test puts the go command that runs it first on PATH.
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("find the go command to list the binary's packages: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goCmd, "list", "-deps", "-f", "{{.ImportPath}}", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	testServers := []string{
		"github.com/fluxcd/pkg/gittestserver",
		"github.com/fluxcd/gitkit",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, server := range testServers {
			if pkg == server || strings.HasPrefix(pkg, server+"/") {
				t.Errorf("vectorflow links %s, a test server; the release binary must not carry one", pkg)
			}
		}
	}
}

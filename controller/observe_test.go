package controller

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestObserveHandsOverTheStateBranch: every pass is observed with the state
// branch as it left it, the files exactly those of the commit on the
// server, trusted under the controller's keys, and never changed after; a
// pass that decides nothing is observed as such; a pass that refuses the
// state branch hands over the refusal and no files.
func TestObserveHandsOverTheStateBranch(t *testing.T) {
	f := newRaceFixture(t)
	type seen struct {
		o     Observed
		files map[string][]byte // a copy made when observed
	}
	var passes []seen
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{
		Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: f.signer})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{URL: f.url, Branch: "main", Writer: w, Auth: f.auth, Observe: func(o Observed) {
		var files map[string][]byte
		if o.StateBranch != nil && o.StateBranch.Files != nil {
			files = map[string][]byte{}
			for p, b := range o.StateBranch.Files {
				files[p] = bytes.Clone(b)
			}
		}
		passes = append(passes, seen{o, files})
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	results, err := c.RunUntilStable(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	f.pushTemplateChange(t, "1.0.2", "1.0.3")
	more, err := c.RunUntilStable(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	results = append(results, more...)
	if len(passes) != len(results) {
		t.Fatalf("%d passes observed, %d run", len(passes), len(results))
	}
	repo, err := source.Open(f.url, f.auth(f.url))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Fetch(ctx, DefaultStateBranch); err != nil {
		t.Fatal(err)
	}
	for i, p := range passes {
		b := p.o.StateBranch
		if b == nil || !b.Verdict.Trusted || b.Signers != c.trust.Keys() || b.Refusal != "" || !p.o.Decided || p.o.Repository != f.url || p.o.Branch != "main" {
			t.Fatalf("pass %d observed as %+v", i, p.o)
		}
		if !results[i].Commit.IsZero() && b.Tip != results[i].Commit {
			t.Errorf("pass %d wrote %s, observed at %s", i, results[i].Commit, b.Tip)
		}
		want, err := readCommitFiles(repo, b.Tip)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, b.Files); diff != "" {
			t.Errorf("pass %d: the files observed are not those of %s (-want +got):\n%s", i, b.Tip, diff)
		}
		if diff := cmp.Diff(p.files, b.Files); diff != "" {
			t.Errorf("pass %d: the files observed changed after (-then +now):\n%s", i, diff)
		}
	}
	last := passes[len(passes)-1].o
	if last.StateBranch.Tip != f.stateTip(t) {
		t.Errorf("the last pass observed %s, the server's state branch is at %s", last.StateBranch.Tip, f.stateTip(t))
	}

	// Nothing changed: the pass decides nothing and says so.
	if _, err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	unchanged := passes[len(passes)-1].o
	if unchanged.Decided || unchanged.StateBranch == nil || unchanged.StateBranch.Tip != last.StateBranch.Tip ||
		unchanged.Snapshot.Commit != last.Snapshot.Commit || !maps.EqualFunc(unchanged.StateBranch.Files, last.StateBranch.Files, bytes.Equal) {
		t.Errorf("an unchanged pass observed as %+v", unchanged)
	}

	forgeStatePromotion(t, f.srv.HTTPURLWithCredentials("acme.git"))
	forged := f.stateTip(t)
	if _, err := c.Pass(ctx); !errors.Is(err, ErrUntrustedState) {
		t.Fatalf("a pass over a forged state branch: %v", err)
	}
	refused := passes[len(passes)-1].o
	if refused.Decided || refused.State != nil || refused.StateBranch == nil || refused.StateBranch.Tip != forged ||
		refused.StateBranch.Verdict.Trusted || refused.StateBranch.Files != nil || !strings.Contains(refused.StateBranch.Refusal, forged.String()[:12]) {
		t.Errorf("a refusing pass observed as %+v", refused)
	}
}

package controller

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"golang.org/x/crypto/ssh"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
)

// CountApprovals (pass.CountApprovals judges) is the one judge of what the
// approval files of a promotion add up to; the controller (before deciding)
// and audit (long after) both ask it.

// ApprovalEvidence is one approval file of a promotion with the commit that
// gave the file its content, whose signature says who approved.
type ApprovalEvidence struct {
	Path     string
	Approval *reconcilers.Approval
	Commit   *object.Commit
}

// ApprovalSubject is what approvals must be of: a promotion, its
// snapshotted vector, and its own config's approval policy (nil when the
// config is gone, so nobody is trusted).
type ApprovalSubject struct {
	Promotion string
	Vector    string
	Config    string
	Policy    *v1alpha1.ApprovalPolicy
	// Known are the approvers of every config, only to name the signer of
	// a refused approval ("signed by carol, who is not an approver of
	// dev-to-test"); they never make an approval count.
	Known []gitwriter.TrustedKey
}

// CountApprovals checks the signature of each approval file's commit
// against the keys of the config's approvers and lets pass.CountApprovals
// judge what the files add up to.
func CountApprovals(s ApprovalSubject, evidence []ApprovalEvidence) pass.ApprovalCount {
	subject, checked := checkApprovalSignatures(s, evidence)
	return pass.CountApprovals(subject, checked)
}

// checkApprovalSignatures gathers the facts pass.CountApprovals judges: each
// commit's identity and its signature checked against the approvers of the
// subject's config (and, to name a stranger, against every config's).
func checkApprovalSignatures(s ApprovalSubject, evidence []ApprovalEvidence) (pass.ApprovalSubject, []pass.ApprovalEvidence) {
	subject := pass.ApprovalSubject{Promotion: s.Promotion, Vector: s.Vector, Config: s.Config, Policy: s.Policy}
	var approvers []v1alpha1.Approver
	if s.Policy != nil {
		approvers = s.Policy.Approvers
	}
	keys := make([]gitwriter.TrustedKey, 0, len(approvers))
	for _, a := range approvers {
		keys = append(keys, gitwriter.TrustedKey{Name: a.Name, PublicKey: a.PublicKey})
	}
	verifier, verifierErr := gitwriter.NewVerifier(keys)
	if verifierErr != nil {
		subject.ApproversProblem = verifierErr.Error()
	}
	verify := s.Policy != nil && len(approvers) > 0 && verifierErr == nil
	var known *gitwriter.Verifier
	out := make([]pass.ApprovalEvidence, 0, len(evidence))
	for _, e := range evidence {
		checked := pass.ApprovalEvidence{Path: e.Path, Approval: e.Approval}
		if e.Commit == nil {
			out = append(out, checked)
			continue
		}
		c := &pass.ApprovalCommit{Hash: e.Commit.Hash.String(), AuthorName: e.Commit.Author.Name, AuthorEmail: e.Commit.Author.Email,
			CommittedAt: e.Commit.Committer.When}
		checked.Commit = c
		out = append(out, checked)
		if !verify {
			continue
		}
		signer, err := verifier.VerifyCommit(e.Commit)
		switch {
		case err == nil:
			c.Signature = pass.ApprovalSignature{Outcome: pass.SignatureVerified, Signer: signer}
		case errors.Is(err, gitwriter.ErrUnsigned):
			c.Signature = pass.ApprovalSignature{Outcome: pass.SignatureMissing}
		case errors.Is(err, gitwriter.ErrUnknownSigner):
			c.Signature = pass.ApprovalSignature{Outcome: pass.SignatureUnknownKey}
			if known == nil {
				known, _ = gitwriter.NewVerifier(s.Known)
			}
			if known != nil {
				if name, err := known.VerifyCommit(e.Commit); err == nil {
					c.Signature.KnownAs = name
				}
			}
		default:
			c.Signature = pass.ApprovalSignature{Outcome: pass.SignatureBad, Problem: err.Error()}
		}
	}
	return subject, out
}

// ApprovalFiles groups the approval files of a state by the promotion whose
// place they lie in; strays are the files that lie in no promotion's place.
func ApprovalFiles(approvals map[string]*reconcilers.Approval) (byPromotion map[string][]string, strays []string) {
	byPromotion = map[string][]string{}
	for _, p := range keys.Sorted(approvals) {
		name, ok := reconcilers.ApprovalPromotion(p)
		if !ok {
			strays = append(strays, p)
			continue
		}
		byPromotion[name] = append(byPromotion[name], p)
	}
	return byPromotion, strays
}

// countApprovals counts the approvals of every promotion that is still
// waiting for them. Files of other promotions, and files in no promotion's
// place, are not looked at (a stray is noted in the log).
func (c *Controller) countApprovals(ctx context.Context, snap *source.Snapshot, state *reconcilers.State, tip plumbing.Hash) (map[string]pass.ApprovalCount, error) {
	byPromotion, strays := ApprovalFiles(state.Approvals)
	for _, p := range strays {
		c.opts.Log.Info("approval file skipped: an approval lies at approvals/<promotion>/<file>.yaml", "file", p)
	}
	wanted := map[string][]string{}
	for _, name := range keys.Sorted(byPromotion) {
		files := byPromotion[name]
		p := state.Promotions[name]
		if p == nil {
			// Left behind by a promotion that was cleaned up, or misplaced:
			// a file naming another promotion than its place is said so.
			for _, f := range files {
				if a := state.Approvals[f]; a.Problem != "" || a.Promotion != name {
					c.opts.Log.Info("approval file skipped: it is not an approval of the promotion its place names",
						"file", f, "names", a.Promotion, "problem", a.Problem)
				}
			}
			continue
		}
		if !p.Spec.RequireApproval || p.Status.Approval != nil || reconcilers.IsTerminal(reconcilers.DeriveState(p)) {
			continue
		}
		wanted[name] = files
	}
	if len(wanted) == 0 {
		return nil, nil
	}
	s, err := c.stateHistory(ctx, tip)
	if err != nil {
		return nil, err
	}
	evidence, err := approvalEvidence(s, tip, state.Approvals, wanted, &c.evidence)
	if err != nil {
		return nil, err
	}
	known := allApprovers(snap)
	counts := make(map[string]pass.ApprovalCount, len(wanted))
	for name := range wanted {
		p := state.Promotions[name]
		counts[name] = CountApprovals(subjectOf(snap, p.Name, p.Spec.VectorPromotionConfigName, p.Spec.Vector, known), evidence[name])
	}
	return counts, nil
}

// subjectOf is what approvals of promotion must be of, with the approval
// policy of its config in snap.
func subjectOf(snap *source.Snapshot, promotion, config, vector string, known []gitwriter.TrustedKey) ApprovalSubject {
	s := ApprovalSubject{Promotion: promotion, Vector: vector, Config: config, Known: known}
	if cfg := snap.Configs[config]; cfg != nil {
		s.Policy = cfg.Spec.Approval
		if s.Policy == nil {
			s.Policy = &v1alpha1.ApprovalPolicy{}
		}
	}
	return s
}

// allApprovers are the approvers of every config, one entry per key.
func allApprovers(snap *source.Snapshot) []gitwriter.TrustedKey {
	var keys []gitwriter.TrustedKey
	seen := map[string]bool{}
	for _, name := range snap.ConfigNames() {
		a := snap.Configs[name].Spec.Approval
		if a == nil {
			continue
		}
		for _, ap := range a.Approvers {
			if !seen[ap.PublicKey] {
				seen[ap.PublicKey] = true
				keys = append(keys, gitwriter.TrustedKey{Name: ap.Name, PublicKey: ap.PublicKey})
			}
		}
	}
	return keys
}

// evidenceCache remembers where the last walk found each file's origin, so
// the next pass walks only the commits added since: reaching the tip it
// remembers, a file with the same content there has the same origin. It is
// never trusted past a rewrite: a tip not on the new first-parent history is
// simply never reached.
type evidenceCache struct {
	tip     plumbing.Hash
	origins map[string]cachedOrigin
}

type cachedOrigin struct {
	blob   plumbing.Hash
	commit *object.Commit
}

// approvalEvidence finds, for each wanted file, the commit that gave it the
// content it has at tip, in one walk down the first-parent history that
// ends as soon as every file's origin is found. It is complete: there is no
// depth bound past which a file would be taken on trust. cache may be nil.
func approvalEvidence(s storer.EncodedObjectStorer, tip plumbing.Hash, approvals map[string]*reconcilers.Approval, wanted map[string][]string, cache *evidenceCache) (map[string][]ApprovalEvidence, error) {
	commit, err := object.GetCommit(s, tip)
	if err != nil {
		return nil, fmt.Errorf("read state commit %s: %w", tip, err)
	}
	open := map[string]plumbing.Hash{} // file → its blob at tip
	for _, files := range wanted {
		for _, f := range files {
			h, err := blobAt(commit, f)
			if err != nil {
				return nil, err
			}
			if h.IsZero() {
				return nil, fmt.Errorf("approval file %s is not in state commit %s", f, v1alpha1.ShortCommit(tip.String()))
			}
			open[f] = h
		}
	}
	blobs := make(map[string]plumbing.Hash, len(open))
	for f, h := range open {
		blobs[f] = h
	}
	origin := map[string]*object.Commit{}
	for len(open) > 0 {
		if cache != nil && commit.Hash == cache.tip {
			for f, blob := range open {
				if o, ok := cache.origins[f]; ok && o.blob == blob {
					origin[f] = o.commit
					delete(open, f)
				}
			}
			if len(open) == 0 {
				break
			}
		}
		var parent *object.Commit
		if commit.NumParents() > 0 {
			if parent, err = commit.Parent(0); err != nil {
				return nil, fmt.Errorf("read the history of state commit %s: %w", v1alpha1.ShortCommit(commit.Hash.String()), err)
			}
		}
		same, err := sameApprovalsTree(commit, parent)
		if err != nil {
			return nil, err
		}
		for f, blob := range open {
			if same {
				continue
			}
			var before plumbing.Hash
			if parent != nil {
				if before, err = blobAt(parent, f); err != nil {
					return nil, err
				}
			}
			if before != blob {
				origin[f] = commit
				delete(open, f)
			}
		}
		if parent == nil {
			break
		}
		commit = parent
	}
	if cache != nil {
		if cache.tip != tip || cache.origins == nil {
			cache.tip, cache.origins = tip, make(map[string]cachedOrigin, len(origin))
		}
		for f, c := range origin {
			cache.origins[f] = cachedOrigin{blob: blobs[f], commit: c}
		}
	}
	out := map[string][]ApprovalEvidence{}
	for name, files := range wanted {
		for _, f := range files {
			out[name] = append(out[name], ApprovalEvidence{Path: f, Approval: approvals[f], Commit: origin[f]})
		}
	}
	return out, nil
}

// sameApprovalsTree reports whether commit left approvals/ as its parent had
// it, so the walk past a commit that touched only promotions is one lookup.
func sameApprovalsTree(commit, parent *object.Commit) (bool, error) {
	if parent == nil {
		return false, nil
	}
	a, err := treeEntry(commit, reconcilers.ApprovalsDir)
	if err != nil {
		return false, err
	}
	b, err := treeEntry(parent, reconcilers.ApprovalsDir)
	if err != nil {
		return false, err
	}
	return a == b, nil
}

func treeEntry(c *object.Commit, p string) (plumbing.Hash, error) {
	tree, err := c.Tree()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read tree of %s: %w", c.Hash, err)
	}
	e, err := tree.FindEntry(p)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s at %s: %w", p, c.Hash, err)
	}
	return e.Hash, nil
}

func blobAt(c *object.Commit, file string) (plumbing.Hash, error) {
	return treeEntry(c, file)
}

// approvalTrailers are the Approved-by/Approved-at pairs of a promotion
// commit: every counted approver, or the one approval of a pull request.
func approvalTrailers(p *v1alpha1.VectorPromotion) []gitwriter.TrailerApproval {
	records := p.Status.Approvals
	if len(records) == 0 && p.Status.Approval != nil {
		records = []v1alpha1.ApprovalRecord{*p.Status.Approval}
	}
	out := make([]gitwriter.TrailerApproval, 0, len(records))
	for _, r := range records {
		out = append(out, gitwriter.TrailerApproval{By: r.ApprovedBy, At: r.ApprovedAt.Time})
	}
	return out
}

// ApproverKeyIDs are the short, stable fingerprints of the keys in an
// approver's publicKey (an OpenPGP block may hold several): the SHA-256 of
// an SSH key's wire form, or an OpenPGP primary key's fingerprint, 16 hex
// digits. approve names its files with the signer's, so a person can find
// their own; they decide nothing, the signature does.
func ApproverKeyIDs(publicKey string) ([]string, error) {
	pub := strings.TrimSpace(publicKey)
	if strings.Contains(pub, "-----BEGIN PGP PUBLIC KEY BLOCK-----") {
		entities, err := openpgp.ReadArmoredKeyRing(strings.NewReader(pub))
		if err != nil {
			return nil, fmt.Errorf("not a valid armored OpenPGP public key: %w", err)
		}
		ids := make([]string, 0, len(entities))
		for _, e := range entities {
			fp := hex.EncodeToString(e.PrimaryKey.Fingerprint)
			ids = append(ids, fp[len(fp)-16:])
		}
		return ids, nil
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(pub))
	if err != nil {
		return nil, fmt.Errorf("neither an armored OpenPGP public key nor an SSH public key line: %w", err)
	}
	sum := sha256.Sum256(key.Marshal())
	return []string{hex.EncodeToString(sum[:8])}, nil
}

// NewApprovalPath is a fresh file for one approval of promotion by the key
// keyID: its time and a random part make it unique, so an approval never
// overwrites another, not even the same approver's.
func NewApprovalPath(promotion, keyID string, now time.Time) (string, error) {
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("make a unique approval file name: %w", err)
	}
	name := fmt.Sprintf("%s-%s-%s.yaml", keyID, now.UTC().Format("20060102T150405Z"), hex.EncodeToString(r[:]))
	return path.Join(reconcilers.ApprovalDir(promotion), name), nil
}

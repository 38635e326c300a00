package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source"
)

// describeField is one line of describe: a label and its value, or a label
// and indented lines under it.
type describeField struct {
	label, value string
	lines        []string
}

func newDescribeCommand() *cobra.Command {
	var (
		rf         repoFlags
		trusted    []string
		unverified bool
	)
	cmd := &cobra.Command{
		Use:   "describe KIND NAME --repo URL",
		Short: "Show one object in detail, with its conditions and its transitions",
		Long: `describe shows one object as kubectl describe does: what it is (a
promotion's snapshot: config, source, target, vector, sequence; its
approvals), its conditions with their reasons and times, and its transitions,
read from the history of the state branch: every state commit that changed
the object, oldest first, with its time, the commit and what changed (state,
vectors, conditions, approvals). The state branch is checked as get checks
it (--trust, --unverified).`,
		Example: `  vectorflow describe vp dev-to-test-3 --repo $REPO --trust controller.pub
  vectorflow describe stage test --repo $REPO`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeKindAndName(&rf),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := lookupGetKind(args[0])
			if err != nil {
				return err
			}
			r, err := newStateReader(cmd, &rf, trusted, unverified)
			if err != nil {
				return err
			}
			view, err := r.read(cmd.Context())
			if err != nil {
				return err
			}
			obj, err := findObject(kind, kind.list(view.input(time.Now())), args[1])
			if err != nil {
				return r.notFound(view, err)
			}
			var revs []stateRevision
			if obj.path != "" {
				if revs, err = fileRevisions(view.repo.Storer(), view.tip, obj.path); err != nil {
					return fmt.Errorf("read the history of %s on the state branch %s: %w", obj.path, rf.stateBranch, err)
				}
			}
			return printDescription(cmd.OutOrStdout(), kind, obj, revs, view, rf.stateBranch)
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	cmd.Flags().StringArrayVar(&trusted, "trust", nil, "file holding the public key of a trusted state signer: the controller's, or another controller's of the same state branch (repeatable)")
	cmd.Flags().BoolVar(&unverified, "unverified", false, "show a state branch that does not verify, marked")
	return cmd
}

// printDescription writes the description of obj: its fields, its
// conditions and its transitions (revs newest first, as read).
func printDescription(w io.Writer, kind getKind, obj getObject, revs []stateRevision, view stateRead, stateBranch string) error {
	w = printableWriter{w}
	fields := []describeField{{label: "Name", value: obj.name}, {label: "Kind", value: kind.resource.Kind}}
	if kind.describe != nil {
		fields = append(fields, kind.describe(obj)...)
	}
	if obj.path != "" {
		file := obj.path + " on " + stateBranch
		if !view.verdict.Trusted && (view.unverified[obj.path]) {
			file += " (changed since the last trusted state commit: unverified)"
		}
		fields = append(fields, describeField{label: "State file", value: file})
	}
	width := 0
	for _, f := range fields {
		width = max(width, len(f.label)+1)
	}
	for _, f := range fields {
		value := f.value
		if f.lines != nil {
			value = orNone(value, len(f.lines))
		}
		fmt.Fprintf(w, "%-*s  %s\n", width, f.label+":", value)
		for _, l := range f.lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintln(w, "Conditions:")
	if len(obj.conditions) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  Type\tStatus\tReason\tLast Transition\tMessage")
		for _, c := range obj.conditions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, formatTime(c.LastTransitionTime), oneLine(c.Message))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "Transitions:")
	lines, err := transitionLines(revs)
	if err != nil {
		return err
	}
	if len(lines) == 0 {
		fmt.Fprintln(w, "  <none>")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  Time\tCommit\tChange")
	for _, l := range lines {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", l[0], l[1], l[2])
	}
	return tw.Flush()
}

// transitionLines are the rows of the transitions table, oldest first:
// time, commit and one change a row (the time and commit on the first row
// of a commit only).
func transitionLines(revs []stateRevision) ([][3]string, error) {
	var out [][3]string
	for i := len(revs) - 1; i >= 0; i-- {
		var before []byte
		if i+1 < len(revs) {
			before = revs[i+1].Content
		}
		changes, err := transitions(before, revs[i].Content)
		if err != nil {
			return nil, fmt.Errorf("state commit %s: %w", revs[i].Commit, err)
		}
		if len(changes) == 0 {
			changes = []string{"(" + oneLine(revs[i].Subject) + ")"}
		}
		for j, c := range changes {
			row := [3]string{"", "", c}
			if j == 0 {
				row[0], row[1] = revs[i].When.UTC().Format(time.RFC3339), v1alpha1.ShortCommit(revs[i].Commit.String())
			}
			out = append(out, row)
		}
	}
	return out, nil
}

func describePromotion(o getObject) []describeField {
	p := o.object.(*v1alpha1.VectorPromotion)
	fields := []describeField{
		{label: "Config", value: p.Spec.VectorPromotionConfigName},
		{label: "Sequence", value: fmt.Sprint(p.Spec.Sequence)},
		{label: "Source", value: p.Spec.Source.Describe()},
		{label: "Target", value: p.Spec.Target.Describe()},
		{label: "Vector", value: p.Spec.Vector},
		{label: "Requires approval", value: fmt.Sprint(p.Spec.RequireApproval)},
		{label: "State", value: o.fields[filterState]},
		{label: "Commit", value: orDash(p.Status.Commit)},
	}
	if pr := p.Status.PullRequest; pr != nil {
		fields = append(fields, describeField{label: "Pull request", value: fmt.Sprintf("#%d %s (%s, branch %s)", pr.Number, pr.URL, orDash(pr.State), pr.Branch)})
	}
	approvals := describeField{label: "Approvals", lines: []string{}}
	records := p.Status.Approvals
	if len(records) == 0 && p.Status.Approval != nil {
		records = []v1alpha1.ApprovalRecord{*p.Status.Approval}
	}
	for _, a := range records {
		line := a.ApprovedBy + " at " + formatTime(a.ApprovedAt)
		if a.Commit != "" {
			line += ", signed state commit " + v1alpha1.ShortCommit(a.Commit)
		} else {
			line += ", by pull request review"
		}
		approvals.lines = append(approvals.lines, line)
	}
	return append(fields, approvals)
}

func describeConfig(o getObject) []describeField {
	c := o.object.(*v1alpha1.VectorPromotionConfig)
	approval := "automatic"
	if c.RequireApproval() {
		approval = fmt.Sprintf("required, %d of these approvers:", c.Spec.Approval.RequiredApprovals())
	}
	approvers := describeField{label: "Approval", value: approval, lines: []string{}}
	if a := c.Spec.Approval; a != nil {
		for _, ap := range a.Approvers {
			approvers.lines = append(approvers.lines, ap.Name)
		}
		if a.PullRequest != nil {
			approvers.lines = append(approvers.lines, "a pull request review on "+a.PullRequest.Forge)
		}
	}
	delay := "-"
	if c.Spec.UpdateDelay != nil {
		delay = c.Spec.UpdateDelay.Duration.String()
	}
	fields := []describeField{
		{label: "Source", value: c.Spec.Source.Describe()},
		{label: "Target", value: c.Spec.Target.Describe()},
		approvers,
		{label: "Update delay", value: delay},
		{label: "Sequence", value: fmt.Sprint(c.Status.Sequence)},
		{label: "Source vector", value: orDash(c.Status.SourceVector) + sinceText(c.Status.SourceVectorSince)},
		{label: "Target vector", value: orDash(c.Status.TargetVector)},
	}
	history := describeField{label: "Promotion history", lines: []string{}}
	for _, h := range c.Status.PromotionHistory {
		history.lines = append(history.lines, fmt.Sprintf("%s %s %s %s at %s", h.Promotion, h.Vector, h.State, h.Reason, formatTime(h.FinishedAt)))
	}
	return append(fields, history)
}

func describeStage(o getObject) []describeField {
	s := o.object.(*v1alpha1.Stage)
	deployment := "- (what the overlay names counts as active)"
	if d := s.Spec.Deployment; d != nil {
		deployment = fmt.Sprintf("%s %s/%s", d.Kind, d.Namespace, d.Name)
	}
	return []describeField{
		{label: "Landscape", value: s.Spec.Landscape},
		{label: "Path", value: orDash(s.Spec.Path)},
		{label: "Deployment", value: deployment},
		{label: "Vector", value: orDash(s.Status.Vector) + sinceText(s.Status.VectorSince)},
		{label: "Active vector", value: orDash(s.Status.ActiveVector) + sinceText(s.Status.ActiveSince)},
		{label: "Active revision", value: orDash(s.Status.ActiveRevision)},
		{label: "Read at commit", value: orDash(s.Status.Commit)},
	}
}

func describeVector(o getObject) []describeField {
	v := o.object.(*v1alpha1.Vector)
	comps := describeField{label: "Components", lines: []string{}}
	for _, c := range v.Spec.Components {
		comps.lines = append(comps.lines, componentLine(c.Name, c.Image, orDash(c.Tag), c.Digest))
	}
	return []describeField{
		{label: "Template", value: v.Spec.Template},
		{label: "Version", value: v.Spec.Version},
		{label: "Digest", value: v.Spec.Digest},
		comps,
	}
}

func describeTemplate(o getObject) []describeField {
	t := o.object.(*v1alpha1.VectorTemplate)
	comps := describeField{label: "Components", lines: []string{}}
	for _, c := range t.Spec.Components {
		comps.lines = append(comps.lines, componentLine(c.Name, c.Image, orDash(c.Version), ""))
	}
	return []describeField{comps, {label: "Latest vector", value: orDash(t.Status.LatestVector) + sinceText(t.Status.LatestVectorSince)}}
}

func describeLandscape(o getObject) []describeField {
	l := o.object.(*v1alpha1.Landscape)
	repo, branch := "(the config repository)", "(the config branch)"
	if r := l.Spec.Repository; r != nil {
		repo = source.RedactURL(r.URL)
		if r.Branch != "" {
			branch = r.Branch
		}
	}
	signers := describeField{label: "Signers", lines: []string{}}
	for _, s := range l.Spec.Signers {
		signers.lines = append(signers.lines, s.Name)
	}
	return []describeField{{label: "Repository", value: repo}, {label: "Branch", value: branch},
		{label: "Path", value: orDash(l.Spec.Path)}, signers}
}

func componentLine(name, image, version, digest string) string {
	line := name
	if image != "" && image != name {
		line += " (" + image + ")"
	}
	line += " " + version
	if digest != "" {
		line += " " + digest
	}
	return line
}

func sinceText(t *metav1.Time) string {
	if t == nil {
		return ""
	}
	return " since " + formatTime(*t)
}

func formatTime(t metav1.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// oneLine keeps a message on its row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func orNone(value string, lines int) string {
	if value == "" && lines == 0 {
		return "<none>"
	}
	return value
}

// printableWriter shows control characters other than tabs and newlines
// as ^X, as kubectl does: what describe and diff print comes from files
// others wrote (a message, a name), and must not drive the terminal.
type printableWriter struct{ w io.Writer }

func (p printableWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, c := range b {
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			out = append(out, '^', c^0x40)
			continue
		}
		out = append(out, c)
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

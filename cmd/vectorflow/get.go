package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/source"
)

// getKinds are the kinds get, describe and completion know, each with its
// columns and how its objects are read. A new kind registers here with one
// line, its listing in a file of its own (get_stageversions.go:
// stageVersionKind() and stageVersionUsageKind(), aliased "usages"); its
// names come from v1alpha1.Resources, where sv and svu already are.
func getKinds() []getKind {
	return []getKind{
		promotionKind(),
		configKind(),
		vectorKind(),
		stageKind(),
		templateKind(),
		landscapeKind(),
		stageVersionKind(),
		stageVersionUsageKind(),
	}
}

// getKind is one kind as get lists it.
type getKind struct {
	resource v1alpha1.Resource
	// aliases are more words for the kind, as the README uses them
	// (promotions, configs).
	aliases []string
	// nameColumn heads the first column (default NAME).
	nameColumn string
	// columns follow the name; one with Priority 1 shows with -o wide only.
	columns []metav1.TableColumnDefinition
	// filters are the filter flags that apply: filterConfig, filterStage,
	// filterState.
	filters []string
	list    func(in getInput) []getObject
	// describe are the lines `describe` shows above the conditions.
	describe func(o getObject) []describeField
}

// The filter flags of get.
const (
	filterConfig = "config"
	filterStage  = "stage"
	filterState  = "state"
)

// getInput is what get reads objects from.
type getInput struct {
	snap  *source.Snapshot
	state *reconcilers.State
	now   time.Time
}

// getObject is one object as get shows it.
type getObject struct {
	// name is the NAME column and what `get KIND NAME` matches; alias is
	// another name that matches (a vector's metadata.name).
	name, alias string
	// path is its file on the state branch, "" when it has none.
	path string
	// object is what -o json|yaml|name|jsonpath print, kind set.
	object runtime.Object
	// cells follow the name, in the kind's column order.
	cells []any
	// fields are what the filters match.
	fields map[string]string
	// conditions are what describe lists.
	conditions []metav1.Condition
}

// names are every word a kind is known by.
func (k getKind) names() []string { return append(k.resource.Names(), k.aliases...) }

// lookupGetKind finds the kind a word on the command line means.
func lookupGetKind(word string) (getKind, error) {
	for _, k := range getKinds() {
		if slices.Contains(k.names(), strings.ToLower(word)) {
			return k, nil
		}
	}
	if r, ok := v1alpha1.ResourceFor(word); ok {
		return getKind{}, fmt.Errorf("vectorflow does not list %s from the state branch yet", r.Plural)
	}
	return getKind{}, fmt.Errorf("unknown kind %q: use one of %s", word, strings.Join(kindWords(), ", "))
}

// kindWords are the kinds' plurals and short names, for help and errors.
func kindWords() []string {
	var out []string
	for _, k := range getKinds() {
		w := k.resource.Plural
		if len(k.aliases) > 0 {
			w = k.aliases[0]
		}
		out = append(out, fmt.Sprintf("%s (%s)", w, strings.Join(k.resource.ShortNames, ", ")))
	}
	return out
}

type getOptions struct {
	rf            repoFlags
	output        string
	trusted       []string
	unverified    bool
	config, stage string
	state         string
	watch         bool
	watchInterval time.Duration
}

func newGetCommand() *cobra.Command {
	var o getOptions
	cmd := &cobra.Command{
		Use:   "get KIND [NAME] --repo URL",
		Short: "List vectorflow's objects, or show one, from the state branch",
		Long: `get lists the objects of a kind, or the one named, as kubectl get does:
promotions (vp), configs (vpc), vectors (vec), stages (st), templates (vt) and
landscapes (ls). Runtime objects and statuses come from the state branch,
specs from the config repository.

get reads the state branch and checks its whole history the way the
controller does, against the keys it knows: each Landscape's spec.signers and
the --trust keys. When a commit that no trusted key signed changed more than
approvals and promotion requests, get refuses and names it; with --unverified
it shows the state anyway, with VERIFIED=no on every object changed since the
last trusted commit.

AGE is the time since the state commit that added the object. With --watch,
get keeps reading the state branch and prints each object again when it
changes, until interrupted.`,
		Example: `  vectorflow get vp --repo $REPO --trust controller.pub
  vectorflow get promotions --state Waiting --config dev-to-test --repo $REPO
  vectorflow get vp dev-to-test-3 -o jsonpath='{.status.state}' --repo $REPO
  vectorflow get stages -o wide --watch --repo $REPO`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeKindAndName(&o.rf),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd, o, args)
		},
	}
	f := cmd.Flags()
	o.rf.register(f)
	o.rf.registerStateBranch(f)
	f.StringVarP(&o.output, "output", "o", "", "output format: "+outputFormats+" (default: a table)")
	f.StringArrayVar(&o.trusted, "trust", nil, "file holding the public key of a trusted state signer: the controller's, or another controller's of the same state branch (repeatable)")
	f.BoolVar(&o.unverified, "unverified", false, "show a state branch that does not verify, with VERIFIED=no on what changed since its last trusted commit")
	f.StringVar(&o.config, filterConfig, "", "only objects of this VectorPromotionConfig (promotions, configs)")
	f.StringVar(&o.stage, filterStage, "", "only objects of this stage, NAME or LANDSCAPE/NAME: promotions into it, configs targeting it, the stage")
	f.StringVar(&o.state, filterState, "", "only promotions in this state: Waiting, InProgress, Succeeded, Failed or Superseded")
	f.BoolVarP(&o.watch, "watch", "w", false, "after listing, keep reading the state branch and print objects as they change")
	f.DurationVar(&o.watchInterval, "watch-interval", 2*time.Second, "how often --watch fetches the state branch")
	_ = cmd.RegisterFlagCompletionFunc(filterConfig, completeNames(&o.rf, "configs"))
	_ = cmd.RegisterFlagCompletionFunc(filterStage, completeNames(&o.rf, "stages"))
	_ = cmd.RegisterFlagCompletionFunc(filterState, cobra.FixedCompletions(promotionStateNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"wide", "name", "json", "yaml", "jsonpath="}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func promotionStateNames() []string {
	return []string{string(v1alpha1.PromotionWaiting), string(v1alpha1.PromotionInProgress), string(v1alpha1.PromotionSucceeded),
		string(v1alpha1.PromotionFailed), string(v1alpha1.PromotionSuperseded)}
}

func runGet(cmd *cobra.Command, o getOptions, args []string) error {
	kind, err := lookupGetKind(args[0])
	if err != nil {
		return err
	}
	filters, err := o.filters(kind)
	if err != nil {
		return err
	}
	if o.watch && o.watchInterval <= 0 {
		return fmt.Errorf("--watch-interval %s: give a positive duration, such as 2s", o.watchInterval)
	}
	format, err := parseOutputFormat(o.output)
	if err != nil {
		return err
	}
	printer, err := format.printer()
	if err != nil {
		return err
	}
	r, err := newStateReader(cmd, &o.rf, o.trusted, o.unverified)
	if err != nil {
		return err
	}
	view, err := r.read(cmd.Context())
	if err != nil {
		return err
	}
	name := ""
	if len(args) == 2 {
		name = args[1]
	}
	objs := selectObjects(kind.list(view.input(time.Now())), filters)
	if name != "" {
		obj, err := findObject(kind, objs, name)
		if err != nil {
			return r.notFound(view, err)
		}
		objs = []getObject{obj}
	}
	out := cmd.OutOrStdout()
	if view.tip.IsZero() {
		fmt.Fprintln(cmd.ErrOrStderr(), r.neverReconciled())
	}
	if len(objs) == 0 && !format.structured() && !view.tip.IsZero() {
		fmt.Fprintf(cmd.ErrOrStderr(), "No %s found.\n", kind.resource.Plural)
	}
	if err := printGet(out, printer, format, kind, view, objs, name != ""); err != nil {
		return err
	}
	if !o.watch {
		return nil
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return watchGet(ctx, r, o.watchInterval, view, func(next stateRead) error {
		changed := changedObjects(objs, next, kind, filters, name)
		objs = selectObjects(kind.list(next.input(time.Now())), filters)
		if len(changed) == 0 {
			return nil
		}
		return printGet(out, printer, format, kind, next, changed, true)
	})
}

// filters checks the filter flags against the kind.
func (o getOptions) filters(kind getKind) (map[string]string, error) {
	out := map[string]string{}
	for flag, value := range map[string]string{filterConfig: o.config, filterStage: o.stage, filterState: o.state} {
		if value == "" {
			continue
		}
		if !slices.Contains(kind.filters, flag) {
			return nil, fmt.Errorf("--%s does not apply to %s", flag, kind.resource.Plural)
		}
		out[flag] = value
	}
	if o.state != "" && !slices.Contains(promotionStateNames(), o.state) {
		return nil, fmt.Errorf("--state %q is not a promotion state: use %s", o.state, strings.Join(promotionStateNames(), ", "))
	}
	return out, nil
}

// selectObjects keeps the objects every filter matches.
func selectObjects(objs []getObject, filters map[string]string) []getObject {
	var out []getObject
	for _, obj := range objs {
		ok := true
		for flag, want := range filters {
			got := obj.fields[flag]
			if flag == filterStage {
				ok = ok && stageMatches(want, got)
			} else {
				ok = ok && got == want
			}
		}
		if ok {
			out = append(out, obj)
		}
	}
	return out
}

// stageMatches reports whether a stage given as NAME or LANDSCAPE/NAME
// names the stage whose key (LANDSCAPE/NAME) is key.
func stageMatches(given, key string) bool {
	return key != "" && (given == key || strings.HasSuffix(key, "/"+given))
}

// findObject picks the object name names.
func findObject(kind getKind, objs []getObject, name string) (getObject, error) {
	var found []getObject
	for _, obj := range objs {
		if obj.name == name || (obj.alias != "" && obj.alias == name) {
			return obj, nil
		}
		if kind.resource.Kind == v1alpha1.StageKind && stageMatches(name, obj.name) {
			found = append(found, obj)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return getObject{}, fmt.Errorf("%s %q not found", kind.resource.Singular, name)
	}
	var keys []string
	for _, f := range found {
		keys = append(keys, f.name)
	}
	return getObject{}, fmt.Errorf("%s %q is ambiguous: name one of %s", kind.resource.Singular, name, strings.Join(keys, ", "))
}

// printGet prints objs as format says: a table with an AGE column (and
// VERIFIED when the state does not verify), or the objects.
func printGet(w io.Writer, printer interface {
	PrintObj(runtime.Object, io.Writer) error
}, format outputFormat, kind getKind, view stateRead, objs []getObject, single bool) error {
	if format.structured() {
		list := make([]runtime.Object, 0, len(objs))
		for _, o := range objs {
			list = append(list, o.object)
		}
		return printObjects(printer, w, list, single)
	}
	paths := make([]string, 0, len(objs))
	for _, o := range objs {
		paths = append(paths, o.path)
	}
	created, err := creationTimes(view.repo.Storer(), view.tip, paths)
	if err != nil {
		return fmt.Errorf("read the history of the state branch: %w", err)
	}
	nameColumn := kind.nameColumn
	if nameColumn == "" {
		nameColumn = "Name"
	}
	t := &metav1.Table{ColumnDefinitions: append(append([]metav1.TableColumnDefinition{{Name: nameColumn, Type: "string"}},
		kind.columns...), metav1.TableColumnDefinition{Name: "Age", Type: "string"})}
	if !view.verdict.Trusted {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: "Verified", Type: "string"})
	}
	now := time.Now()
	for _, o := range objs {
		age := "<unknown>"
		if c, ok := created[o.path]; ok {
			age = duration.HumanDuration(now.Sub(c))
		}
		cells := append(append([]any{o.name}, o.cells...), age)
		if !view.verdict.Trusted {
			mark := "yes"
			if o.path == "" || view.unverified[o.path] {
				mark = "no"
			}
			cells = append(cells, mark)
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return printer.PrintObj(t, w)
}

// changedObjects are the objects of next that differ from before (or are
// new), as the filters and name select them.
func changedObjects(before []getObject, next stateRead, kind getKind, filters map[string]string, name string) []getObject {
	old := map[string]string{}
	for _, o := range before {
		old[o.name] = string(mustJSON(o.object))
	}
	var out []getObject
	for _, o := range selectObjects(kind.list(next.input(time.Now())), filters) {
		if name != "" && o.name != name && o.alias != name {
			continue
		}
		if prev, ok := old[o.name]; !ok || prev != string(mustJSON(o.object)) {
			out = append(out, o)
		}
	}
	return out
}

// watchGet reads the state branch every interval and calls changed with
// what it read whenever its tip moved, until ctx ends.
func watchGet(ctx context.Context, r *stateReader, interval time.Duration, last stateRead, changed func(stateRead) error) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		tip, err := r.tip(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if tip == last.tip {
			continue
		}
		next, err := r.read(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if err := changed(next); err != nil {
			return err
		}
		last = next
	}
}

// stateReader reads the config repository and its state branch the way
// the controller does, for get, describe, diff and completion.
type stateReader struct {
	cmd        *cobra.Command
	rf         *repoFlags
	auth       func(string) source.Auth
	loader     *source.Loader
	repo       *source.Repository // the config repository, as loader fetches it
	keys       []gitwriter.TrustedKey
	unverified bool
	warned     bool
}

// stateRead is the config repository and the state branch, read once.
type stateRead struct {
	repo       *source.Repository
	snap       *source.Snapshot
	tip        plumbing.Hash
	state      *reconcilers.State
	verdict    trust.CommitVerdict
	unverified map[string]bool
}

func (v stateRead) input(now time.Time) getInput {
	return getInput{snap: v.snap, state: v.state, now: now}
}

func newStateReader(cmd *cobra.Command, rf *repoFlags, trusted []string, unverified bool) (*stateReader, error) {
	auth, err := rf.resolve()
	if err != nil {
		return nil, err
	}
	keys, err := readTrustedKeys(trusted)
	if err != nil {
		return nil, err
	}
	// The loader's fetch of the config branch brings the state branch
	// along: one ref advertisement for both, so the state shown is never
	// newer than the config beside it.
	loader := rf.newLoader(auth)
	repo, err := loader.Repository(rf.repo)
	if err != nil {
		return nil, err
	}
	repo.FetchAlso(rf.stateBranch)
	return &stateReader{cmd: cmd, rf: rf, auth: auth, loader: loader, repo: repo, keys: keys, unverified: unverified}, nil
}

// tip fetches the state branch and returns its tip, zero when it does not
// exist.
func (r *stateReader) tip(ctx context.Context) (plumbing.Hash, error) {
	return controller.FetchState(ctx, r.repo, r.rf.stateBranch)
}

// read loads the config repository and the state branch, and checks the
// state's history against the keys: an untrusted state is an error unless
// shown --unverified.
func (r *stateReader) read(ctx context.Context) (stateRead, error) {
	snap, err := r.loader.Load(ctx, r.rf.repo, r.rf.branch)
	if err != nil {
		return stateRead{}, err
	}
	view, err := r.verified(snap)
	if err != nil {
		return stateRead{}, err
	}
	if !view.Verdict.Trusted {
		if !r.unverified {
			return stateRead{}, fmt.Errorf("%w: %s (show it anyway, marked, with --unverified)", controller.ErrUntrustedState, view.Refusal)
		}
		if !r.warned {
			fmt.Fprintf(r.cmd.ErrOrStderr(), "warning: %s\n", view.Refusal)
		}
	}
	r.warned = true
	return stateRead{repo: r.repo, snap: snap, tip: view.Tip, state: view.State, verdict: view.Verdict, unverified: view.Unverified}, nil
}

// verified reads the state branch and checks it against the --trust keys,
// the controllers' keys, exactly as the controller checks it. A
// Landscape's spec.signers are not state signers: they may sign overlay
// commits, and a person among them may not edit state. With no key it warns
// and shows the state unchecked.
func (r *stateReader) verified(snap *source.Snapshot) (controller.VerifiedState, error) {
	tip, err := controller.FetchedState(r.repo, r.rf.stateBranch)
	if err != nil {
		return controller.VerifiedState{}, err
	}
	if len(r.keys) == 0 {
		files, state, err := controller.StateAt(r.repo, r.rf.stateBranch, tip)
		if !r.warned && !tip.IsZero() {
			fmt.Fprintf(r.cmd.ErrOrStderr(), "warning: the state branch %s is shown unverified: give the controller's public key with --trust KEYFILE\n", r.rf.stateBranch)
		}
		return controller.VerifiedState{Tip: tip, Files: files, State: state, Verdict: trust.CommitVerdict{Trusted: true}}, err
	}
	trust, err := controller.NewStateTrust(r.keys)
	if err != nil {
		return controller.VerifiedState{}, err
	}
	return controller.VerifyState(r.repo, r.rf.stateBranch, tip, trust, snap.Configs)
}

// neverReconciled says that the state branch does not exist, and what
// makes it.
func (r *stateReader) neverReconciled() string {
	return fmt.Sprintf("No state branch %s in %s: vectorflow has not reconciled this repository yet; run `vectorflow run --once --repo %s --signing-key FILE` first.",
		r.rf.stateBranch, r.rf.repo, r.rf.repo)
}

// notFound is err, with where get looked and, when the state branch does
// not exist, why nothing is there.
func (r *stateReader) notFound(view stateRead, err error) error {
	if view.tip.IsZero() {
		return fmt.Errorf("%w: %s", err, r.neverReconciled())
	}
	return fmt.Errorf("%w in %s (state branch %s)", err, r.rf.repo, r.rf.stateBranch)
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind}
}

func column(name string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "string"}
}

func wideColumn(name string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "string", Priority: 1}
}

func promotionKind() getKind {
	return getKind{
		resource: mustResource(v1alpha1.VectorPromotionKind),
		aliases:  []string{"promotions", "promotion"},
		columns: []metav1.TableColumnDefinition{column("Config"), column("Seq"), column("Vector"), column("Target"),
			column("State"), column("Approved By"), column("Reason"), wideColumn("Source"), wideColumn("Commit")},
		filters:  []string{filterConfig, filterStage, filterState},
		list:     listPromotions,
		describe: describePromotion,
	}
}

func listPromotions(in getInput) []getObject {
	list := make([]*v1alpha1.VectorPromotion, 0, len(in.state.Promotions))
	for _, p := range in.state.Promotions {
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].Spec, list[j].Spec
		if a.VectorPromotionConfigName != b.VectorPromotionConfigName {
			return a.VectorPromotionConfigName < b.VectorPromotionConfigName
		}
		return a.Sequence > b.Sequence
	})
	out := make([]getObject, 0, len(list))
	for _, p := range list {
		p = p.DeepCopy()
		p.TypeMeta = typeMeta(v1alpha1.VectorPromotionKind)
		state := string(reconcilers.DeriveState(p))
		out = append(out, getObject{
			name: p.Name, path: reconcilers.PromotionPath(p.Spec.VectorPromotionConfigName, p.Name), object: p,
			cells: []any{p.Spec.VectorPromotionConfigName, strconv.FormatInt(p.Spec.Sequence, 10), p.Spec.Vector,
				reconcilers.StageKey(p.Spec.Target.Landscape, p.Spec.Target.Name), state, approverNames(p), lastReason(p.Status.Conditions),
				p.Spec.Source.Ref(), orDash(v1alpha1.ShortCommit(p.Status.Commit))},
			fields: map[string]string{filterConfig: p.Spec.VectorPromotionConfigName,
				filterStage: reconcilers.StageKey(p.Spec.Target.Landscape, p.Spec.Target.Name), filterState: state},
			conditions: p.Status.Conditions,
		})
	}
	return out
}

// approvedBy names every counted approver, also while more are needed.
func approverNames(p *v1alpha1.VectorPromotion) string {
	if len(p.Status.Approvals) > 1 || (len(p.Status.Approvals) == 1 && p.Status.Approval == nil) {
		names := make([]string, 0, len(p.Status.Approvals))
		for _, a := range p.Status.Approvals {
			names = append(names, a.ApprovedBy)
		}
		return strings.Join(names, ",")
	}
	if p.Status.Approval != nil {
		return p.Status.Approval.ApprovedBy
	}
	return "-"
}

func vectorKind() getKind {
	return getKind{
		resource:   mustResource(v1alpha1.VectorKind),
		nameColumn: "Vector",
		columns:    []metav1.TableColumnDefinition{column("Components"), column("Digest")},
		list:       listVectors,
		describe:   describeVector,
	}
}

func listVectors(in getInput) []getObject {
	list := make([]*v1alpha1.Vector, 0, len(in.state.Vectors))
	for _, v := range in.state.Vectors {
		list = append(list, v)
	}
	// Newest first, by the time the version names (2026.11.29 after 2026.11.3).
	sort.Slice(list, func(i, j int) bool {
		ti, errI := reconcilers.ParseVectorVersion(list[i].Spec.Version)
		tj, errJ := reconcilers.ParseVectorVersion(list[j].Spec.Version)
		if errI != nil || errJ != nil || ti.Equal(tj) {
			return list[i].Ref() > list[j].Ref()
		}
		return ti.After(tj)
	})
	out := make([]getObject, 0, len(list))
	for _, v := range list {
		v = v.DeepCopy()
		v.TypeMeta = typeMeta(v1alpha1.VectorKind)
		comps := make([]string, 0, len(v.Spec.Components))
		for _, c := range v.Spec.Components {
			comps = append(comps, c.Name+":"+orDash(c.Tag))
		}
		out = append(out, getObject{name: v.Ref(), alias: v.Name, path: reconcilers.VectorPath(v.Spec.Template, v.Spec.Version), object: v,
			cells: []any{strings.Join(comps, ", "), orDash(v1alpha1.ShortDigest(v.Spec.Digest))}})
	}
	return out
}

func configKind() getKind {
	return getKind{
		resource: mustResource(v1alpha1.VectorPromotionConfigKind),
		aliases:  []string{"configs", "config"},
		columns: []metav1.TableColumnDefinition{column("Source"), column("Target"), column("Seq"), column("Source Vector"),
			column("Ready"), column("Message"), wideColumn("Target Vector"), wideColumn("Approval")},
		filters:  []string{filterConfig, filterStage},
		list:     listConfigs,
		describe: describeConfig,
	}
}

func listConfigs(in getInput) []getObject {
	out := make([]getObject, 0, len(in.snap.Configs))
	for _, name := range keys.Sorted(in.snap.Configs) {
		c := in.snap.Configs[name].DeepCopy()
		c.TypeMeta = typeMeta(v1alpha1.VectorPromotionConfigKind)
		if st := in.state.Configs[name]; st != nil {
			c.Status = *st.Status.DeepCopy()
		}
		src := c.Spec.Source.Kind + "/" + c.Spec.Source.Name
		if c.Spec.Source.Landscape != "" {
			src = c.Spec.Source.Kind + "/" + c.Spec.Source.Landscape + "/" + c.Spec.Source.Name
		}
		ready, msg := configReadiness(c, in.now)
		approval := "automatic"
		if c.RequireApproval() {
			approval = "required"
		}
		target := reconcilers.StageKey(c.Spec.Target.Landscape, c.Spec.Target.Name)
		out = append(out, getObject{name: c.Name, path: reconcilers.ConfigPath(c.Name), object: c,
			cells: []any{src, target, strconv.FormatInt(c.Status.Sequence, 10), orDash(c.Status.SourceVector), ready, msg,
				orDash(c.Status.TargetVector), approval},
			fields:     map[string]string{filterConfig: c.Name, filterStage: target},
			conditions: c.Status.Conditions,
		})
	}
	return out
}

// configReadiness is the READY and MESSAGE of a config: its Ready
// condition, the time left of an update delay, or the drift that needs a
// person.
func configReadiness(c *v1alpha1.VectorPromotionConfig, now time.Time) (ready, msg string) {
	ready = "Unknown"
	if r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ReadyCondition); r != nil {
		ready, msg = string(r.Status), r.Message
	}
	if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.UpdateDelayedCondition); d != nil {
		msg = d.Message
		if c.Status.SourceVectorSince != nil && c.Spec.UpdateDelay != nil {
			left := c.Status.SourceVectorSince.Add(c.Spec.UpdateDelay.Duration).Sub(now).Round(time.Second)
			msg += fmt.Sprintf("; %s left", max(left, 0))
		}
	}
	// A drift the config leaves alone needs a person: say why.
	if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.DriftCondition); d != nil && ready == string(metav1.ConditionTrue) &&
		(d.Reason == v1alpha1.FailedNotRetriedReason || d.Reason == v1alpha1.TargetChangedByHandReason) {
		msg = d.Message
	}
	return ready, msg
}

func stageKind() getKind {
	return getKind{
		resource:   mustResource(v1alpha1.StageKind),
		nameColumn: "Stage",
		columns: []metav1.TableColumnDefinition{column("Path"), column("Target"), column("Since"),
			column("Active"), column("Active Since"), column("Held"), wideColumn("Commit")},
		filters:  []string{filterStage},
		list:     listStages,
		describe: describeStage,
	}
}

// listStages lists the stages the config repository declares, with the
// status the state branch holds, and the stages only the state still
// holds.
func listStages(in getInput) []getObject {
	all := map[string]*v1alpha1.Stage{}
	for key, st := range in.snap.Stages {
		all[key] = st.DeepCopy()
	}
	for key, st := range in.state.Stages {
		if s, ok := all[key]; ok {
			s.Status = *st.Status.DeepCopy()
		} else {
			all[key] = st.DeepCopy()
		}
	}
	out := make([]getObject, 0, len(all))
	for _, key := range keys.Sorted(all) {
		st := all[key]
		st.TypeMeta = typeMeta(v1alpha1.StageKind)
		out = append(out, getObject{name: key, path: reconcilers.StagePath(st.Spec.Landscape, st.Name), object: st,
			cells: []any{orDash(st.Spec.Path), orDash(st.Status.Vector), timeOrDash(st.Status.VectorSince),
				activeColumn(st), timeOrDash(st.Status.ActiveSince), heldColumn(*st), orDash(v1alpha1.ShortCommit(st.Status.Commit))},
			fields:     map[string]string{filterStage: key},
			conditions: st.Status.Conditions,
		})
	}
	return out
}

func templateKind() getKind {
	return getKind{
		resource: mustResource(v1alpha1.VectorTemplateKind),
		aliases:  []string{"templates", "template"},
		columns:  []metav1.TableColumnDefinition{column("Components"), column("Latest Vector"), column("Since"), column("Ready")},
		list:     listTemplates,
		describe: describeTemplate,
	}
}

func listTemplates(in getInput) []getObject {
	out := make([]getObject, 0, len(in.snap.Templates))
	for _, name := range keys.Sorted(in.snap.Templates) {
		t := in.snap.Templates[name].DeepCopy()
		t.TypeMeta = typeMeta(v1alpha1.VectorTemplateKind)
		if st := in.state.Templates[name]; st != nil {
			t.Status = *st.Status.DeepCopy()
		}
		ready := "Unknown"
		if r := meta.FindStatusCondition(t.Status.Conditions, v1alpha1.ReadyCondition); r != nil {
			ready = string(r.Status)
		}
		out = append(out, getObject{name: name, path: reconcilers.TemplatesDir + "/" + name + ".yaml", object: t,
			cells:      []any{strconv.Itoa(len(t.Spec.Components)), orDash(t.Status.LatestVector), timeOrDash(t.Status.LatestVectorSince), ready},
			conditions: t.Status.Conditions,
		})
	}
	return out
}

func landscapeKind() getKind {
	return getKind{
		resource: mustResource(v1alpha1.LandscapeKind),
		columns:  []metav1.TableColumnDefinition{column("Repository"), column("Branch"), column("Path"), column("Signers")},
		list:     listLandscapes,
		describe: describeLandscape,
	}
}

func listLandscapes(in getInput) []getObject {
	out := make([]getObject, 0, len(in.snap.Landscapes))
	for _, name := range keys.Sorted(in.snap.Landscapes) {
		l := in.snap.Landscapes[name].DeepCopy()
		l.TypeMeta = typeMeta(v1alpha1.LandscapeKind)
		repo, branch := "(config repository)", "(config branch)"
		if r := l.Spec.Repository; r != nil {
			repo = source.RedactURL(r.URL)
			if r.Branch != "" {
				branch = r.Branch
			}
		}
		signers := make([]string, 0, len(l.Spec.Signers))
		for _, s := range l.Spec.Signers {
			signers = append(signers, s.Name)
		}
		out = append(out, getObject{name: name, object: l,
			cells:      []any{repo, branch, orDash(l.Spec.Path), orDash(strings.Join(signers, ","))},
			conditions: l.Status.Conditions,
		})
	}
	return out
}

// mustResource is the API's names of kind, which every kind get lists has.
func mustResource(kind string) v1alpha1.Resource {
	for _, r := range v1alpha1.Resources {
		if r.Kind == kind {
			return r
		}
	}
	panic("no resource names for kind " + kind)
}

func timeOrDash(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func lastReason(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, v1alpha1.SucceededCondition); c != nil {
		return c.Reason
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ApprovedCondition); c != nil {
		return c.Reason
	}
	return "-"
}

// mustJSON is v as JSON, what watch compares objects by; the API types
// always encode.
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

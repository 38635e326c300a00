package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

func newValidateCommand() *cobra.Command {
	var (
		rf       repoFlags
		lf       limitFlags
		revision string
		output   string
	)
	cmd := &cobra.Command{
		Use:   "validate [PATH] [--repo URL|PATH [--revision REV | --branch BRANCH]]",
		Short: "Check a declarative repository: decode every config, resolve every reference, build every stage overlay",
		Long: `validate reads a declarative repository, lists every config object with what its
references resolve to, and reports every problem at the file that holds the
object. It exits non-zero when there is any.

  validate PATH                      the directory as it is on disk (a CI checkout,
                                     uncommitted changes included; Git or not)
  validate --repo URL|PATH --revision REV
                                     the commit REV names: a commit hash, tag, branch
                                     or HEAD (a detached HEAD in CI works)
  validate --repo URL                branch --branch (default main)
  validate --repo PATH               a local checkout: its checked-out commit (HEAD),
                                     unless --branch names a branch

Files larger than --max-file-size, repositories reading more than
--max-repository-size, YAML whose aliases expand beyond 10000 nodes and mappings
of more than 5000 keys are refused before kustomize parses them.

Credentials come from the environment (` + strings.Join([]string{source.EnvGitUsername, source.EnvGitPassword,
			source.EnvGitToken, source.EnvSSHKey, source.EnvSSHPassphrase, source.EnvKnownHosts}, ", ") + `)
or the flags below; secrets are read from files so they stay out of the process list.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := printStructured(io.Discard, output, nil); err != nil {
				return err
			}
			if len(args) == 1 {
				if rf.repo != "" {
					return fmt.Errorf("give either a PATH or --repo, not both")
				}
				if revision != "" {
					return fmt.Errorf("--revision reads a commit: use --repo %s --revision %s", args[0], revision)
				}
				rf.repo = args[0]
			}
			if revision != "" && cmd.Flags().Changed("branch") {
				return fmt.Errorf("give either --revision or --branch, not both")
			}
			// In a checkout, what is checked out is what a person or a CI
			// job means to check, not branch main. (A bare repository has
			// nothing checked out: its branch is read.)
			if revision == "" && len(args) == 0 && !cmd.Flags().Changed("branch") && isCheckout(rf.repo) {
				revision = "HEAD"
			}
			auth, err := rf.resolve()
			if err != nil {
				return err
			}
			// A CI job cancelled, or a person pressing Ctrl-C, stops the
			// check at once, parsing included.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			limits, cacheDir := lf.limits(), rf.cacheDirectory()
			defer bulkGC()()
			// One Renderer for the config directory and every overlay: what
			// it learns of the tree (blobs read, YAML checked) serves all builds.
			renderer := render.NewRenderer(render.Options{Limits: limits, CacheDir: cacheDir})
			// Every build's rendering goes to disk in a few files at the
			// end, not a file per build as it finishes.
			defer renderer.DeferCacheWrites()()
			loader := source.NewLoader(source.Options{ConfigPath: rf.configPath, Auth: auth, Progress: terminalProgress(), Limits: limits, CacheDir: cacheDir, Renderer: renderer})
			var snap *source.Snapshot
			switch {
			case len(args) == 1:
				snap, err = loader.LoadDir(ctx, rf.repo)
			case revision != "":
				snap, err = loader.LoadRevision(ctx, rf.repo, revision)
			default:
				snap, err = loader.Load(ctx, rf.repo, rf.branch)
			}
			if err != nil {
				return interrupted(ctx, err)
			}
			buildProblems, err := source.BuildStages(ctx, snap, renderer)
			if err != nil {
				return interrupted(ctx, err)
			}
			r := newValidationReport(snap, buildProblems)
			done, err := printStructured(cmd.OutOrStdout(), output, r)
			if !done {
				err = printTable(cmd.OutOrStdout(), r)
			}
			if err != nil {
				return fmt.Errorf("write the report: %w", err)
			}
			if n := len(r.Problems); n > 0 {
				return fmt.Errorf("%s: %d problem(s) found", rf.repo, n)
			}
			return nil
		},
	}
	rf.register(cmd.Flags())
	lf.register(cmd.Flags())
	cmd.Flags().StringVar(&revision, "revision", "", "validate the commit this names (hash, tag, branch, HEAD) instead of --branch")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

// isCheckout reports whether path is the working copy of a Git repository.
func isCheckout(path string) bool {
	if !source.IsLocalPath(path) || !source.IsGitRepository(path) {
		return false
	}
	_, err := os.Stat(filepath.Join(path, ".git"))
	return err == nil
}

// interrupted says that a signal stopped the work, rather than what the
// cut-short step complained about.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	return err
}

// limitFlags bound what is read from a repository (repofs.Limits); run and
// validate share them.
type limitFlags struct {
	maxFileSize, maxRepositorySize byteSize
}

func (f *limitFlags) register(fs *pflag.FlagSet) {
	f.maxFileSize = repofs.DefaultMaxFileSize
	f.maxRepositorySize = repofs.DefaultMaxRepositorySize
	fs.Var(&f.maxFileSize, "max-file-size", "largest file read from a repository (bytes, or with a unit: 8Mi, 10M)")
	fs.Var(&f.maxRepositorySize, "max-repository-size", "most bytes read from one repository per pass (bytes, or with a unit: 1Gi)")
}

func (f *limitFlags) limits() repofs.Limits {
	return repofs.Limits{MaxFileSize: int64(f.maxFileSize), MaxRepositorySize: int64(f.maxRepositorySize)}
}

// byteSize is a flag holding a size such as 4194304, 4Mi or 4M.
type byteSize int64

func (b *byteSize) String() string {
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a size: use bytes or a unit such as 8Mi or 1Gi", s)
	}
	if q.Sign() <= 0 {
		return fmt.Errorf("%q: the size must be positive", s)
	}
	*b = byteSize(q.Value())
	return nil
}

func (b *byteSize) Type() string { return "size" }

// validationReport is what validate prints: every object with its resolved
// references, and every problem.
type validationReport struct {
	Objects  []objectReport   `json:"objects"`
	Problems []source.Problem `json:"problems"`
}

type objectReport struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	File string `json:"file"`
	// References are what the object points at, resolved.
	References []referenceReport `json:"references,omitempty"`
}

type referenceReport struct {
	Role      string `json:"role"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Landscape string `json:"landscape,omitempty"`
	Resolved  bool   `json:"resolved"`
	// For a stage: where its overlay is and the vector it holds; for a
	// landscape's repository, Overlay is the root its stages live under.
	Repository string `json:"repository,omitempty"`
	Overlay    string `json:"overlay,omitempty"`
	Vector     string `json:"vector,omitempty"`
}

func newValidationReport(snap *source.Snapshot, buildProblems []source.Problem) validationReport {
	r := validationReport{Objects: []objectReport{}, Problems: append(append([]source.Problem{}, snap.Problems...), buildProblems...)}
	sort.SliceStable(r.Problems, func(i, j int) bool { return r.Problems[i].Error() < r.Problems[j].Error() })
	for _, o := range snap.Objects {
		or := objectReport{Kind: o.Kind, Name: o.Name, File: o.File}
		switch v := o.Value.(type) {
		case *v1alpha1.Landscape:
			repo, branch := snap.URL, snap.Branch
			if r := v.Spec.Repository; r != nil && r.URL != snap.URL {
				repo, branch = r.URL, r.Branch
			}
			if branch != "" {
				repo += "@" + branch
			}
			root := v.Spec.Path
			if root == "" {
				root = "."
			}
			or.References = append(or.References, referenceReport{Role: "repository", Kind: "Repository", Name: repo, Overlay: root, Resolved: true})
		case *v1alpha1.Stage:
			or.Name = source.StageKey(v.Spec.Landscape, v.Name)
			or.References = append(or.References, stageReference(snap, "overlay", v.Spec.Landscape, v.Name))
		case *v1alpha1.VectorTemplate:
			if v.Spec.Base != nil {
				_, ok := snap.Templates[v.Spec.Base.Name]
				or.References = append(or.References, referenceReport{Role: "base", Kind: v1alpha1.VectorTemplateKind, Name: v.Spec.Base.Name, Resolved: ok})
			}
		case *v1alpha1.VectorPromotionConfig:
			src := v.Spec.Source
			if src.Kind == v1alpha1.StageKind {
				or.References = append(or.References, stageReference(snap, "source", src.Landscape, src.Name))
			} else {
				t, ok := snap.Templates[src.Name]
				ref := referenceReport{Role: "source", Kind: src.Kind, Name: src.Name, Resolved: ok}
				if ok {
					ref.Vector = t.Status.LatestVector
				}
				or.References = append(or.References, ref)
			}
			or.References = append(or.References, stageReference(snap, "target", v.Spec.Target.Landscape, v.Spec.Target.Name))
		}
		r.Objects = append(r.Objects, or)
	}
	return r
}

func stageReference(snap *source.Snapshot, role, landscape, name string) referenceReport {
	ref := referenceReport{Role: role, Kind: v1alpha1.StageKind, Name: name, Landscape: landscape}
	if s, ok := snap.StageIndex[source.StageKey(landscape, name)]; ok {
		ref.Resolved = true
		ref.Repository, ref.Overlay, ref.Vector = s.URL, s.Overlay, s.Vector.Vector
		if s.Branch != "" {
			ref.Repository += "@" + s.Branch
		}
	}
	return ref
}

func printTable(w io.Writer, r validationReport) error {
	// The table goes out in one write: through the redacting writer, each
	// of the tabwriter's cells was a regular-expression scan and a system
	// call of its own (0.7 s for the 10,000 rows of 10,000 stages).
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tFILE\tREFERENCES")
	for _, o := range r.Objects {
		refs := make([]string, 0, len(o.References))
		for _, ref := range o.References {
			refs = append(refs, describeReference(ref))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", o.Kind, o.Name, o.File, strings.Join(refs, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Problems) == 0 {
		fmt.Fprintln(&b, "\nno problems")
	} else {
		fmt.Fprintf(&b, "\n%d problem(s):\n", len(r.Problems))
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "  %s\n", p.Error())
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// describeReference reads like "source Stage dev/dev → overlay
// apps/overlays/dev in <repository> @ vector app:1".
func describeReference(ref referenceReport) string {
	if ref.Role == "repository" {
		return "repository " + ref.Name + ", root " + ref.Overlay
	}
	name := ref.Name
	if ref.Landscape != "" {
		name = ref.Landscape + "/" + ref.Name
	}
	head := ref.Role + " " + ref.Kind + " " + name
	if !ref.Resolved {
		return head + " (unresolved)"
	}
	if ref.Overlay == "" {
		if ref.Vector != "" {
			return head + " @ vector " + ref.Vector
		}
		return head
	}
	vector := ref.Vector
	if vector == "" {
		vector = "(none)"
	}
	overlay := fmt.Sprintf("overlay %s in %s @ vector %s", ref.Overlay, ref.Repository, vector)
	if ref.Role == "overlay" {
		return overlay
	}
	return head + " → " + overlay
}

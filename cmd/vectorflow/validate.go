package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
)

func newValidateCommand() *cobra.Command {
	var (
		rf     repoFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "validate --repo URL|PATH",
		Short: "Check a declarative repository: decode every config, resolve every reference, build every stage overlay",
		Long: `validate reads one branch of a declarative repository (or a plain directory, for
pre-merge checks), lists every config object with what its references resolve to,
and reports every problem. It exits non-zero when there is any.

Credentials come from the environment (` + strings.Join([]string{source.EnvGitUsername, source.EnvGitPassword,
			source.EnvGitToken, source.EnvSSHKey, source.EnvSSHPassphrase, source.EnvKnownHosts}, ", ") + `)
or the flags below; secrets are read from files so they stay out of the process list.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := printStructured(io.Discard, output, nil); err != nil {
				return err
			}
			auth, err := rf.resolve()
			if err != nil {
				return err
			}
			loader := source.NewLoader(source.Options{ConfigPath: rf.configPath, Auth: auth, Progress: terminalProgress()})
			snap, err := loader.Load(cmd.Context(), rf.repo, rf.branch)
			if err != nil {
				return err
			}
			r := newValidationReport(snap, source.BuildStages(snap, render.NewRenderer(render.Options{})))
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
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

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
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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
		_, err := fmt.Fprintln(w, "\nno problems")
		return err
	}
	fmt.Fprintf(w, "\n%d problem(s):\n", len(r.Problems))
	for _, p := range r.Problems {
		if _, err := fmt.Fprintf(w, "  %s\n", p.Error()); err != nil {
			return err
		}
	}
	return nil
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

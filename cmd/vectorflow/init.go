package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
)

// scaffold holds the files `vectorflow init` writes, as templates.
//
//go:embed all:scaffold
var scaffold embed.FS

// initStages are the stages init makes, in promotion order.
var initStages = []string{"dev", "test", "prod"}

// scaffoldData is what the scaffold's templates fill in.
type scaffoldData struct {
	Name, Image, Version, URL, Branch string
	Stages                            []string
	Chain                             []struct{ From, To string }
	Approvers, Signers                []scaffoldKey
	Flux, ArgoCD                      bool
	// Stage is the stage a per-stage file is for.
	Stage string
}

type scaffoldKey struct{ Name, PublicKey string }

type initOptions struct {
	name, image, version, url, branch string
	approvers                         []string
	controllerKey                     string
	flux, argocd, force               bool
}

func newInitCommand() *cobra.Command {
	var o initOptions
	cmd := &cobra.Command{
		Use:   "init [DIR] --approver NAME=KEYFILE [--flux|--argocd]",
		Short: "Scaffold a repository vectorflow promotes through",
		Long: `init writes a new config repository into DIR (default: the current
directory): an application base, one Kustomize overlay per stage (dev, test,
prod), the promotion setup in vectorflow/ (a Landscape, the Stages, a
VectorTemplate and the configs latest-to-dev, dev-to-test and test-to-prod),
with --flux the Flux GitRepository and Kustomizations (clusters/NAME/), with
--argocd the Argo CD ApplicationSet (argocd/), and a README that says how to
make the controller's and the approvers' keys. The result passes
vectorflow validate.

DIR must be empty. With --force init writes into a non-empty DIR, but only
the files that do not exist yet: it never replaces a file, and names every
file it kept.`,
		Example: `  vectorflow init acme --approver alice=$HOME/.ssh/id_ed25519.pub --flux
  vectorflow init . --approver alice=alice.pub --image ghcr.io/acme/app --version 1.4.0 --argocd`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			data, err := o.data(dir)
			if err != nil {
				return err
			}
			files, err := renderScaffold(data)
			if err != nil {
				return err
			}
			written, kept, err := writeScaffold(dir, files, o.force)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, f := range kept {
				fmt.Fprintf(cmd.ErrOrStderr(), "kept %s: it exists, and init never replaces a file\n", filepath.Join(dir, f))
			}
			fmt.Fprintf(out, "wrote %d files into %s; next: read %s, then vectorflow validate %s\n",
				len(written), dir, filepath.Join(dir, "README.md"), dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "", "name of the application, the VectorTemplate and the Landscape (default: DIR's name)")
	f.StringVar(&o.image, "image", "", "image of the application's one component (default: registry.example.com/NAME/NAME)")
	f.StringVar(&o.version, "version", "1.0.0", "the component's version: an exact tag, a semver range or a digest")
	f.StringVar(&o.url, "url", "", "URL of the repository the deployers read (default: https://git.example.com/NAME/deploy.git)")
	f.StringVar(&o.branch, "branch", "main", "branch of the repository")
	f.StringArrayVar(&o.approvers, "approver", nil, "an approver of the promotions to test and prod: NAME=FILE, FILE holding their public key, OpenSSH or armored OpenPGP (repeatable, at least one)")
	f.StringVar(&o.controllerKey, "controller-key", "", "file holding the controller's public signing key, listed as the Landscape's spec.signers")
	f.BoolVar(&o.flux, "flux", false, "add Flux's GitRepository and one Kustomization per stage")
	f.BoolVar(&o.argocd, "argocd", false, "add an Argo CD ApplicationSet with one Application per stage")
	f.BoolVar(&o.force, "force", false, "write into a non-empty DIR, keeping every file that exists")
	cmd.MarkFlagsMutuallyExclusive("flux", "argocd")
	return cmd
}

// dnsLabel is what a Kubernetes object name (and a namespace) may be.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// data checks the options and derives what the templates fill in.
func (o initOptions) data(dir string) (scaffoldData, error) {
	name := o.name
	if name == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return scaffoldData{}, err
		}
		name = strings.ToLower(filepath.Base(abs))
	}
	// Namespaces are NAME-STAGE: 63 characters at most.
	if !dnsLabel.MatchString(name) || len(name) > 50 {
		return scaffoldData{}, fmt.Errorf("name %q is not a lowercase DNS label of at most 50 characters: give one with --name", name)
	}
	if len(o.approvers) == 0 {
		return scaffoldData{}, fmt.Errorf("give at least one approver of the promotions to test and prod: --approver NAME=FILE with their public key " +
			"(make one with ssh-keygen -t ed25519 -f ~/.ssh/id_ed25519 and give the .pub file)")
	}
	d := scaffoldData{Name: name, Image: o.image, Version: o.version, URL: o.url, Branch: o.branch,
		Stages: initStages, Flux: o.flux, ArgoCD: o.argocd}
	if d.Image == "" {
		d.Image = "registry.example.com/" + name + "/" + name
	}
	if d.URL == "" {
		d.URL = "https://git.example.com/" + name + "/deploy.git"
	}
	for i := 1; i < len(initStages); i++ {
		d.Chain = append(d.Chain, struct{ From, To string }{initStages[i-1], initStages[i]})
	}
	seen := map[string]bool{}
	for _, a := range o.approvers {
		who, file, ok := strings.Cut(a, "=")
		if !ok || !dnsLabel.MatchString(who) || file == "" {
			return scaffoldData{}, fmt.Errorf("--approver %q: want NAME=FILE, NAME lowercase letters, digits and dashes", a)
		}
		if seen[who] {
			return scaffoldData{}, fmt.Errorf("--approver %s is given twice", who)
		}
		seen[who] = true
		key, err := readPublicKeyFile("--approver "+who, file)
		if err != nil {
			return scaffoldData{}, err
		}
		d.Approvers = append(d.Approvers, scaffoldKey{Name: who, PublicKey: key})
	}
	if o.controllerKey != "" {
		key, err := readPublicKeyFile("--controller-key", o.controllerKey)
		if err != nil {
			return scaffoldData{}, err
		}
		d.Signers = []scaffoldKey{{Name: "vectorflow", PublicKey: key}}
	}
	return d, nil
}

// readPublicKeyFile reads a public key as a YAML scalar: an OpenSSH line as
// it is, an armored OpenPGP key as a literal block.
func readPublicKeyFile(flag, file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	key := strings.TrimSpace(string(b))
	switch {
	case strings.HasPrefix(key, "-----BEGIN PGP PUBLIC KEY BLOCK-----"):
		return "|\n          " + strings.ReplaceAll(key, "\n", "\n          "), nil
	case strings.HasPrefix(key, "ssh-") || strings.HasPrefix(key, "ecdsa-") || strings.HasPrefix(key, "sk-"):
		if strings.Contains(key, "\n") {
			return "", fmt.Errorf("%s: %s holds more than one line; give one public key", flag, file)
		}
		return fmt.Sprintf("%q", key), nil
	case strings.Contains(key, "PRIVATE KEY"):
		return "", fmt.Errorf("%s: %s is a private key; give the public half (the .pub file, or gpg --armor --export)", flag, file)
	}
	return "", fmt.Errorf("%s: %s is neither an OpenSSH public key line nor an armored OpenPGP public key", flag, file)
}

// renderScaffold fills in the templates: the common files, one overlay
// per stage, and the deployer's files. It returns file contents by path.
func renderScaffold(d scaffoldData) (map[string][]byte, error) {
	files := map[string][]byte{}
	funcs := template.FuncMap{"join": strings.Join}
	render := func(tmpl, out string, data scaffoldData) error {
		src, err := scaffold.ReadFile(path.Join("scaffold", tmpl))
		if err != nil {
			return err
		}
		t, err := template.New(tmpl).Funcs(funcs).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return fmt.Errorf("scaffold template %s: %w", tmpl, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return fmt.Errorf("scaffold template %s: %w", tmpl, err)
		}
		files[out] = b.Bytes()
		return nil
	}
	err := fs.WalkDir(scaffold, "scaffold/common", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, "scaffold/"), ".tmpl")
		out := strings.TrimPrefix(rel, "common/")
		switch {
		case strings.HasPrefix(out, "apps/overlays/stage/"):
			for _, s := range d.Stages {
				data := d
				data.Stage = s
				if err := render(rel+".tmpl", path.Join("apps/overlays", s, path.Base(out)), data); err != nil {
					return err
				}
			}
			return nil
		case out == "apps/base/app.yaml":
			out = "apps/base/" + d.Name + ".yaml"
		}
		return render(rel+".tmpl", out, d)
	})
	if err != nil {
		return nil, err
	}
	if d.Flux {
		if err := render("flux/source.yaml.tmpl", path.Join("clusters", d.Name, d.Name+"-source.yaml"), d); err != nil {
			return nil, err
		}
		for _, s := range d.Stages {
			data := d
			data.Stage = s
			if err := render("flux/stage.yaml.tmpl", path.Join("clusters", d.Name, d.Name+"-"+s+".yaml"), data); err != nil {
				return nil, err
			}
		}
	}
	if d.ArgoCD {
		if err := render("argocd/applicationset.yaml.tmpl", "argocd/applicationset.yaml", d); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// writeScaffold writes files into dir. A non-empty dir is refused unless
// force; then a file that exists is kept, never replaced. Files are created
// exclusively, so one made meanwhile is kept too.
func writeScaffold(dir string, files map[string][]byte, force bool) (written, kept []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read %s: %w", dir, err)
	}
	if len(entries) > 0 && !force {
		return nil, nil, fmt.Errorf("%s is not empty: init writes into an empty directory (with --force it adds the files that do not exist and keeps every other)", dir)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return written, kept, err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			kept = append(kept, name)
			continue
		}
		if err != nil {
			return written, kept, err
		}
		_, err = f.Write(files[name])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, kept, fmt.Errorf("write %s: %w", p, err)
		}
		written = append(written, name)
	}
	return written, kept, nil
}

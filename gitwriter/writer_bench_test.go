package gitwriter

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// The benchmarks compare one promotion (edit the overlay, sign, commit, push
// to a loopback HTTP git server) through Writer with the shell way users do
// it today: git clone, kustomize edit set image, git commit -S, git push.
//
//	go test ./gitwriter -run '^$' -bench Promotion -benchtime 20x

const benchOverlay = "apps/overlays/prod/kustomization.yaml"

func benchPromotion(seq int) Change {
	tag := fmt.Sprintf("1.%d.0", seq)
	return PromotionChange(benchOverlay, "eu", "prod", "shop:"+tag,
		[]v1alpha1.VectorComponent{{Name: "service-a", Image: "registry.example.com/service-a", Tag: tag}},
		Trailers{Promotion: fmt.Sprintf("shop-to-prod-%d", seq), Sequence: int64(seq), Vector: "shop:" + tag,
			Source: "Stage/dev", Target: "Stage/prod"})
}

func benchSigner(b *testing.B) Signer {
	b.Helper()
	key := testutil.NewOpenPGPKey(b, "vectorflow", "vectorflow@example.com", nil)
	s, err := NewSigner(key.PrivateArmored, nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPromotionWriter is one signed promotion commit pushed per op.
func BenchmarkPromotionWriter(b *testing.B) {
	r := newPlainServerRepo(b, fixtureDir)
	w := newTestWriter(b, WriterOptions{Signer: benchSigner(b)})
	target := Target{Remote: r.httpRemote(), Branch: "main"}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := w.Apply(ctx, target, benchPromotion(i))
		if err != nil || res[0].Existing || res[0].AlreadyApplied {
			b.Fatalf("promotion %d: %+v %v", i, res, err)
		}
	}
}

// BenchmarkPromotion100 is 100 promotions to one branch, one Apply each or
// all in one Apply (one push).
func BenchmarkPromotion100(b *testing.B) {
	for _, batched := range []bool{false, true} {
		name := "one-by-one"
		if batched {
			name = "batched"
		}
		b.Run(name, func(b *testing.B) {
			signer := benchSigner(b)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r := newPlainServerRepo(b, fixtureDir)
				w := newTestWriter(b, WriterOptions{Signer: signer})
				target := Target{Remote: r.httpRemote(), Branch: "main"}
				changes := make([]Change, 100)
				for j := range changes {
					changes[j] = benchPromotion(j)
				}
				b.StartTimer()
				if batched {
					if _, err := w.Apply(context.Background(), target, changes...); err != nil {
						b.Fatal(err)
					}
				} else {
					for _, c := range changes {
						if _, err := w.Apply(context.Background(), target, c); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				if got := len(r.promotions(b, "main")); got != 100 {
					b.Fatalf("%d promotions landed, want 100", got)
				}
			}
		})
	}
}

// BenchmarkPromotionShell is the same promotion done with the CLIs.
func BenchmarkPromotionShell(b *testing.B) {
	r := newPlainServerRepo(b, fixtureDir)
	key := testutil.NewOpenPGPKey(b, "vectorflow", "vectorflow@example.com", nil)
	env := testutil.GPGHome(b, key)
	gnupgHome := strings.TrimPrefix(env[0], "GNUPGHOME=")
	if out, err := runWithEnv(env, key.PrivateArmored, "", "gpg", "--batch", "--import"); err != nil {
		b.Fatalf("gpg --import secret key: %v\n%s", err, out)
	}
	kustomize := testutil.KustomizeBinary(b)
	url := r.g.HTTPURLWithCredentials(r.name)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(b.TempDir(), "clone")
		steps := [][]string{
			{"git", "clone", "-q", "--branch", "main", url, dir},
			{kustomize, "edit", "set", "image", fmt.Sprintf("service-a=registry.example.com/service-a:1.%d.0", i)},
			{"git", "-c", "user.name=vectorflow", "-c", "user.email=vectorflow@example.com", "-c", "user.signingkey=" + key.Fingerprint,
				"commit", "-q", "-S", "-am", fmt.Sprintf("promote shop:1.%d.0 to eu/prod", i)},
			{"git", "push", "-q", "origin", "HEAD:main"},
		}
		for j, s := range steps {
			cwd := dir
			switch j {
			case 0:
				cwd = ""
			case 1:
				cwd = filepath.Join(dir, filepath.Dir(benchOverlay))
			}
			if out, err := runWithEnv(append(env, "GNUPGHOME="+gnupgHome), nil, cwd, s[0], s[1:]...); err != nil {
				b.Fatalf("%s: %v\n%s", strings.Join(s, " "), err, out)
			}
		}
	}
}

func runWithEnv(env []string, stdin []byte, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"), env...)
	if stdin != nil {
		cmd.Stdin = strings.NewReader(string(stdin))
	}
	return cmd.CombinedOutput()
}

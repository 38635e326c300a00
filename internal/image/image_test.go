package image

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/vectorflow-dev/vectorflow/source/registry/registrytest"
)

// TestImage builds vectorflow statically, puts it on a static base with a
// CA bundle, pushes the image to a registry and reads it back: a non-root
// user, the binary as entrypoint, the CA bundle where Go looks for it, the
// same digest from the same binary, and nothing else in it.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the vectorflow binary")
	}
	bin := filepath.Join(t.TempDir(), "vectorflow")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/vectorflow")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	ca := testCA(t)
	base, err := StaticBase(ca)
	if err != nil {
		t.Fatal(err)
	}
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	img, err := Build(base, binary, platform)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Build(base, binary, platform)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if d, _ := again.Digest(); d != want {
		t.Errorf("two builds of one binary: digests %s and %s, want one", want, d)
	}

	reg := registrytest.Start(t)
	ref, err := name.NewTag(reg.Host() + "/vectorflow-dev/vectorflow:test")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, reg.RemoteOptions()...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	pulled, err := remote.Image(ref, reg.RemoteOptions()...)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	if d, _ := pulled.Digest(); d != want {
		t.Errorf("pulled %s, pushed %s", d, want)
	}
	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"65532:65532", BinaryPath, "linux", runtime.GOARCH},
		[]string{cfg.Config.User, strings.Join(cfg.Config.Entrypoint, " "), cfg.OS, cfg.Architecture}); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}

	files := map[string]string{} // path -> "mode uid:gid"
	contents := map[string][]byte{}
	tr := tar.NewReader(mutate.Extract(pulled))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = fmt.Sprintf("%o %d:%d", h.Mode, h.Uid, h.Gid)
		if h.Typeflag == tar.TypeReg {
			contents[h.Name], _ = io.ReadAll(tr)
		}
	}
	wantFiles := map[string]string{
		"etc": "755 0:0", "etc/passwd": "644 0:0", "etc/group": "644 0:0",
		"etc/ssl": "755 0:0", "etc/ssl/certs": "755 0:0", "etc/ssl/certs/ca-certificates.crt": "644 0:0",
		"home": "755 0:0", "home/nonroot": "700 65532:65532", "tmp": "1777 0:0",
		"usr": "755 0:0", "usr/local": "755 0:0", "usr/local/bin": "755 0:0",
		"usr/local/bin/vectorflow": "755 0:0",
	}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("files in the image (-want +got):\n%s", diff)
	}
	if !bytes.Equal(contents["usr/local/bin/vectorflow"], binary) {
		t.Error("the binary in the image is not the one built")
	}
	if !bytes.Equal(contents["etc/ssl/certs/ca-certificates.crt"], ca) {
		t.Error("the CA bundle in the image is not the one given")
	}
	if !strings.Contains(string(contents["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", contents["etc/passwd"])
	}
}

// TestImageRefusesDynamicBinary: the base has no C library, so a binary
// that needs one would not start; the build says so instead.
func TestImageRefusesDynamicBinary(t *testing.T) {
	base, err := StaticBase(testCA(t))
	if err != nil {
		t.Fatal(err)
	}
	dynamic, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Skip(err)
	}
	_, err = Build(base, dynamic, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("Build with /bin/sh: %v, want a refusal naming CGO_ENABLED=0", err)
	}
	if _, err := StaticBase(nil); err == nil {
		t.Error("StaticBase without a CA bundle: no error")
	}
}

// testCA is a PEM bundle of one self-signed CA certificate.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vectorflow test CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

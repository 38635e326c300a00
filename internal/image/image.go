// Package image builds vectorflow's container image without a daemon: the
// static binary as one layer on a static base, the shape of the Dockerfile
// (distroless/static, user 65532). The tests build it from a base made
// here, with no network; a release builds it on the published base.
package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the user and group the image runs as: distroless's nonroot.
const NonRoot = 65532

// BinaryPath is where the binary is in the image.
const BinaryPath = "/usr/local/bin/vectorflow"

// CABundlePath is where Go's crypto/x509 looks first on Linux.
const CABundlePath = "/etc/ssl/certs/ca-certificates.crt"

// epoch stamps every file and the image, so one binary makes one digest.
var epoch = time.Unix(0, 0).UTC()

// StaticBase is a base like distroless/static: CA certificates, passwd and
// group entries for root and nonroot, and a world-writable /tmp.
func StaticBase(caBundle []byte) (v1.Image, error) {
	if len(bytes.TrimSpace(caBundle)) == 0 {
		return nil, fmt.Errorf("the base needs a CA bundle: without one the image cannot reach an https git server or registry")
	}
	layer, err := layerOf([]file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot))},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRoot))},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: CABundlePath[1:], mode: 0o644, data: caBundle},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: NonRoot},
		{name: "tmp/", mode: 0o1777, dir: true},
	})
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	return mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer})
}

// Build puts the binary on base, running as NonRoot with the binary as its
// entrypoint. The binary must be static: the base has no C library.
func Build(base v1.Image, binary []byte, platform v1.Platform) (v1.Image, error) {
	if err := checkStatic(binary); err != nil {
		return nil, err
	}
	layer, err := layerOf([]file{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: BinaryPath[1:], mode: 0o755, data: binary},
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{CreatedBy: "vectorflow image build", Created: v1.Time{Time: epoch}}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = platform.Architecture, platform.OS
	cfg.Config.User = fmt.Sprintf("%d:%d", NonRoot, NonRoot)
	cfg.Config.Entrypoint = []string{BinaryPath}
	cfg.Config.Cmd = nil
	cfg.Config.WorkingDir = "/home/nonroot"
	cfg.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + CABundlePath, "HOME=/home/nonroot", "TMPDIR=/tmp"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: epoch})
}

// checkStatic refuses a binary that needs a dynamic loader.
func checkStatic(binary []byte) error {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return fmt.Errorf("the binary is not a Linux ELF executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("the binary is dynamically linked (it names an ELF interpreter); build it with CGO_ENABLED=0")
		}
	}
	return nil
}

type file struct {
	name string
	mode int64
	dir  bool
	uid  int
	data []byte
}

// layerOf is a reproducible layer holding files, owned by root unless said.
func layerOf(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: epoch, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

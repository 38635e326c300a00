package source

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"time"

	"github.com/vectorflow-dev/vectorflow/internal/buildid"
	"github.com/vectorflow-dev/vectorflow/internal/cachefile"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// The on-disk config cache keeps decodes for the next process: decoding
// thousands of objects (YAML, strict JSON, defaults, validation, approver
// keys) costs far more than reading their JSON back. A plain file's decode
// is found by its path and content hash (fileKey), so a change writes and
// a new process decodes only the files it touched; a directory kustomize
// built, by its output. Every key holds the build identity and the options
// that change the result (config path, limits), so it is valid wherever it
// is found. Entries are written to a temporary file and renamed; each
// carries a checksum, so a damaged one is a miss. Nothing here is ever an
// error.
const (
	configFormat = "vectorflow config cache 4\n"
	// configMaxAge drops decodes no process used for this long.
	configMaxAge = 30 * 24 * time.Hour
	// configSweepEvery is how often one process walks the cache to drop old entries.
	configSweepEvery = 24 * time.Hour
	// configMaxEntry refuses to read an entry larger than this.
	configMaxEntry = 512 << 20
)

type configDisk struct {
	root   string // <CacheDir>/configs
	prefix string
	now    func() time.Time
}

func newConfigDisk(cacheDir, configPath string, limits repofs.Limits) *configDisk {
	if cacheDir == "" {
		return nil
	}
	l := limits.WithDefaults()
	prefix := fmt.Sprintf("%s\nconfig path %q\nlimits %d %d %d %d %d\n", buildid.String(), configPath,
		l.MaxFileSize, l.MaxRepositorySize, l.MaxMappingKeys, l.MaxAliasNodes, l.MaxMappingWork)
	return &configDisk{root: filepath.Join(cacheDir, "configs"), prefix: prefix, now: time.Now}
}

func (c *configDisk) file(key string) string {
	sum := sha256.Sum256([]byte(c.prefix + "\x00" + key))
	k := hex.EncodeToString(sum[:])
	return filepath.Join(c.root, k[:2], k)
}

// lookup returns the decode stored under key.
func (c *configDisk) lookup(key string) (decodedConfig, bool) {
	body, ok := c.read(c.file(key))
	if !ok {
		return decodedConfig{}, false
	}
	return decodeCached(body, key)
}

// encodeCached is a decode as stored: its key, its problems as JSON, then
// each object's file, kind, name and typed value as JSON, in fields
// (cachefile.AppendFields) that read back without a scan.
func encodeCached(key string, d decodedConfig) ([]byte, error) {
	problems, err := json.Marshal(d.problems)
	if err != nil {
		return nil, err
	}
	b := cachefile.AppendFields(nil, []byte(key), problems)
	for _, o := range d.objects {
		value, err := json.Marshal(o.Value)
		if err != nil {
			return nil, err
		}
		b = cachefile.AppendFields(b, []byte(o.File), []byte(o.Kind), []byte(o.Name), value)
	}
	return b, nil
}

// decodeCached reads back what encodeCached wrote under key; ok is false
// for another key's entry or one that does not read back whole.
func decodeCached(body []byte, key string) (decodedConfig, bool) {
	fields := cachefile.Fields(body)
	k, ok1 := fields.Next()
	problems, ok2 := fields.Next()
	if !ok1 || !ok2 || string(k) != key {
		return decodedConfig{}, false
	}
	var d decodedConfig
	if cachefile.Unmarshal(problems, &d.problems) != nil {
		return decodedConfig{}, false
	}
	file := ""
	for len(fields) > 0 {
		f, ok1 := fields.Next()
		kind, ok2 := fields.Next()
		name, ok3 := fields.Next()
		value, ok4 := fields.Next()
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return decodedConfig{}, false
		}
		if string(f) != file { // the objects of one file share its name
			file = string(f)
		}
		kindName := string(kind)
		obj := newObject(kindName)
		if obj == nil || cachefile.Unmarshal(value, obj) != nil {
			return decodedConfig{}, false
		}
		d.objects = append(d.objects, Object{File: file, Kind: kindName, Name: string(name), Value: obj})
	}
	return d, true
}

// fileKey is the key of one plain config file's decode: its path and the
// hash of its content (read through links).
func fileKey(file, hash string) string {
	return fmt.Sprintf("file:%q:%s", file, hash)
}

// store writes a decode under key, when it reads back as exactly the same
// objects (so a cached load is indistinguishable from a decode).
func (c *configDisk) store(key string, d decodedConfig) {
	body, err := encodeCached(key, d)
	if err != nil {
		return
	}
	back, ok := decodeCached(body, key)
	if !ok || !sameDecode(d, back) {
		return
	}
	c.write(c.file(key), body)
}

func sameDecode(a, b decodedConfig) bool {
	if len(a.objects) != len(b.objects) || !reflect.DeepEqual(a.problems, b.problems) &&
		!(len(a.problems) == 0 && len(b.problems) == 0) {
		return false
	}
	for i := range a.objects {
		if !reflect.DeepEqual(a.objects[i], b.objects[i]) {
			return false
		}
	}
	return true
}

// cachedVectors are the stage vectors one load of a repository and branch
// read, by overlay (see resolveStages): the next process reads the vectors
// of unchanged overlays from here instead of parsing each kustomization.
type cachedVectors struct {
	Key     string                          `json:"key"`
	Vectors map[string]overlays.StageVector `json:"vectors"`
	// Kustomizations are loadCache.kustomizations.
	Kustomizations map[string]string `json:"kustomizations,omitempty"`
}

func (c *configDisk) vectorsFile(repo string) string {
	return c.file("vectors of " + repo)
}

// loadVectors returns the vectors and kustomization files stored for a
// repository and branch; nil when there are none.
func (c *configDisk) loadVectors(repo string) (map[string]vectorResult, map[string]string) {
	data, ok := c.read(c.vectorsFile(repo))
	if !ok {
		return nil, nil
	}
	var cv cachedVectors
	if err := cachefile.Unmarshal(data, &cv); err != nil || cv.Key != repo {
		return nil, nil
	}
	out := make(map[string]vectorResult, len(cv.Vectors))
	for k, v := range cv.Vectors {
		out[k] = vectorResult{vector: v, kept: true}
	}
	return out, cv.Kustomizations
}

// storeVectors writes the vectors a load used that read without error, and
// whose JSON gives them back exactly. Only the vectors not kept before are
// checked (a pass over a new commit reads a few); it returns those it
// wrote, for the caller to mark kept. It only reads vectors.
func (c *configDisk) storeVectors(repo string, vectors map[string]vectorResult, kustomizations map[string]string) (written []string) {
	cv := cachedVectors{Key: repo, Vectors: make(map[string]overlays.StageVector, len(vectors)), Kustomizations: kustomizations}
	fresh := map[string]overlays.StageVector{}
	for k, v := range vectors {
		if v.err != nil {
			continue
		}
		cv.Vectors[k] = v.vector
		if !v.kept {
			fresh[k] = v.vector
		}
	}
	if len(fresh) > 0 {
		body, err := json.Marshal(fresh)
		if err != nil {
			return nil
		}
		var back map[string]overlays.StageVector
		if cachefile.Unmarshal(body, &back) != nil {
			return nil
		}
		for k, v := range fresh {
			if !reflect.DeepEqual(back[k], v) {
				delete(cv.Vectors, k)
				delete(fresh, k)
			}
		}
	}
	body, err := json.Marshal(cv)
	if err != nil {
		return nil
	}
	if !c.write(c.vectorsFile(repo), body) {
		return nil
	}
	written = make([]string, 0, len(fresh))
	for k := range fresh {
		written = append(written, k)
	}
	return written
}

// read returns an entry's body if its checksum and format hold.
func (c *configDisk) read(file string) ([]byte, bool) {
	return cachefile.Read(file, configFormat, configMaxEntry, c.now())
}

// write stores an entry whole or not at all, and says which.
func (c *configDisk) write(file string, body []byte) bool {
	if cachefile.Write(file, configFormat, body) != nil {
		return false
	}
	c.sweep()
	return true
}

// sweep drops entries unused for configMaxAge, and temporary files a crash
// left, at most once a day across processes (a stamp file says when).
func (c *configDisk) sweep() {
	cachefile.Sweep(c.root, configMaxAge, configSweepEvery, c.now())
}

// configKey names what a decode of plain config files depends on: the
// config directory's tree, and the content of every file it reads, found
// through symbolic links (which may point outside the directory). ok is
// false when a hash is unknown.
func configKey(tree repofs.Tree, dir string, files []string) (string, bool) {
	hash, err := tree.Hash(dir)
	if err != nil {
		return "", false
	}
	sum := sha256.New()
	for _, f := range files {
		h, err := tree.Hash(f)
		if err != nil {
			h = "unreadable" // the decode says why; what makes it readable changes a hash
		}
		fmt.Fprintf(sum, "%q %s\n", f, h)
	}
	return "tree:" + hash + ":" + hex.EncodeToString(sum.Sum(nil)), true
}

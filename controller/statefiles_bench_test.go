package controller

import (
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

// BenchmarkStateFilesRead reads the next state commit of a state branch
// shaped like 10,000 stages (a config file and a stage file each, in two
// directories), where a pass changed one file in each: what every pass
// that wrote state reads next.
func BenchmarkStateFilesRead(b *testing.B) {
	t := &testing.T{}
	s := &countingStore{Storage: memory.NewStorage()}
	files := map[string]string{}
	for i := range 10000 {
		files[fmt.Sprintf("configs/dev%d-to-dev%d.yaml", i, i+1)] = fmt.Sprintf("status:\n  sequence: %d\n", i)
		files[fmt.Sprintf("stages/chain/dev%d.yaml", i)] = fmt.Sprintf("status:\n  vector: acme:%d\n", i)
	}
	var commits [2]plumbing.Hash
	for i := range commits {
		files["configs/dev0-to-dev1.yaml"] = fmt.Sprintf("status:\n  sequence: %d\n", 100000+i)
		files["stages/chain/dev0.yaml"] = fmt.Sprintf("status:\n  vector: acme:%d\n", 100000+i)
		commits[i] = writeCommit(t, s, files)
	}
	var m stateFiles
	if _, err := m.read(s, commits[0]); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := m.read(s, commits[(i+1)%2]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStateFilesSeededRead is a restarted process's first state read
// at 10,000 stages: the codec's memory seeds every file, and the commit's
// trees are walked to take each file whose blob it names from the seed.
func BenchmarkStateFilesSeededRead(b *testing.B) {
	t := &testing.T{}
	s := &countingStore{Storage: memory.NewStorage()}
	files := map[string]string{}
	seed := map[string][]byte{}
	for i := range 10000 {
		for _, f := range []string{fmt.Sprintf("configs/dev%d-to-dev%d.yaml", i, i+1), fmt.Sprintf("stages/chain/dev%d.yaml", i)} {
			files[f] = fmt.Sprintf("status:\n  sequence: %d\n", i)
			seed[f] = []byte(files[f])
		}
	}
	commit := writeCommit(t, s, files)
	b.ReportAllocs()
	for b.Loop() {
		var m stateFiles
		m.seed(seed)
		if _, err := m.read(s, commit); err != nil {
			b.Fatal(err)
		}
	}
}

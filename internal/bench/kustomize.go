package bench

import (
	"fmt"
	"path"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// KustomizeAlone is how long kustomize's own library takes to build every
// stage overlay of r and print it, on workers goroutines, from memory, with
// nothing of vectorflow's around it: what validate's builds cannot go
// below on this machine, measured beside validate.
func KustomizeAlone(r Repository, workers int) (time.Duration, error) {
	mem := filesys.MakeFsInMemory()
	for name, data := range r.Files {
		if err := mem.WriteFile(path.Join("/", name), data); err != nil {
			return 0, fmt.Errorf("write %s to memory: %w", name, err)
		}
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // as `kustomize build` orders
	workers = max(workers, 1)
	dirs := make(chan string)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			k := krusty.MakeKustomizer(opts)
			for dir := range dirs {
				m, err := k.Run(mem, path.Join("/", dir))
				if err == nil {
					_, err = m.AsYaml()
				}
				if err != nil {
					errs <- fmt.Errorf("kustomize build %s: %w", dir, err)
					for range dirs { // drain, so the sender is not stuck
					}
					return
				}
			}
		})
	}
	for _, dir := range r.Overlays {
		dirs <- dir
	}
	close(dirs)
	wg.Wait()
	took := time.Since(start)
	select {
	case err := <-errs:
		return 0, err
	default:
		return took, nil
	}
}

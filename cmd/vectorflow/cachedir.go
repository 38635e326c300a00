package main

import (
	"os"
	"path/filepath"
)

// envCacheDir overrides where vectorflow keeps its caches.
const envCacheDir = "VECTORFLOW_CACHE_DIR"

// cacheDirectory is where renderings and decoded configs are kept for the
// next process: $VECTORFLOW_CACHE_DIR, else the user's cache directory;
// "none" (or no cache directory at all) keeps them in memory only. Deleting
// it at any time changes no answer, only speed.
func cacheDirectory() string {
	dir := os.Getenv(envCacheDir)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "vectorflow")
	}
	if dir == "none" {
		return ""
	}
	return dir
}

package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain keeps the caches of the commands tests run out of the user's
// cache directory.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vectorflow-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if os.Getenv(envCacheDir) == "" {
		os.Setenv(envCacheDir, dir)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

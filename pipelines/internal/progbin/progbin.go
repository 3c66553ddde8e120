// Package progbin gives the whole-pipeline tests (pipelines, pipelines/doctest) the
// programs under test: the directory make test built them into (APR_TEST_BIN), so
// that the two test packages do not each link all of them again, or else a fresh
// build into a temporary directory.
package progbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Dir returns a directory holding every program of root's cmd/ and a function that
// removes it when Dir built it. The build is the one make build does, without cgo.
func Dir(root string) (string, func(), error) {
	if dir := os.Getenv("APR_TEST_BIN"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "apr-quant")); err != nil {
			return "", nil, fmt.Errorf("APR_TEST_BIN=%s holds no built programs: %w", dir, err)
		}
		return dir, func() {}, nil
	}
	bin, err := os.MkdirTemp("", "apr-bin-")
	if err != nil {
		return "", nil, err
	}
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "./cmd/...")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build does (Makefile)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(bin)
		return "", nil, fmt.Errorf("building the programs: %w", err)
	}
	return bin, func() { os.RemoveAll(bin) }, nil
}

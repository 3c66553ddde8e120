// Package doctest holds the tests that read like the docs: the programs' command-line
// behaviour as testscript files (testdata/script/*.txtar, one terminal session each),
// and every command of the ```sh blocks of README.md and docs/*.md run as written
// (docs_test.go), so a doc example cannot drift from the code.
//
// go test ./pipelines/doctest/ -update rewrites the expected output files (the cmp
// targets) inside the scripts; see "Tests" in docs/DESIGN.md.
package doctest

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/apr-go/apr/pipelines/internal/progbin"
)

// update is the repository's one convention for golden files: -update rewrites them
// from what the code produces now, and the test then passes.
var update = flag.Bool("update", false, "rewrite golden files")

// root is the repository's root, testdata its fixtures (absolute paths).
var root, testdata string

// programs are the programs of cmd/ built by TestMain, all on PATH.
var programs = []string{
	"apr-encode", "apr-decode", "apr-quant", "apr-sign", "apr-seal",
	"apr-st", "apr-st-import", "apr-st-export", "apr-gguf", "apr-gguf-import", "apr-gguf-export",
	"apr-distill", "apr-predict", "apr-onnx",
}

// TestMain puts the current programs (progbin: built now, or by make test) first on
// PATH, so scripts and doc commands run exactly the code under test.
func TestMain(m *testing.M) {
	flag.Parse()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		os.Exit(m.Run()) // no processes: every test skips
	}
	var err error
	if root, err = filepath.Abs("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testdata = filepath.Join(root, "testdata")
	bin, done, err := progbin.Dir(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	code := m.Run()
	done()
	os.Exit(code)
}

// needPrograms skips where processes cannot run and checks the programs are built.
func needPrograms(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no processes under wasm")
	}
	for _, n := range programs {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("%s was not built: %v", n, err)
		}
	}
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

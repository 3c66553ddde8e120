// Package pipelines holds runnable example builds (shell scripts and a Go trainer)
// and tests that run the built programs through real shell pipes.
package pipelines

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/pipelines/internal/progbin"
)

// TestMain puts the current programs (progbin: built now, or by make test) first on
// PATH, so the scripts run exactly the code under test.
func TestMain(m *testing.M) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		os.Exit(m.Run()) // no processes: every test skips
	}
	bin, done, err := progbin.Dir("..")
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
func needPrograms(t *testing.T, names ...string) {
	t.Helper()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no processes under wasm")
	}
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("%s was not built: %v", n, err)
		}
	}
}

// long skips a whole-pipeline case that takes a minute or more in short mode (make
// test): make test-all runs it.
func long(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("short mode: " + why + "; make test-all runs it")
	}
}

// sh runs a bash script with pipefail in dir and returns its stdout, stderr and exit code.
func sh(t *testing.T, dir, script string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+script)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestDemo(t *testing.T) {
	long(t, "trains two models and runs demo.sh, as make demo does")
	needPrograms(t, "apr-encode", "apr-decode")
	dir := t.TempDir()
	cmd := exec.Command("bash", "demo.sh")
	cmd.Env = append(os.Environ(), "DEMO_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	for _, want := range []string{"R² train", "accuracy train", "OK, 2 tensors", "checksum mismatch in tensor data"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

// writeModel imports the real aprender fixture (784 coefficients) as model.apr.
func writeModel(t *testing.T, dir string) {
	t.Helper()
	src, err := filepath.Abs("../testdata/aprender/mnist_784x2.apr")
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := sh(t, dir, `apr-encode -c none < '`+src+`' > model.apr`)
	if code != 0 {
		t.Fatalf("apr-encode: %s", stderr)
	}
}

func TestPipesComposeAndVerify(t *testing.T) {
	needPrograms(t, "apr-encode", "apr-decode")
	dir := t.TempDir()
	writeModel(t, dir)
	out, stderr, code := sh(t, dir, `
cat model.apr | apr-encode -c zstd --shuffle | apr-encode -c lz4 | apr-decode plain | apr-decode verify
apr-decode plain < model.apr | cmp - model.apr && echo same
apr-decode extract model.apr -t coefficients | apr-encode -t LogisticRegression 2>/dev/null || echo "npy on stdin refused"
`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "stdin: OK, 2 tensors") || !strings.Contains(out, "same") {
		t.Fatalf("unexpected output:\n%s\n%s", out, stderr)
	}
}

// A failing stage fails the pipeline and leaves no output file behind.
func TestFailedStageLeavesNothing(t *testing.T) {
	needPrograms(t, "apr-encode", "apr-decode")
	dir := t.TempDir()
	writeModel(t, dir)
	cases := map[string]string{
		"truncated input":         `head -c 1000 model.apr | apr-encode -c zstd -o out.apr`,
		"corrupt upstream":        `(head -c 700 model.apr; printf 'X'; tail -c +702 model.apr) | apr-encode -o out.apr`,
		"not a model":             `echo hello | apr-decode plain -o out.apr`,
		"missing tensor":          `apr-decode extract model.apr -t nope -o out.apr`,
		"downstream of a failure": `head -c 1000 model.apr | apr-encode | apr-decode plain -o out.apr`,
	}
	for name, script := range cases {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := sh(t, dir, script)
			if code != 1 {
				t.Errorf("exit %d, want 1 (stderr %q)", code, stderr)
			}
			if !strings.HasPrefix(stderr, "apr-") || strings.Contains(stderr, "panic") {
				t.Errorf("stderr is not a clear program error: %q", stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "out.apr")); err == nil {
				t.Error("out.apr was left behind")
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.Contains(e.Name(), ".tmp-") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	needPrograms(t, "apr-encode", "apr-decode")
	dir := t.TempDir()
	for _, script := range []string{`apr-decode frobnicate`, `apr-encode --compress brotli < /dev/null`, `apr-encode --shuffle -c none < /dev/null`} {
		_, stderr, code := sh(t, dir, script)
		if code != 2 || !strings.Contains(stderr, "--help") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and a hint", script, code, stderr)
		}
	}
	out, _, code := sh(t, dir, `apr-encode --version; apr-decode --help`)
	if code != 0 || !strings.Contains(out, "apr-encode 0.") || !strings.Contains(out, "inspect") {
		t.Errorf("--version/--help: exit %d, %q", code, out)
	}
}

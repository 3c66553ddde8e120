package peertest

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// Python returns a Python interpreter that can import module, for peer tests that
// run a registry peer (Debian's python3-numpy, python3-torch) in a subprocess:
// APR_PYTHON if set, else Debian's /usr/bin/python3, else python3 on PATH. Without
// one the test is skipped (or fails under APR_REQUIRE_PEERS=1); pkg names the
// Debian package that provides the module. Peers need subprocesses, so js and wasip1
// builds skip, and so does -short.
func Python(t testing.TB, module, pkg string) string {
	t.Helper()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skipf("%s peer test: no subprocesses on %s", module, runtime.GOOS)
	}
	if testing.Short() {
		t.Skipf("%s peer test skipped in -short mode", module)
	}
	cands := []string{os.Getenv("APR_PYTHON"), "/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, py := range cands {
		if py == "" {
			continue
		}
		script := "import " + module + "; print(" + module + ".__version__)"
		if out, err := exec.Command(py, "-c", script).Output(); err == nil {
			t.Logf("peer: %s with %s %s", py, module, strings.TrimSpace(string(out)))
			return py
		}
	}
	Missing(t, "%s peer test: no python3 that can import %s; install Debian's %s (apt-get install -y %s) or set APR_PYTHON",
		module, module, pkg, pkg)
	return ""
}

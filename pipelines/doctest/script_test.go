package doctest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/npy"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs testdata/script/*.txtar: each is a terminal session with one
// program (or a pipe of several), read top to bottom. Besides testscript's own
// commands (exec, stdin, stdout, stderr, cmp, exists, ...) they have:
//
//	status N PROG ARGS...  run PROG and require exit status N (0 success, 1 failure, 2 usage)
//	npy FILE V...          write V... as a 1-D float32 NumPy array
//	same FILE1 FILE2       the two files (or stdout) hold the same bytes: cmp for binary
//	                       files, a difference is reported by its offset, not as a diff
//
// and the condition [peer:NAME], true when the program NAME (not one of apr's, say
// minisign) is installed; when it is not, the lines it guards are skipped, or with
// APR_REQUIRE_PEERS=1 (as .ci/run sets) the script fails.
//
// $TESTDATA is the repository's testdata. -update rewrites the files that cmp compares
// stdout or stderr with, inside the scripts.
func TestScripts(t *testing.T) {
	needPrograms(t)
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("TESTDATA", testdata)
			return nil
		},
		Condition: peerCondition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"status": cmdStatus,
			"npy":    cmdNPY,
			"same":   cmdSame,
		},
	})
}

func peerCondition(cond string) (bool, error) {
	name, ok := strings.CutPrefix(cond, "peer:")
	if !ok {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("APR_REQUIRE_PEERS") == "1" {
			return false, fmt.Errorf("%s is not installed (APR_REQUIRE_PEERS=1)", name)
		}
		return false, nil
	}
	return true, nil
}

func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! status")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: status N PROG ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status %q: %v", args[0], err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

func cmdNPY(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: npy FILE V...")
	}
	v := make([]float32, len(args)-1)
	for i, s := range args[1:] {
		f, err := strconv.ParseFloat(s, 32)
		ts.Check(err)
		v[i] = float32(f)
	}
	ts.Check(npy.WriteFile(ts.MkAbs(args[0]), dtype.F32, []int64{int64(len(v))}, f32Bytes(v)))
}

func cmdSame(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: same FILE1 FILE2")
	}
	a, b := ts.ReadFile(args[0]), ts.ReadFile(args[1]) // "stdout" and "stderr" too
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	switch equal := len(a) == len(b) && n == len(a); {
	case equal && neg:
		ts.Fatalf("%s and %s are the same (%d bytes)", args[0], args[1], len(a))
	case !equal && !neg:
		ts.Fatalf("%s (%d bytes) and %s (%d bytes) differ from offset %d", args[0], len(a), args[1], len(b), n)
	}
}

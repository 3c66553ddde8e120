package pipelines

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestSlurmBuild starts a real single-node Slurm (slurm/cluster.sh: munged, slurmctld
// and slurmd from the distribution's packages, on this machine) and runs the build of
// pipelines/Makefile through it with slurm/build.sh --wait, one array task a model:
//
//   - the files it makes are byte for byte those of a local make (with the same keys,
//     the one input a build makes up; sealed copies aside, as in TestMakeBuild), and
//     make -q finds the result up to date;
//   - the final job only assembles the manifests and checks them (every model was
//     made by its own task), and the distilled student's task, which waits for the
//     teacher's with afterok, finds the teacher made;
//   - a truncated checkpoint fails the llama's task: build.sh exits 1 and names the
//     task with its log, which holds apr-st's error; the other models are made, the
//     final job never runs, no manifest is written;
//   - the same command again, with the checkpoint repaired, remakes the llama's
//     files and the manifests and nothing else, and gives the local build's bytes.
//
// The rerun passes --cpus-per-task=2 to sbatch, which a task gives make as -j2.
//
// It needs root and the packages (Debian: slurm-wlm munge); without them it is
// skipped, or fails where the packages must be there (APR_REQUIRE_PEERS=1, as .ci/run
// sets, or CI=true).
func TestSlurmBuild(t *testing.T) {
	long(t, "starts a single-node Slurm and runs the Make build as its jobs")
	needPrograms(t, "apr-st", "apr-quant", "apr-gguf", "apr-sign", "apr-seal", "apr-distill")
	needSlurm(t)

	tmp, err := os.MkdirTemp("", "apr-slurm-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	// munged wants a socket every user can reach: the directories above it too.
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	env := slurmCluster(t, filepath.Join(tmp, "cluster"))

	in := filepath.Join(tmp, "in")
	for src, dst := range map[string]string{
		"../testdata/hf/tiny-llama": "hf",
		"../testdata/datasets":      "datasets",
		"../testdata/digits":        "digits",
	} {
		copyDir(t, src, filepath.Join(in, dst))
	}
	vars := []string{"HF=" + filepath.Join(in, "hf"), "DATASETS=" + filepath.Join(in, "datasets"),
		"DIGITS=" + filepath.Join(in, "digits")}
	build := func(out string, sbatch ...string) (string, int) {
		t.Helper()
		cmd := exec.Command("slurm/build.sh", append(append(append([]string{"--wait"}, sbatch...), out), vars...)...)
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(b), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(b), 0
	}
	// The files a build made, but for the sealed ones (random every run) and the logs.
	made := func(out string) map[string][]byte {
		return files(t, out, func(rel string) bool {
			return !strings.HasPrefix(rel, "sealed") && !strings.HasPrefix(rel, "slurm/")
		})
	}
	same := func(what string, got, want map[string][]byte) {
		t.Helper()
		if g, w := strings.Join(names(got), " "), strings.Join(names(want), " "); g != w {
			t.Errorf("%s made other files than make:\n  %s\nwant\n  %s", what, g, w)
			return
		}
		for _, n := range names(want) {
			if !bytes.Equal(got[n], want[n]) {
				t.Errorf("%s: %s differs from make's", what, n)
			}
		}
	}

	local := filepath.Join(tmp, "local")
	if log, code := runMake(t, append([]string{"-j2", "OUT=" + local}, vars...)...); code != 0 {
		t.Fatalf("make OUT=%s: exit %d\n%s", local, code, log)
	}
	want := made(local)

	// The whole build through Slurm.
	a := filepath.Join(tmp, "a")
	copyDir(t, filepath.Join(local, "keys"), filepath.Join(a, "keys"))
	log, code := build(a)
	t.Logf("build.sh --wait (a clean build):\n%s", log)
	if code != 0 || !strings.Contains(log, "build.sh: built 5 models into "+a) {
		t.Fatalf("build.sh --wait: exit %d\n%s", code, log)
	}
	same("the Slurm build", made(a), want)
	if log, code := runMake(t, append([]string{"-q", "OUT=" + a}, vars...)...); code != 0 {
		t.Errorf("make -q after the Slurm build: exit %d, want 0 (up to date)\n%s", code, log)
	}
	logs := unitLogs(t, a, log)
	for _, u := range []string{"prep", "diabetes", "breast_cancer", "digits-softmax", "digits-student", "tiny-llama", "final"} {
		if _, ok := logs[u]; !ok {
			t.Errorf("build.sh's report names no log for %s:\n%s", u, log)
		}
	}
	for _, m := range []string{"diabetes", "digits-student", "tiny-llama"} {
		if !strings.Contains(logs[m], " model-"+m+") on ") || !strings.Contains(logs[m], " task ") {
			t.Errorf("%s was not made by make model-%s in an array task:\n%s", m, m, logs[m])
		}
	}
	if strings.Contains(logs["digits-student"], "fit-logistic") {
		t.Errorf("the student's task made its teacher itself: it did not wait for the teacher's task\n%s", logs["digits-student"])
	}
	if !strings.Contains(logs["final"], "check: 5 models signed, sealed and intact") {
		t.Errorf("the final job did not check the build:\n%s", logs["final"])
	}
	for _, recipe := range []string{"apr-st import", "apr-st export", "apr-quant", "apr-sign -q -k", "apr-seal -q -r", "-model ", "apr-distill"} {
		if strings.Contains(logs["final"], recipe) {
			t.Errorf("the final job made a model's file (%q): a task left it out\n%s", recipe, logs["final"])
		}
	}

	// A truncated checkpoint: the llama's task fails and is reported with its log.
	ckpt := filepath.Join(in, "hf", "model.safetensors")
	good, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ckpt, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(tmp, "c")
	copyDir(t, filepath.Join(local, "keys"), filepath.Join(c, "keys"))
	log, code = build(c)
	t.Logf("build.sh --wait (a truncated checkpoint):\n%s", log)
	if code != 1 {
		t.Errorf("build.sh --wait over a truncated checkpoint: exit %d, want 1", code)
	}
	for _, w := range []string{"build.sh: tiny-llama: FAILED", "apr-st: " + ckpt, "build.sh: final: not run",
		"build.sh: diabetes: done", "build.sh: digits-student: done"} {
		if !strings.Contains(log, w) {
			t.Errorf("build.sh's report lacks %q", w)
		}
	}
	if logs := unitLogs(t, c, log); !strings.Contains(logs["tiny-llama"], "apr-st: "+ckpt) {
		t.Errorf("the log build.sh names for tiny-llama lacks apr-st's error:\n%s", logs["tiny-llama"])
	}
	fc := made(c)
	for _, n := range []string{"obj/tiny-llama.apr", "dist/tiny-llama.apr", "dist/tiny-llama.Q4_K_M.gguf", "manifest.sha256"} {
		if _, ok := fc[n]; ok {
			t.Errorf("the failed build left %s", n)
		}
	}
	for _, n := range []string{"dist/diabetes.apr", "dist/breast_cancer.safetensors", "dist/digits-student.apr"} {
		if _, ok := fc[n]; !ok {
			t.Errorf("the failed build did not make %s, which does not need the checkpoint", n)
		}
	}

	// The same command again, repaired: make remakes what is missing, and only that.
	if err := os.WriteFile(ckpt, good, 0o644); err != nil {
		t.Fatal(err)
	}
	before := mtimes(t, c)
	log, code = build(c, "--cpus-per-task=2")
	t.Logf("build.sh --wait (again, the checkpoint repaired):\n%s", log)
	if code != 0 {
		t.Fatalf("build.sh --wait again: exit %d\n%s", code, log)
	}
	var remade []string
	for n, m := range mtimes(t, c) {
		if !strings.HasPrefix(n, "slurm/") && !m.Equal(before[n]) {
			remade = append(remade, n)
		}
	}
	sort.Strings(remade)
	wantRemade := "dist/tiny-llama-hf/config.json dist/tiny-llama-hf/generation_config.json " +
		"dist/tiny-llama-hf/model.safetensors dist/tiny-llama-hf/special_tokens_map.json " +
		"dist/tiny-llama-hf/tokenizer.model dist/tiny-llama-hf/tokenizer_config.json " +
		"dist/tiny-llama.Q4_K_M.gguf dist/tiny-llama.apr manifest.sha256 obj/tiny-llama.apr " +
		"sealed.sha256 sealed/tiny-llama.apr"
	if got := strings.Join(remade, " "); got != wantRemade {
		t.Errorf("the second run remade\n  %s\nwant\n  %s", got, wantRemade)
	}
	logs = unitLogs(t, c, log)
	if !strings.Contains(logs["diabetes"], "Nothing to be done for 'model-diabetes'") {
		t.Errorf("the second run's diabetes task did something:\n%s", logs["diabetes"])
	}
	if !strings.Contains(logs["tiny-llama"], "(make -j2 model-tiny-llama)") {
		t.Errorf("with --cpus-per-task=2, the task did not run make -j2:\n%s", logs["tiny-llama"])
	}
	same("the repaired Slurm build", made(c), want)
}

// TestSlurmJobIndex runs slurm/job.sh as a Kubernetes Indexed Job would
// (docs/SCALE.md): without Slurm, the unit chosen by JOB_COMPLETION_INDEX.
func TestSlurmJobIndex(t *testing.T) {
	needPrograms(t, "apr-sign", "apr-seal")
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	tmp := t.TempDir()
	run, out := filepath.Join(tmp, "run"), filepath.Join(tmp, "out")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	job := func(index string) (string, int) {
		cmd := exec.Command("slurm/job.sh", run, "Makefile", out, "diabetes,prep")
		for _, e := range os.Environ() {
			if k, _, _ := strings.Cut(e, "="); !strings.HasPrefix(k, "SLURM_") && !strings.HasPrefix(k, "MAKE") && k != "MFLAGS" {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, "JOB_COMPLETION_INDEX="+index)
		b, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(b), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(b), 0
	}
	if log, code := job("2"); code != 2 || !strings.Contains(log, "no unit 2 in diabetes,prep") {
		t.Errorf("JOB_COMPLETION_INDEX=2 of two units: exit %d, want 2\n%s", code, log)
	}
	log, code := job("1")
	if code != 0 || !strings.Contains(log, "apr slurm: prep (make -j1 prep)") || !strings.Contains(log, "apr slurm: prep done") {
		t.Fatalf("JOB_COMPLETION_INDEX=1: exit %d\n%s", code, log)
	}
	for _, f := range []string{filepath.Join(run, "prep.ok"), filepath.Join(out, "keys", "signing.key"),
		filepath.Join(out, "keys", "customer.key"), filepath.Join(out, "obj", "train")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("make prep did not make %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "obj", "diabetes.apr")); err == nil {
		t.Error("JOB_COMPLETION_INDEX=1 made unit 0's model too")
	}
}

// needSlurm skips the test unless it runs as root with Slurm and MUNGE installed; where
// they must be (APR_REQUIRE_PEERS=1, or CI=true), it fails instead.
func needSlurm(t *testing.T) {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if os.Getenv("APR_REQUIRE_PEERS") == "1" || os.Getenv("CI") == "true" {
			t.Fatalf("a single-node Slurm cannot run here (APR_REQUIRE_PEERS=1 or CI=true): %s", why)
		}
		t.Skip(why)
	}
	for _, p := range []string{"munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "make"} {
		if _, err := exec.LookPath(p); err != nil {
			missing(p + " is not installed (Debian: apt-get install slurm-wlm munge)")
		}
	}
	if os.Geteuid() != 0 {
		missing("slurm/cluster.sh needs root to start slurmd")
	}
}

// slurmCluster starts a single-node Slurm in dir (slurm/cluster.sh), stops it when the
// test ends, and returns the environment for its clients: this one with SLURM_CONF,
// without the MAKEFLAGS of a make that may be running the tests (the jobs run make).
func slurmCluster(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command("slurm/cluster.sh", "start", dir).CombinedOutput()
	t.Cleanup(func() {
		if out, err := exec.Command("slurm/cluster.sh", "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("slurm/cluster.sh stop: %v\n%s", err, out)
		}
	})
	if err != nil {
		t.Fatalf("slurm/cluster.sh start: %v\n%s", err, out)
	}
	var env []string
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "SLURM_CONF" {
			env = append(env, e)
		}
	}
	return append(env, strings.TrimSpace(string(out)))
}

// unitLogs reads the log of each unit (job) that build.sh's report names, from the
// jobs file of the run it reports: unit name to log text.
func unitLogs(t *testing.T, out, report string) map[string]string {
	t.Helper()
	_, after, ok := strings.Cut(report, "logs in ")
	if !ok {
		t.Fatalf("build.sh named no run directory:\n%s", report)
		return nil
	}
	run, _, _ := strings.Cut(after, "\n")
	if filepath.Dir(filepath.Dir(run)) != out {
		t.Fatalf("build.sh put its logs in %s, not under %s/slurm", run, out)
	}
	jobs, err := os.ReadFile(filepath.Join(run, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(jobs)), "\n") {
		unit, job, _ := strings.Cut(l, " ")
		b, err := os.ReadFile(filepath.Join(run, "slurm-"+job+".out"))
		if err != nil {
			continue // the job never ran
		}
		logs[unit] = string(b)
	}
	return logs
}

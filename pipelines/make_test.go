package pipelines

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestMakeBuild runs pipelines/Makefile the way its README describes, on copies of the
// checkpoint and data sets (so the test can touch and corrupt them):
//
//   - make -j4 and make -j1 (into another OUT, with the first build's keys, the one
//     input a build makes up) give the same bytes, file for file; the sealed copies
//     and their list are left out, since sealing draws random keys every run, and
//     make check shows instead that each holds its signed file's content;
//   - a second make does nothing, and make -q says everything is up to date;
//   - touching one data set rebuilds its products (and the manifests) and nothing else;
//   - a corrupted checkpoint fails the build (make -k builds the rest), leaves none of
//     its products and no temporary files, and leaves the build out of date; in a
//     build that had them, the previous products stay as they were, still out of date.
func TestMakeBuild(t *testing.T) {
	long(t, "runs pipelines/Makefile twice, as make models does")
	needPrograms(t, "apr-st", "apr-quant", "apr-gguf", "apr-sign", "apr-seal", "apr-distill")
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	tmp := t.TempDir()
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
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	mk := func(out string, args ...string) (string, int) {
		return runMake(t, append(append(args, "OUT="+out), vars...)...)
	}
	must := func(out string, args ...string) string {
		t.Helper()
		log, code := mk(out, args...)
		if code != 0 {
			t.Fatalf("make %s OUT=%s: exit %d\n%s", strings.Join(args, " "), out, code, log)
		}
		return log
	}

	must(a, "-j4")
	copyDir(t, filepath.Join(a, "keys"), filepath.Join(b, "keys"))
	must(b, "-j1")
	reproducible := func(rel string) bool { return !strings.HasPrefix(rel, "sealed") }
	fa, fb := files(t, a, reproducible), files(t, b, reproducible)
	if strings.Join(names(fa), " ") != strings.Join(names(fb), " ") {
		t.Fatalf("make -j4 and make -j1 made different files:\n%v\n%v", names(fa), names(fb))
	}
	for _, n := range names(fa) {
		if !bytes.Equal(fa[n], fb[n]) {
			t.Errorf("%s: make -j4 and make -j1 made different bytes", n)
		}
	}
	for _, want := range []string{"dist/tiny-llama.Q4_K_M.gguf", "dist/tiny-llama.apr", "dist/tiny-llama-hf/model.safetensors",
		"dist/diabetes.apr", "dist/diabetes.safetensors", "dist/breast_cancer.apr", "dist/digits-student.apr", "manifest.sha256"} {
		if _, ok := fa[want]; !ok {
			t.Errorf("the build made no %s", want)
		}
	}
	// Every deliverable is in the manifest.
	manifest := string(fa["manifest.sha256"])
	for _, n := range names(fa) {
		if strings.HasPrefix(n, "dist/") && !strings.Contains(manifest, "  "+n+"\n") {
			t.Errorf("manifest.sha256 lacks %s:\n%s", n, manifest)
		}
	}
	// The GGUF is llama-quantize's q4_k_m, as apr-gguf export writes it in a pipe.
	want, _, code := sh(t, tmp, `apr-st import in/hf/ | apr-quant -q q4_k_m | apr-gguf export`)
	if code != 0 || want != string(fa["dist/tiny-llama.Q4_K_M.gguf"]) {
		t.Errorf("dist/tiny-llama.Q4_K_M.gguf is not the pipe's output (exit %d)", code)
	}
	for _, out := range []string{a, b} {
		if log := must(out, "check"); !strings.Contains(log, "5 models signed, sealed and intact") {
			t.Errorf("make check OUT=%s:\n%s", out, log)
		}
	}

	if log := must(a); !strings.Contains(log, "Nothing to be done") {
		t.Errorf("a second make did something:\n%s", log)
	}
	if log, code := mk(a, "-q"); code != 0 {
		t.Errorf("make -q after a build: exit %d, want 0\n%s", code, log)
	}

	// Touch one data set: only its products are rebuilt.
	before := mtimes(t, a)
	if _, stderr, code := sh(t, in, "touch datasets/diabetes_target.csv.gz"); code != 0 {
		t.Fatal(stderr)
	}
	must(a, "-j4")
	var rebuilt []string
	for n, m := range mtimes(t, a) {
		if !m.Equal(before[n]) {
			rebuilt = append(rebuilt, n)
		}
	}
	sort.Strings(rebuilt)
	wantRebuilt := "dist/diabetes.apr dist/diabetes.safetensors manifest.sha256 obj/diabetes.apr sealed.sha256 sealed/diabetes.apr"
	if got := strings.Join(rebuilt, " "); got != wantRebuilt {
		t.Errorf("touching diabetes_target.csv.gz rebuilt\n  %s\nwant\n  %s", got, wantRebuilt)
	}
	if !bytes.Equal(files(t, a, reproducible)["manifest.sha256"], fa["manifest.sha256"]) {
		t.Error("the rebuilt diabetes model has different bytes")
	}
	if log, code := mk(a, "-q"); code != 0 {
		t.Errorf("make -q after the rebuild: exit %d, want 0\n%s", code, log)
	}

	// A corrupted checkpoint: the stages that read it fail and leave nothing.
	ckpt := filepath.Join(in, "hf", "model.safetensors")
	data, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ckpt, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	llama := []string{"obj/tiny-llama.apr", "dist/tiny-llama.apr", "dist/tiny-llama.Q4_K_M.gguf",
		"dist/tiny-llama-hf/model.safetensors", "sealed/tiny-llama.apr", "manifest.sha256", "sealed.sha256"}
	// In a fresh OUT: no product of the checkpoint, everything else (make -k).
	c := filepath.Join(tmp, "c")
	log, code := mk(c, "-k", "-j4")
	if code == 0 {
		t.Fatalf("make over a corrupted checkpoint succeeded:\n%s", log)
	}
	fc := files(t, c, func(string) bool { return true })
	for _, n := range llama {
		if _, ok := fc[n]; ok {
			t.Errorf("the failed build left %s", n)
		}
	}
	for n := range fc {
		if strings.Contains(n, "tmp") || strings.HasPrefix(filepath.Base(n), ".") {
			t.Errorf("the failed build left a temporary file %s", n)
		}
	}
	for _, n := range []string{"dist/diabetes.apr", "dist/breast_cancer.safetensors", "sealed/digits-student.apr"} {
		if _, ok := fc[n]; !ok {
			t.Errorf("make -k did not build %s, which does not depend on the checkpoint", n)
		}
	}
	for _, args := range [][]string{{"-q"}, {}} {
		if log, code := mk(c, args...); code == 0 {
			t.Errorf("make %v after a failure: exit 0; the failed targets must stay out of date\n%s", args, log)
		}
	}
	// In the complete build: the old products stay (untouched) and out of date.
	if log, code := mk(a, "-j4"); code == 0 {
		t.Errorf("rebuilding over a corrupted checkpoint succeeded:\n%s", log)
	}
	fa2 := files(t, a, reproducible)
	for _, n := range llama[:4] {
		if !bytes.Equal(fa2[n], fa[n]) {
			t.Errorf("the failed rebuild changed %s", n)
		}
	}
	if log, code := mk(a, "-q"); code == 0 {
		t.Errorf("make -q after a failed rebuild: exit 0, want out of date\n%s", log)
	}
}

// runMake runs make -f Makefile (this directory's) without the MAKEFLAGS of a make
// that may be running the tests, and returns its combined output and exit status.
func runMake(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-f", "Makefile"}, args...)...)
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// files reads every regular file under dir whose slash-separated relative name keep
// accepts.
func files(t *testing.T, dir string, keep func(string) bool) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if !keep(rel) {
			return nil
		}
		m[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func names(m map[string][]byte) []string {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// mtimes are the modification times of the files under dir, by relative name.
func mtimes(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	m := map[string]time.Time{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[filepath.ToSlash(rel)] = info.ModTime()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// copyDir copies the regular files of src (recursively) into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

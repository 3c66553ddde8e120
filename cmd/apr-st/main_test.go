package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stconv"
)

const valid = "../../testdata/safetensors/valid"

type result struct {
	code           int
	stdout, stderr string
}

func runIn(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"import", "--help"}, {"export", "--help"}} {
		r := runIn(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: apr-st") {
			t.Errorf("%v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
	if r := runIn(t, nil, "export", "--help"); !strings.Contains(r.stdout, "--shard-size") || !strings.Contains(r.stdout, "--dtype") {
		t.Errorf("export help lacks its flags: %s", r.stdout)
	}
	if r := runIn(t, nil, "--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "apr-st "+apr.Version) {
		t.Errorf("--version: %d %q", r.code, r.stdout)
	}
}

// TestFileAndPipeRoundTrip: import and export through files and through pipes (in
// memory here) give back the crate's bytes.
func TestFileAndPipeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"big_f32", "all_dtypes", "meta_one_key", "empty"} {
		src := filepath.Join(valid, name+".safetensors")
		want, _ := os.ReadFile(src)
		aprPath := filepath.Join(dir, name+".apr")
		if r := runIn(t, nil, "import", src, "-o", aprPath); r.code != 0 {
			t.Fatalf("import: %+v", r)
		}
		out := filepath.Join(dir, name+".safetensors")
		if r := runIn(t, nil, "export", aprPath, "-o", out); r.code != 0 {
			t.Fatalf("export: %+v", r)
		}
		if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
			t.Errorf("%s: file round trip differs", name)
		}
		imp := runIn(t, want, "import", "-c", "zstd")
		if imp.code != 0 {
			t.Fatalf("pipe import: %+v", imp)
		}
		exp := runIn(t, []byte(imp.stdout), "export")
		if exp.code != 0 || exp.stdout != string(want) {
			t.Errorf("%s: pipe round trip: exit %d, stderr %q", name, exp.code, exp.stderr)
		}
	}
}

// TestRedirectedStdin: a regular file on stdin takes the mapped path, which can
// record the digest (--digest); by default there is none, and a pipe refuses --digest.
func TestRedirectedStdin(t *testing.T) {
	src := filepath.Join(valid, "big_f32.safetensors")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	for _, digest := range []bool{false, true} {
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"import"}
		if digest {
			args = append(args, "--digest")
		}
		var out, errb bytes.Buffer
		if code := run(args, f, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		info, err := apr.InspectReader(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		files, _ := info.Metadata.Provenance[stconv.ProvFiles].([]any)
		if len(files) != 1 {
			t.Fatalf("%v: source_files %v", args, info.Metadata.Provenance)
		}
		got, _ := files[0].(map[string]any)["sha256"].(string)
		if want := hex.EncodeToString(sum[:]); digest && got != want || !digest && got != "" {
			t.Errorf("%v: sha256 %q (want it only with --digest: %s)", args, got, want)
		}
	}
	var errb bytes.Buffer
	if code := run([]string{"import", "--digest"}, bytes.NewReader(b), io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), "--digest needs a file") {
		t.Errorf("--digest on a pipe: exit %d: %s", code, errb.String())
	}
}

// TestBadInput: truncated and hostile files fail with exit 1, an error naming the
// file and the crate's error kind, and no output file.
func TestBadInput(t *testing.T) {
	good, _ := os.ReadFile(filepath.Join(valid, "big_f32.safetensors"))
	dir := t.TempDir()
	hostile := append([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, "{}"...)
	overlap, _ := os.ReadFile("../../testdata/safetensors/cases/overlap.safetensors")
	for _, c := range []struct {
		name string
		b    []byte
		kind string
	}{
		{"truncated", good[:len(good)-100], "MetadataIncompleteBuffer"},
		{"hostile-length", hostile, "HeaderTooLarge"},
		{"overlap", overlap, "InvalidOffset"},
		{"not-safetensors", []byte("APRN\x02 not really"), "HeaderTooLarge"},
	} {
		in := filepath.Join(dir, c.name+".safetensors")
		os.WriteFile(in, c.b, 0o644)
		out := filepath.Join(dir, c.name+".apr")
		r := runIn(t, nil, "import", in, "-o", out)
		if r.code != 1 || !strings.Contains(r.stderr, in) || !strings.Contains(r.stderr, c.kind) || !strings.HasPrefix(r.stderr, "apr-st: ") {
			t.Errorf("%s: exit %d, stderr %q", c.name, r.code, r.stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: output file left behind", c.name)
		}
		r = runIn(t, c.b, "import", "-o", out)
		if r.code != 1 || !strings.Contains(r.stderr, c.kind) {
			t.Errorf("%s from a pipe: exit %d, stderr %q", c.name, r.code, r.stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s from a pipe: output file left behind", c.name)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// Export of something that is not an APR model.
	out := filepath.Join(dir, "x.safetensors")
	if r := runIn(t, good, "export", "-o", out); r.code != 1 || !strings.Contains(r.stderr, "stdin") {
		t.Errorf("export of a non-APR input: %+v", r)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("failed export left its output")
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"export", "--shard-size", "5GB"},
		{"export", "--shard-size", "lots", "-o", "d/"},
		{"export", "--dtype", "q4_0"},
		{"import", "--shuffle"},
		{"import", "--type", "NoSuchModel"},
		{"frobnicate"},
	} {
		if r := runIn(t, nil, args...); r.code != 2 || !strings.Contains(r.stderr, "--help") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

// TestShardedExport: --shard-size writes shards, an index and nothing else; the
// checkpoint imports back to the same tensors.
func TestShardedExport(t *testing.T) {
	dir := t.TempDir()
	aprPath := filepath.Join(dir, "m.apr")
	if r := runIn(t, nil, "import", filepath.Join(valid, "big_f32.safetensors"), "-o", aprPath); r.code != 0 {
		t.Fatal(r)
	}
	ck := filepath.Join(dir, "ck")
	if r := runIn(t, nil, "export", aprPath, "--shard-size", "600B", "-o", ck); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	ents, _ := os.ReadDir(ck)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 3 || names[2] != "model.safetensors.index.json" {
		t.Fatalf("checkpoint files %v", names)
	}
	var ix struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	b, _ := os.ReadFile(filepath.Join(ck, "model.safetensors.index.json"))
	if err := json.Unmarshal(b, &ix); err != nil || len(ix.WeightMap) != 4 {
		t.Fatalf("index %s: %v", b, err)
	}
	r := runIn(t, nil, "import", ck)
	if r.code != 0 {
		t.Fatalf("re-import: %+v", r)
	}
	single := runIn(t, []byte(r.stdout), "export")
	want, _ := os.ReadFile(filepath.Join(valid, "big_f32.safetensors"))
	if single.stdout != string(want) {
		t.Error("sharded checkpoint re-imported and exported as one file differs from the original")
	}
}

// TestModelExportLayout: apr-st export of an APR LinearRegression is the case study's
// layout and exactly the file stconv.SaveModel writes.
func TestModelExportLayout(t *testing.T) {
	dir := t.TempDir()
	x, _ := model.NewMatrix(4, 2, []float64{1, 2, 2, 1, 3, 4, 4, 3})
	m := model.NewLinearRegression()
	if err := m.Fit(x, []float64{5, 4, 11, 10}); err != nil {
		t.Fatal(err)
	}
	aprPath := filepath.Join(dir, "lin.apr")
	if err := apr.Save(aprPath, m, apr.SaveOptions{Name: "lin"}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "lin.safetensors")
	if r := runIn(t, nil, "export", aprPath, "-o", out); r.code != 0 {
		t.Fatal(r)
	}
	saved := filepath.Join(dir, "saved.safetensors")
	if err := stconv.SaveModel(saved, m); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(saved)
	if !bytes.Equal(a, b) {
		t.Errorf("export %q\n!= SaveModel %q", a, b)
	}
	got, err := stconv.LoadModel[*model.LinearRegressionModel](out, modeltype.LinearRegression)
	if err != nil || got.Intercept != m.Intercept {
		t.Errorf("load of the export: %v", err)
	}
}

// TestNumPyPeerReadsExport: Debian's python3-numpy reads what apr-st export writes,
// with the values of the model.
func TestNumPyPeerReadsExport(t *testing.T) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no subprocesses on " + runtime.GOOS)
	}
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import numpy").CombinedOutput(); err != nil {
		msg := "peer test skipped: " + py + " cannot import numpy (install python3-numpy; CI does): " + string(out)
		if os.Getenv("APR_REQUIRE_PEERS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	m := &model.LogisticRegressionModel{LearningRate: 0.1, MaxIter: 10, Coefficients: []float32{0.25, -1.5, 3}, Intercept: -0.125}
	aprPath := filepath.Join(dir, "m.apr")
	if err := apr.Save(aprPath, m, apr.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m.safetensors")
	if r := runIn(t, nil, "export", aprPath, "-o", out); r.code != 0 {
		t.Fatal(r)
	}
	const script = `
import json, struct, sys
import numpy as np
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
meta = h.pop("__metadata__", {})
out = {"type": meta.get("apr.model_type")}
for k, t in h.items():
    s, e = t["data_offsets"]
    a = np.frombuffer(b[8 + n + s:8 + n + e], dtype="<f4").reshape(t["shape"])
    out[k] = [t["dtype"], list(a.shape), [float(v) for v in a.ravel()]]
print(json.dumps(out, sort_keys=True))
`
	got, err := exec.Command(py, "-c", script, out).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"coefficients": ["F32", [3], [0.25, -1.5, 3.0]], "intercept": ["F32", [1], [-0.125]], "type": "LogisticRegression"}`
	if strings.TrimSpace(string(got)) != want {
		t.Errorf("numpy read %s\nwant %s", got, want)
	}
}

// TestImportToFilePatched: import --digest -o FILE (digests computed beside the
// conversion and patched in) gives the bytes of the import to stdout (digests first), for every valid
// file, a checkpoint directory and a redirected stdin; a bad redirected stdin leaves no
// output.
func TestImportToFilePatched(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	inputs, err := filepath.Glob(filepath.Join(valid, "*.safetensors"))
	if err != nil || len(inputs) == 0 {
		t.Fatal(err)
	}
	// A sharded checkpoint directory, exported from an import of all_dtypes.
	all := filepath.Join(dir, "all.apr")
	if r := runIn(t, nil, "import", filepath.Join(valid, "all_dtypes.safetensors"), "-o", all); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	ck := filepath.Join(dir, "ck")
	if r := runIn(t, nil, "export", all, "--shard-size", "16", "-o", ck+"/"); r.code != 0 {
		t.Fatalf("export: %+v", r)
	}
	if shards, _ := filepath.Glob(filepath.Join(ck, "*.safetensors")); len(shards) < 2 {
		t.Fatalf("checkpoint has %d shards", len(shards))
	}
	inputs = append(inputs, ck)
	for _, in := range inputs {
		for _, extra := range [][]string{{"--digest"}, {"--digest", "-c", "zstd"}} {
			want := runIn(t, nil, append([]string{"import", in}, extra...)...)
			if want.code != 0 {
				t.Fatalf("%s: %+v", in, want)
			}
			out := filepath.Join(dir, "out.apr")
			if r := runIn(t, nil, append([]string{"import", in, "-o", out}, extra...)...); r.code != 0 {
				t.Fatalf("%s -o: %+v", in, r)
			}
			if got, _ := os.ReadFile(out); string(got) != want.stdout {
				t.Errorf("%s %v: import -o differs from the import to stdout", in, extra)
			}
			if strings.HasSuffix(in, ".safetensors") {
				f, err := os.Open(in)
				if err != nil {
					t.Fatal(err)
				}
				var errb bytes.Buffer
				if code := run(append([]string{"import", "-o", out}, extra...), f, io.Discard, &errb); code != 0 {
					t.Fatalf("%s: redirected stdin -o: exit %d: %s", in, code, errb.String())
				}
				f, _ = os.Open(in)
				var stdout bytes.Buffer
				if code := run(append([]string{"import"}, extra...), f, &stdout, &errb); code != 0 {
					t.Fatalf("%s: redirected stdin: exit %d: %s", in, code, errb.String())
				}
				if got, _ := os.ReadFile(out); !bytes.Equal(got, stdout.Bytes()) {
					t.Errorf("%s %v: redirected stdin: import -o differs from the import to stdout", in, extra)
				}
			}
		}
	}
	bad := filepath.Join(dir, "bad.safetensors")
	good, _ := os.ReadFile(filepath.Join(valid, "big_f32.safetensors"))
	os.WriteFile(bad, good[:len(good)-100], 0o644)
	f, err := os.Open(bad)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bad.apr")
	var errb bytes.Buffer
	if code := run([]string{"import", "-o", out}, f, io.Discard, &errb); code != 1 {
		t.Errorf("bad redirected stdin: exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("bad redirected stdin: output file left behind")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

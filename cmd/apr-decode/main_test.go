package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/seal"
)

// fixture saves a small LinearRegression model (zstd + shuffle) and returns its path.
func fixture(t *testing.T) string {
	t.Helper()
	x, _ := model.FromRows([][]float64{{0, 1}, {1, 0}, {2, 2}, {3, 5}})
	m := model.NewLinearRegression()
	if err := m.Fit(x, []float64{1, 2, 6, 13}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.apr")
	err := apr.Save(path, m, apr.SaveOptions{Name: "cli-test", Metrics: map[string]any{"r2": 1.0},
		Compression: container.CompressZstd, Shuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func runIt(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func TestInspectTextAndJSON(t *testing.T) {
	path := fixture(t)
	out, _, code := runIt(t, nil, "inspect", path)
	for _, want := range []string{"LinearRegression (0x0001)", "cli-test", "coefficients", "zstd+shuffle", "compressed,shuffled"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	b, _ := os.ReadFile(path)
	out, _, code = runIt(t, b, "inspect", "--json")
	var v struct {
		ModelType string `json:"model_type"`
		Tensors   []struct {
			Name  string  `json:"name"`
			Shape []int64 `json:"shape"`
		} `json:"tensors"`
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("inspect --json from stdin: %v (exit %d)\n%s", err, code, out)
	}
	if v.ModelType != "LinearRegression" || len(v.Tensors) != 2 || v.Tensors[0].Shape[0] != 2 || v.Metadata["name"] != "cli-test" {
		t.Errorf("unexpected JSON: %+v", v)
	}
}

func TestVerify(t *testing.T) {
	path := fixture(t)
	if out, _, code := runIt(t, nil, "verify", path); code != 0 || !strings.Contains(out, "OK, 2 tensors") {
		t.Fatalf("verify: exit %d %q", code, out)
	}
	b, _ := os.ReadFile(path)
	for _, bad := range [][]byte{b[:len(b)-1], append(append([]byte(nil), b...), 0), flip(b, len(b)/2), nil} {
		out, stderr, code := runIt(t, bad, "verify")
		if code != 1 || out != "" || !strings.HasPrefix(stderr, "apr-decode: stdin: ") {
			t.Errorf("damaged input: exit %d, stdout %q, stderr %q", code, out, stderr)
		}
	}
	if _, stderr, code := runIt(t, nil, "verify", filepath.Join(t.TempDir(), "missing.apr")); code != 1 || !strings.Contains(stderr, "missing.apr") {
		t.Errorf("missing file: exit %d %q", code, stderr)
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x20
	return c
}

func TestExtractAndPlain(t *testing.T) {
	path := fixture(t)
	dir := t.TempDir()
	npyPath := filepath.Join(dir, "c.npy")
	if _, stderr, code := runIt(t, nil, "extract", path, "--tensor", "coefficients", "-o", npyPath); code != 0 || stderr != "" {
		t.Fatalf("extract: %s", stderr)
	}
	// -t, the old spelling of --tensor, works for one release with a notice.
	old := filepath.Join(dir, "old.npy")
	if _, stderr, code := runIt(t, nil, "extract", path, "-t", "coefficients", "-o", old); code != 0 ||
		stderr != "apr-decode: -t for a tensor name is deprecated; use --tensor\n" {
		t.Fatalf("extract -t: %q", stderr)
	}
	if a, b := readFile(t, npyPath), readFile(t, old); !bytes.Equal(a, b) {
		t.Fatal("extract -t and --tensor differ")
	}
	b, _ := os.ReadFile(npyPath)
	if !bytes.HasPrefix(b, []byte("\x93NUMPY")) || !bytes.Contains(b, []byte("'shape': (2,)")) {
		t.Errorf("not the expected .npy: %q", b[:min(len(b), 80)])
	}
	plain := filepath.Join(dir, "plain.apr")
	if _, stderr, code := runIt(t, nil, "plain", path, "-o", plain); code != 0 {
		t.Fatalf("plain: %s", stderr)
	}
	info, err := container.Inspect(plain)
	if err != nil || info.Flags != 0 || info.Tensors[0].Codec != container.CodecNone {
		t.Fatalf("plain output: %+v %v", info, err)
	}
	m, err := apr.Load[*model.LinearRegressionModel](plain, modeltype.LinearRegression)
	if err != nil || len(m.Coefficients) != 2 {
		t.Fatalf("plain output does not load: %v", err)
	}
	if _, stderr, code := runIt(t, nil, "extract", path, "--format", "npy"); code != 2 || !strings.Contains(stderr, "--tensor") {
		t.Errorf("npy without a tensor: exit %d %q", code, stderr)
	}
}

// A sealed file verifies without its key: every chunk CRC covers the ciphertext.
func TestVerifySealedWithoutKey(t *testing.T) {
	x, _ := model.FromRows([][]float64{{0, 1}, {1, 0}, {2, 2}})
	m := model.NewLinearRegression()
	if err := m.Fit(x, []float64{1, 2, 6}); err != nil {
		t.Fatal(err)
	}
	id, err := seal.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sealed.apr")
	if err := apr.SaveForRecipient(path, m, apr.SaveOptions{}, id.Recipient()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if out, stderr, code := runIt(t, b, "verify"); code != 0 || !strings.Contains(out, "OK, 2 tensors") {
		t.Fatalf("verify of a sealed file: exit %d %q %q", code, out, stderr)
	}
	if _, _, code := runIt(t, flip(b, len(b)/2), "verify"); code != 1 {
		t.Errorf("damaged sealed file: exit %d, want 1", code)
	}
}

func TestInspectQuantizationAndErrors(t *testing.T) {
	path := fixture(t)
	out, _, code := runIt(t, nil, "inspect", "--quantization", path)
	if code != 0 || !strings.Contains(out, "quantization:") || !strings.Contains(out, "bits per weight") {
		t.Errorf("inspect --quantization: exit %d\n%s", code, out)
	}
	empty := filepath.Join(t.TempDir(), "empty.apr")
	os.WriteFile(empty, nil, 0o644)
	if _, stderr, code := runIt(t, nil, "inspect", empty); code != 1 || !strings.Contains(stderr, "too short for an APR v2 file") {
		t.Errorf("empty file: exit %d %q", code, stderr)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTerminalInjection: strings from the file (metadata values and keys, tensor
// names) reach the terminal escaped, so they cannot clear the screen or forge a line;
// --json keeps them exact.
func TestTerminalInjection(t *testing.T) {
	evil := "x\x1b[2J\r\nverified: OK\x07"
	md := container.Metadata{Name: evil, Custom: map[string]any{"k\x1b[31m": evil, "list": []any{evil}}}
	var buf bytes.Buffer
	w, err := container.NewWriter(&buf, container.Header{Type: modeltype.Custom, Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensorBytes(container.TensorInfo{Name: "w\x1b]0;owned\x07", DType: dtype.U8, Shape: []int64{2}}, []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "evil.apr")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := runIt(t, nil, "inspect", path)
	if code != 0 {
		t.Fatalf("inspect exit %d", code)
	}
	if strings.ContainsAny(out, "\x1b\r\x07") || strings.Contains(out, "\nverified: OK") {
		t.Fatalf("control characters from the file reach the terminal:\n%q", out)
	}
	if !strings.Contains(out, `"x\x1b[2J\r\nverified: OK\a"`) || !strings.Contains(out, `"w\x1b]0;owned\a"`) {
		t.Fatalf("escaped strings missing:\n%s", out)
	}
	_, errOut, code := runIt(t, nil, "extract", path, "--tensor", "nope", "-o", filepath.Join(t.TempDir(), "x.npz"))
	if code == 0 || strings.ContainsAny(errOut, "\x1b\x07") || !strings.Contains(errOut, `"w\x1b]0;owned\a"`) {
		t.Fatalf("extract error (exit %d) shows the names unescaped or not at all: %q", code, errOut)
	}
	js, _, code := runIt(t, nil, "inspect", "--json", path)
	var got struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(js), &got); code != 0 || err != nil || got.Metadata["name"] != evil {
		t.Fatalf("--json does not keep the name exact: %v %v %q", code, err, got.Metadata["name"])
	}
}

// TestSuggestedFlagExists: the flag an error suggests is one the program takes.
func TestSuggestedFlagExists(t *testing.T) {
	var buf bytes.Buffer
	w, _ := container.NewWriter(&buf, container.Header{Type: modeltype.Custom})
	w.WriteTensorBytes(container.TensorInfo{Name: "w", DType: dtype.BF16, Shape: []int64{2}}, []byte{0x80, 0x3f, 0, 0x40})
	w.Close()
	path := filepath.Join(t.TempDir(), "bf16.apr")
	os.WriteFile(path, buf.Bytes(), 0o644)
	out := filepath.Join(t.TempDir(), "w.npy")
	_, stderr, code := runIt(t, nil, "extract", path, "-o", out)
	if code != 1 || !strings.Contains(stderr, "use --f32") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, stderr, code := runIt(t, nil, "extract", path, "--f32", "-o", out); code != 0 {
		t.Fatalf("--f32, as suggested: exit %d: %s", code, stderr)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/npy"
)

func runIt(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func TestBuildFromNumPyAndReencode(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	coef := filepath.Join(dir, "coefficients.npy")
	icpt := filepath.Join(dir, "intercept.npy")
	if err := npy.WriteFile(coef, dtype.F32, []int64{2}, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(icpt, dtype.F32, []int64{1}, []byte{0, 0, 0x40, 0x40}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m.apr")
	_, stderr, code := runIt(t, nil, "-t", "LinearRegression", "--name", "n", "--hyper", "lr=0.5", "--metric", "r2=0.9",
		"--meta", "owner=team a,b", coef, icpt, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := container.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	h := f.Header()
	if h.Type != modeltype.LinearRegression || h.Metadata.Name != "n" || h.Metadata.Hyperparameters["lr"] != 0.5 ||
		h.Metadata.Custom["owner"] != "team a,b" || len(f.Entries()) != 2 || f.Entries()[0].Name != "coefficients" {
		t.Fatalf("unexpected file: %+v %+v", h, f.Entries())
	}
	f.Close()
	first, _ := os.ReadFile(out)
	// Re-encode through stdin/stdout with an edit, then back: same tensors, new metadata.
	lz4, stderr, code := runIt(t, first, "-c", "lz4", "--shuffle", "--unset", "owner", "--name", "renamed")
	if code != 0 {
		t.Fatalf("re-encode: %s", stderr)
	}
	info, err := container.InspectStream(strings.NewReader(lz4))
	if err != nil || info.Metadata.Name != "renamed" || info.Metadata.Custom["owner"] != nil || info.Tensors[0].Codec != container.CodecLZ4 {
		t.Fatalf("re-encoded: %+v %v", info, err)
	}
	back, _, code := runIt(t, []byte(lz4), "-c", "zstd", "--name", "n", "--meta", "owner=team a,b")
	if code != 0 || !bytes.Equal([]byte(back), first) {
		t.Error("re-encoding back to the original settings did not give the original bytes")
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	// A .npy with bytes after its data, refused as the same .npz member is.
	trailing := filepath.Join(dir, "trailing.npy")
	if err := npy.WriteFile(trailing, dtype.F32, []int64{2}, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if f, err := os.OpenFile(trailing, os.O_APPEND|os.O_WRONLY, 0); err == nil {
		f.Write([]byte("EXTRA"))
		f.Close()
	}
	cases := []struct {
		args []string
		in   []byte
		code int
		msg  string
	}{
		{[]string{"-t", "NoSuchType", filepath.Join(dir, "x.npy")}, nil, 2, "unknown model type"},
		{[]string{filepath.Join(dir, "missing.npy"), "-o", filepath.Join(dir, "o.apr")}, nil, 1, "missing.npy"},
		{[]string{"-o", filepath.Join(dir, "o.apr")}, []byte("not a model at all, just text"), 1, "stdin"},
		{[]string{"-t", "KMeans", "-o", filepath.Join(dir, "o.apr")}, nil, 1, ""},
		{[]string{"a.npy", "b.apr"}, nil, 2, "mix"},
		{[]string{trailing, "-o", filepath.Join(dir, "o.apr")}, nil, 1, "unexpected bytes after the 8 data bytes"},
		{[]string{"--meta", "novalue", trailing, "-o", filepath.Join(dir, "o.apr")}, nil, 2, "--meta novalue: expected KEY=VALUE"},
	}
	for _, c := range cases {
		_, stderr, code := runIt(t, c.in, c.args...)
		if code != c.code || !strings.HasPrefix(stderr, "apr-encode: ") || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "o.apr")); err == nil {
		t.Error("an output file was left behind")
	}
}

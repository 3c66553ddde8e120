package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testdata = "../../testdata/gguf"

func runIt(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// TestRoundTrip: import then export gives the original bytes, file to file and
// through stdin/stdout.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"tiny-llama.Q4_0.gguf", "allkv.gguf"} {
		src := filepath.Join(testdata, name)
		orig, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		aprPath := filepath.Join(dir, name+".apr")
		if _, stderr, code := runIt(t, nil, "import", src, "-o", aprPath); code != 0 {
			t.Fatalf("import %s: exit %d: %s", name, code, stderr)
		}
		back := filepath.Join(dir, name)
		if _, stderr, code := runIt(t, nil, "export", aprPath, "-o", back); code != 0 {
			t.Fatalf("export %s: exit %d: %s", name, code, stderr)
		}
		if got, _ := os.ReadFile(back); !bytes.Equal(got, orig) {
			t.Errorf("%s: file round trip differs", name)
		}
		// Pipes, with compression in between.
		aprBytes, stderr, code := runIt(t, orig, "import", "-c", "zstd")
		if code != 0 {
			t.Fatalf("import from stdin: exit %d: %s", code, stderr)
		}
		ggufBytes, stderr, code := runIt(t, []byte(aprBytes), "export", "--temp-dir", dir)
		if code != 0 {
			t.Fatalf("export from stdin: exit %d: %s", code, stderr)
		}
		if ggufBytes != string(orig) {
			t.Errorf("%s: pipe round trip differs", name)
		}
	}
}

// TestHostile: damaged inputs fail with exit 1, a message naming the input, and no
// output file.
func TestHostile(t *testing.T) {
	dir := t.TempDir()
	orig, err := os.ReadFile(filepath.Join(testdata, "small.Q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"truncated.gguf": orig[:len(orig)-7],
		"trailing.gguf":  append(append([]byte(nil), orig...), 1, 2, 3),
		"header.gguf":    orig[:200],
		"counts.gguf":    append(append([]byte(nil), orig[:8]...), append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, orig[16:]...)...),
		"empty.gguf":     nil,
		"notgguf.gguf":   []byte("hello, world"),
	}
	for name, b := range bad {
		in := filepath.Join(dir, name)
		if err := os.WriteFile(in, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name+".apr")
		_, stderr, code := runIt(t, nil, "import", in, "-o", out)
		if code != 1 || !strings.HasPrefix(stderr, "apr-gguf: ") || !strings.Contains(stderr, name) {
			t.Errorf("import %s: exit %d, stderr %q", name, code, stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("import %s left an output file", name)
		}
		_, stderr, code = runIt(t, b, "import", "-o", out)
		if code != 1 || !strings.Contains(stderr, "stdin") {
			t.Errorf("import %s from stdin: exit %d, stderr %q", name, code, stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("import %s from stdin left an output file", name)
		}
	}
	// A damaged APR file does not export.
	aprPath := filepath.Join(dir, "ok.apr")
	if _, stderr, code := runIt(t, orig, "import", "-o", aprPath); code != 0 {
		t.Fatal(stderr)
	}
	a, _ := os.ReadFile(aprPath)
	for i, b := range [][]byte{a[:len(a)-1], flip(a, len(a)/2), flip(a, 100)} {
		in := filepath.Join(dir, "bad.apr")
		os.WriteFile(in, b, 0o644)
		out := filepath.Join(dir, "bad.gguf")
		if _, stderr, code := runIt(t, nil, "export", in, "-o", out); code != 1 || stderr == "" {
			t.Errorf("export of damaged APR %d: exit %d %q", i, code, stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("export of damaged APR %d left an output file", i)
		}
		if _, _, code := runIt(t, b, "export", "-o", out, "--temp-dir", dir); code != 1 {
			t.Errorf("export of damaged APR %d from stdin: exit %d", i, code)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("export of damaged APR %d from stdin left an output file", i)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.spool")); len(left) != 0 {
		t.Errorf("spool files left: %v", left)
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x10
	return c
}

func TestUsage(t *testing.T) {
	out, _, code := runIt(t, nil, "--help")
	if code != 0 || !strings.Contains(out, "import") || !strings.Contains(out, "export") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
	out, _, code = runIt(t, nil, "export", "--help")
	if code != 0 || !strings.Contains(out, "--temp-dir") {
		t.Errorf("export --help: exit %d\n%s", code, out)
	}
	if _, stderr, code := runIt(t, nil, "import", "-c", "gzip"); code != 2 || !strings.Contains(stderr, "--help") {
		t.Errorf("bad codec: exit %d %q", code, stderr)
	}
	if _, stderr, code := runIt(t, nil, "import", "--digest"); code != 2 || !strings.Contains(stderr, "--digest needs a file") {
		t.Errorf("--digest on stdin: exit %d %q", code, stderr)
	}
	if _, stderr, code := runIt(t, nil); code != 2 || stderr == "" {
		t.Errorf("no command: exit %d %q", code, stderr)
	}
	if out, _, code := runIt(t, nil, "--version"); code != 0 || !strings.HasPrefix(out, "apr-gguf ") {
		t.Errorf("--version: exit %d %q", code, out)
	}
}

// TestImportRedirectedStdin: stdin redirected from a file (read from a mapping) gives
// the bytes of the same file through a plain reader, and the same error for a
// truncated file.
func TestImportRedirectedStdin(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	orig, err := os.ReadFile(filepath.Join(testdata, "tiny-llama.Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"whole.gguf": orig, "truncated.gguf": orig[:len(orig)-7]} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := run([]string{"import"}, f, &out, &errb)
		f.Close()
		wantOut, wantErr, wantCode := runIt(t, b, "import")
		if code != wantCode || out.String() != wantOut || errb.String() != wantErr {
			t.Errorf("%s: redirected stdin: exit %d, %d bytes, %q; plain reader: exit %d, %d bytes, %q",
				name, code, out.Len(), errb.String(), wantCode, len(wantOut), wantErr)
		}
		if name == "truncated.gguf" && wantCode != 1 {
			t.Errorf("truncated stdin: exit %d", wantCode)
		}
	}
}

// TestSplitSet: `apr-gguf import FIRST` of llama.cpp's split set reads every part (a
// note says so, -q silences it), `| apr-gguf export` gives the merged reference (its
// SHA-256 from the fixture's list); a set with a part missing fails with exit 1, the
// part named and no output; a part piped on stdin is refused with what to do instead.
func TestSplitSet(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	first := filepath.Join(testdata, "split", "tiny-llama.Q4_K_M-00001-of-00003.gguf")
	out := filepath.Join(dir, "set.apr")
	_, stderr, code := runIt(t, nil, "import", first, "-o", out)
	if code != 0 || !strings.Contains(stderr, "apr-gguf: note: "+first+" is the first of a split set of 3 parts") {
		t.Fatalf("import of the set: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, _ := runIt(t, nil, "-q", "import", first, "-o", out); stderr != "" {
		t.Errorf("-q: stderr %q", stderr)
	}
	aprBytes, _ := os.ReadFile(out)
	gguf, stderr, code := runIt(t, aprBytes, "export", "--temp-dir", dir)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	sums, _ := os.ReadFile("../../testdata/hf/tiny-llama.sha256")
	h := sha256.Sum256([]byte(gguf))
	if want := hex.EncodeToString(h[:]) + "  ref/tiny-llama.Q4_K_M.gguf\n"; !strings.Contains(string(sums), want) {
		t.Fatalf("import FIRST | export: sha256 %x is not the merged reference's", h)
	}

	// A part missing.
	set := filepath.Join(dir, "set")
	os.Mkdir(set, 0o755)
	for _, i := range []string{"1", "3"} {
		b, _ := os.ReadFile(filepath.Join(testdata, "split", "tiny-llama.Q4_K_M-0000"+i+"-of-00003.gguf"))
		os.WriteFile(filepath.Join(set, "m-0000"+i+"-of-00003.gguf"), b, 0o644)
	}
	bad := filepath.Join(dir, "bad.apr")
	_, stderr, code = runIt(t, nil, "import", filepath.Join(set, "m-00001-of-00003.gguf"), "-o", bad)
	if code != 1 || !strings.Contains(stderr, "apr-gguf: "+filepath.Join(set, "m-00002-of-00003.gguf")+": a part of the split set is missing") {
		t.Errorf("a missing part: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Errorf("a failed import left %s", bad)
	}

	// A first part on stdin.
	b, _ := os.ReadFile(first)
	_, stderr, code = runIt(t, b, "import")
	if code != 1 || !strings.Contains(stderr, "apr-gguf: stdin: holds part 1 of a split GGUF set of 3 parts") {
		t.Errorf("a first part on stdin: exit %d, stderr %q", code, stderr)
	}
}

// TestExportSplit: `apr-gguf import FIRST | apr-gguf export --split-max-... -o PREFIX`
// writes llama-gguf-split's reference parts byte for byte, from stdin and from a
// file; a damaged input exits 1 and leaves no part; usage mistakes exit 2.
func TestExportSplit(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	for _, set := range []struct {
		name  string
		parts int
		flag  []string
	}{
		{"tiny-llama.Q4_K_M", 3, []string{"--split-max-tensors", "8"}},
		{"tiny-llama.f16", 4, []string{"--split-max-size", "1M"}},
	} {
		part := func(dir string, i int) string {
			return filepath.Join(dir, fmt.Sprintf("%s-%05d-of-%05d.gguf", set.name, i, set.parts))
		}
		aprBytes, stderr, code := runIt(t, nil, "import", "-q", part(filepath.Join(testdata, "split"), 1))
		if code != 0 {
			t.Fatalf("import %s: exit %d: %s", set.name, code, stderr)
		}
		in := filepath.Join(t.TempDir(), "in.apr")
		if err := os.WriteFile(in, []byte(aprBytes), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, from := range []string{"stdin", "file"} {
			dir := t.TempDir()
			args := append([]string{"export", "-o", filepath.Join(dir, set.name)}, set.flag...)
			var stdin []byte
			if from == "file" {
				args = append(args, in)
			} else {
				stdin = []byte(aprBytes)
			}
			if _, stderr, code := runIt(t, stdin, args...); code != 0 || !strings.Contains(stderr, fmt.Sprintf("wrote a split set of %d parts", set.parts)) {
				t.Fatalf("%s from %s: exit %d: %s", set.name, from, code, stderr)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != set.parts {
				t.Fatalf("%s from %s: %d files in the output directory, want %d", set.name, from, len(ents), set.parts)
			}
			for i := 1; i <= set.parts; i++ {
				got, err := os.ReadFile(part(dir, i))
				if err != nil {
					t.Fatal(err)
				}
				want, _ := os.ReadFile(part(filepath.Join(testdata, "split"), i))
				if !bytes.Equal(got, want) {
					t.Fatalf("%s from %s: part %d differs from llama-gguf-split's", set.name, from, i)
				}
			}
		}

		// Damaged near the end: exit 1, no part and no temporary file left.
		bad := []byte(aprBytes)
		bad = append(bad[:len(bad)-200:len(bad)-200], bytes.Repeat([]byte{0}, 200)...)
		dir := t.TempDir()
		args := append([]string{"export", "-o", filepath.Join(dir, set.name)}, set.flag...)
		if _, stderr, code := runIt(t, bad, args...); code != 1 || !strings.HasPrefix(stderr, "apr-gguf: stdin: ") {
			t.Errorf("%s damaged: exit %d, stderr %q", set.name, code, stderr)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s damaged: a failed run left %d files", set.name, len(ents))
		}
	}
	for _, args := range [][]string{
		{"export", "--split-max-size", "1M"},
		{"export", "--split-max-size", "1.5G", "-o", "x"},
		{"export", "--split-max-size", "1M", "--split-max-tensors", "3", "-o", "x"},
		{"export", "--split-max-tensors", "-1", "-o", "x"},
	} {
		if _, _, code := runIt(t, nil, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestModelfileTemplateCap: a --template file over the cap is refused, not read into
// memory whole (/dev/zero was read until memory ran out).
func TestModelfileTemplateCap(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.tmpl")
	if err := os.WriteFile(big, bytes.Repeat([]byte("{{ .Prompt }}"), 1<<20/13+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runIt(t, nil, "modelfile", filepath.Join(testdata, "tiny-llama.Q4_0.gguf"), "--template", big)
	if want := fmt.Sprintf("%s: larger than %d bytes", big, 1<<20); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, %q; want exit 1 and %q", code, stderr, want)
	}
}

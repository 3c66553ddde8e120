package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/cmd/internal/ggufcmd"
	"github.com/apr-go/apr/cmd/internal/stcmd"
)

const (
	tinyGGUF  = "../../testdata/gguf/tiny-llama.f32.gguf"
	splitGGUF = "../../testdata/gguf/split/tiny-llama.f16-00001-of-00004.gguf"
	tinyCkpt  = "../../testdata/hf/tiny-llama"
)

// stage runs one program of the pipe in process, stdin to stdout, and fails the test
// on a non-zero exit.
func stage(t *testing.T, prog func([]string, *bytes.Reader, *bytes.Buffer, *bytes.Buffer) int, stdin []byte, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	if code := prog(args, bytes.NewReader(stdin), &out, &errb); code != 0 {
		t.Fatalf("%q: exit %d: %s", args, code, errb.String())
	}
	return out.Bytes()
}

func importGGUF(args []string, in *bytes.Reader, out, errb *bytes.Buffer) int {
	return ggufcmd.Import.Run(args, in, out, errb)
}
func importST(args []string, in *bytes.Reader, out, errb *bytes.Buffer) int {
	return stcmd.Import.Run(args, in, out, errb)
}
func exportGGUF(args []string, in *bytes.Reader, out, errb *bytes.Buffer) int {
	return ggufcmd.Export.Run(args, in, out, errb)
}
func quantize(args []string, in *bytes.Reader, out, errb *bytes.Buffer) int {
	return run(args, in, out, errb)
}

// pipeGGUF runs the three-program pipe: importer (nil for an APR input, which
// apr-quant reads itself), apr-quant TYPE FLAGS, apr-gguf export EXPORT... to out.
func pipeGGUF(t *testing.T, imp func([]string, *bytes.Reader, *bytes.Buffer, *bytes.Buffer) int, in string, quant []string, export ...string) {
	t.Helper()
	var a []byte
	if imp != nil {
		a = stage(t, imp, nil, in)
	} else {
		quant = append(quant, in)
	}
	q := stage(t, quantize, a, quant...)
	stage(t, exportGGUF, q, export...)
}

func sameFiles(t *testing.T, got, want string) {
	t.Helper()
	a, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s (%d bytes) differs from the pipe's %s (%d bytes)", filepath.Base(got), len(a), filepath.Base(want), len(b))
	}
}

// TestOneCommandIsThePipe: apr-quant TYPE INPUT -o OUT.gguf writes the bytes of
// importer | apr-quant TYPE | apr-gguf export -o OUT.gguf, for each input kind (GGUF
// file, GGUF split set, checkpoint directory, APR file) and a sample of types,
// presets, casts and flags (--pure, --include, --exclude, --imatrix, the per-tensor
// types, --override-kv, --prune-layers: they reach quant.Options, which both paths share).
func TestOneCommandIsThePipe(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "ckpt"), 0o755)
	mat := writeImatrix(t, dir, map[string][]float32{
		"blk.0.attn_q.weight": importances(64), "blk.1.ffn_down.weight": importances(128)})
	ckptMat := writeImatrix(t, filepath.Join(dir, "ckpt"), map[string][]float32{
		"blk.0.attn_q.weight": importances(256), "blk.1.ffn_down.weight": importances(512)})
	apr := filepath.Join(dir, "tiny.apr")
	stage(t, importGGUF, nil, tinyGGUF, "-o", apr)

	gguf := map[string]func([]string, *bytes.Reader, *bytes.Buffer, *bytes.Buffer) int{
		tinyGGUF: importGGUF, splitGGUF: importGGUF, tinyCkpt: importST, apr: nil}
	for _, c := range []struct {
		in   string
		args []string
	}{
		{tinyGGUF, []string{"q8_0"}},
		{tinyGGUF, []string{"q4_0"}},
		{tinyGGUF, []string{"q4_1", "--pure"}},
		{tinyGGUF, []string{"q4_k_m"}},
		{tinyGGUF, []string{"q5_k_s", "--exclude", "blk.1.*"}},
		{tinyGGUF, []string{"q4_0", "--imatrix", mat}},
		{tinyGGUF, []string{"f16"}},
		{splitGGUF, []string{"q8_0"}},
		{splitGGUF, []string{"q6_k"}},
		{splitGGUF, []string{"f32"}},
		{tinyCkpt, []string{"f16"}},
		{tinyCkpt, []string{"bf16"}},
		{tinyCkpt, []string{"q8_0"}},
		{tinyCkpt, []string{"q4_k_m"}},
		{tinyCkpt, []string{"q3_k_l", "--imatrix", ckptMat}},
		{tinyCkpt, []string{"q2_k", "--pure", "--include", "blk.0.attn_norm.weight"}},
		{tinyCkpt, []string{"q4_k_m", "--tensor-type", "attn_v=q8_0", "--leave-output-tensor"}},
		{tinyCkpt, []string{"q4_0", "--output-tensor-type", "q8_0", "--token-embedding-type", "q5_1"}},
		{tinyCkpt, []string{"q4_k_m", "--override-kv", "general.name=str:Tiny", "--override-kv", "llama.block_count=int:16"}},
		{apr, []string{"q4_0"}},
		{apr, []string{"q5_1", "--pure"}},
		{tinyGGUF, []string{"q4_k_m", "--prune-layers", "0", "--imatrix", mat}},
		{tinyCkpt, []string{"iq4_xs", "--prune-layers", "1", "--override-kv", "llama.context_length=int:64"}},
		{apr, []string{"q4_k_m", "--imatrix", mat, "--override-kv", "x.y=float:0.5", "--override-kv", "general.file_type=int:1"}},
	} {
		name := filepath.Base(c.in) + "/" + strings.ReplaceAll(strings.Join(c.args, " "), filepath.Dir(mat)+"/", "")
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			one, pipe := filepath.Join(work, "one.gguf"), filepath.Join(work, "pipe.gguf")
			r := runCLI(nil, append([]string{c.args[0], c.in, "-o", one}, c.args[1:]...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			pipeGGUF(t, gguf[c.in], c.in, c.args, "-o", pipe)
			sameFiles(t, one, pipe)
		})
	}
}

func importances(n int) []float32 {
	w := normal(uint64(n), n)
	for i := range w {
		w[i] *= w[i] * 1e4
	}
	return w
}

// TestOneCommandOutputs: a split set (--split-max-tensors, --split-max-size), GGUF on
// stdout (--to gguf), an APR file (-o x.apr) and APR on stdout are the pipe's too, and
// a GGUF on stdin is read as a GGUF.
func TestOneCommandOutputs(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	gguf, err := os.ReadFile(tinyGGUF)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("split", func(t *testing.T) {
		for _, c := range []struct {
			typ   string
			split []string
		}{{"q4_k_m", []string{"--split-max-tensors", "5"}}, {"f16", []string{"--split-max-size", "1M"}}} {
			split, work := c.split, t.TempDir()
			r := runCLI(nil, append([]string{c.typ, tinyCkpt, "-o", filepath.Join(work, "one")}, split...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			pipeGGUF(t, importST, tinyCkpt, []string{c.typ}, append([]string{"-o", filepath.Join(work, "pipe")}, split...)...)
			parts, _ := filepath.Glob(filepath.Join(work, "one-*.gguf"))
			pipes, _ := filepath.Glob(filepath.Join(work, "pipe-*.gguf"))
			if len(parts) < 2 || len(parts) != len(pipes) {
				t.Fatalf("%v: %d parts, the pipe wrote %d", split, len(parts), len(pipes))
			}
			for i := range parts {
				sameFiles(t, parts[i], pipes[i])
			}
		}
	})
	t.Run("stdout", func(t *testing.T) {
		for _, typ := range []string{"q8_0", "q4_k_m"} {
			r := runCLI(nil, typ, tinyGGUF, "--to", "gguf")
			stdin := runCLI(gguf, typ, "--to", "gguf")
			if r.code != 0 || stdin.code != 0 {
				t.Fatalf("exit %d, %d: %s %s", r.code, stdin.code, r.stderr, stdin.stderr)
			}
			a := stage(t, importGGUF, gguf)
			want := stage(t, exportGGUF, stage(t, quantize, a, typ))
			if r.stdout != string(want) || stdin.stdout != string(want) {
				t.Errorf("%s: --to gguf on stdout differs from the pipe's", typ)
			}
		}
	})
	t.Run("apr", func(t *testing.T) {
		for _, in := range []string{tinyGGUF, tinyCkpt} {
			imp := importGGUF
			if in == tinyCkpt {
				imp = importST
			}
			want := stage(t, quantize, stage(t, imp, nil, in), "q4_k_m")
			out := filepath.Join(t.TempDir(), "x.apr")
			file := runCLI(nil, "q4_k_m", in, "-o", out)
			stdout := runCLI(nil, "q4_k_m", in)
			if file.code != 0 || stdout.code != 0 {
				t.Fatalf("exit %d, %d: %s %s", file.code, stdout.code, file.stderr, stdout.stderr)
			}
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, want) || stdout.stdout != string(want) {
				t.Errorf("%s: the APR output differs from importer | apr-quant", in)
			}
		}
	})
}

// TestOneCommandRefuses: bad inputs and flag mistakes fail with the file named once,
// exit 1 (2 for usage), and leave no output.
func TestOneCommandRefuses(t *testing.T) {
	dir := t.TempDir()
	gguf, err := os.ReadFile(tinyGGUF)
	if err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "trunc.gguf")
	os.WriteFile(trunc, gguf[:20000], 0o644)
	junk := filepath.Join(dir, "junk.bin")
	os.WriteFile(junk, []byte("hello, world\n"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"q4_0", trunc, "-o", "OUT.gguf"}, 1, trunc + ": the input ends inside the tensor data"},
		{[]string{"q4_0", trunc, "-o", "OUT.apr"}, 1, trunc + ": the input ends inside the tensor data"},
		{[]string{"q4_0", junk, "-o", "OUT.gguf"}, 1, junk + `: offset 0: bad magic "hell"`},
		{[]string{"q4_0", empty, "-o", "OUT.gguf"}, 1, "model.safetensors"},
		{[]string{"q4_0", tinyGGUF, "-o", "OUT.gguf", "-c", "zstd"}, 2, "GGUF has none"},
		{[]string{"q4_0", tinyGGUF, "-o", "OUT", "--to", "apr", "--split-max-tensors", "3"}, 2, "write GGUF, not --to apr"},
		{[]string{"q4_0", tinyGGUF, "--split-max-tensors", "3"}, 2, "give -o PREFIX"},
		{[]string{"q8_0", "../../testdata/safetensors/valid/big_f32.safetensors", "-o", "OUT.gguf"}, 1, "not a whole number of 32-value Q8_0 blocks"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		args := make([]string, len(c.args))
		for i, a := range c.args {
			args[i] = strings.Replace(a, "OUT", out, 1)
		}
		r := runCLI(nil, args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
		for _, in := range []string{trunc, junk} {
			if strings.Count(r.stderr, in) > 1 {
				t.Errorf("%q: %q names the file twice", c.args, r.stderr)
			}
		}
		if left, _ := os.ReadDir(filepath.Dir(out)); len(left) > 0 {
			t.Errorf("%q left %s behind", c.args, left[0].Name())
		}
	}
}

// TestOneCommandGeneric: a checkpoint of an architecture apr does not convert is
// refused for GGUF before any output, naming it, as apr-gguf export refuses it; with
// --generic it is the generic GGUF apr-gguf export --generic writes.
func TestOneCommandGeneric(t *testing.T) {
	dir := copyCheckpoint(t, tinyCkpt, filepath.Join(t.TempDir(), "gpt2"), func(file string, b []byte) []byte {
		if file == "config.json" {
			b = bytes.Replace(b, []byte(`"LlamaForCausalLM"`), []byte(`"GPT2LMHeadModel"`), 1)
		}
		return b
	})
	work := t.TempDir()
	one, pipe := filepath.Join(work, "one.gguf"), filepath.Join(work, "pipe.gguf")
	r := runCLI(nil, "q8_0", dir, "-o", one)
	if r.code != 1 || !strings.Contains(r.stderr, `architecture "GPT2LMHeadModel"`) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(one); err == nil {
		t.Error("the refused export left a file")
	}
	if r := runCLI(nil, "q8_0", dir, "--generic", "-o", one); r.code != 0 {
		t.Fatalf("--generic: exit %d: %s", r.code, r.stderr)
	}
	pipeGGUF(t, importST, dir, []string{"q8_0"}, "--generic", "-o", pipe)
	sameFiles(t, one, pipe)
}

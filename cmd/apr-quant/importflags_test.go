package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
)

const tinyQwen3 = "../../testdata/hf/tiny-qwen3"

// unknownPreCheckpoint copies tiny-qwen3 with its Split expression changed (digits in
// runs of up to two) so that apr names no pre-tokenizer for it: a checkpoint that
// converts only with --tokenizer-pre.
func unknownPreCheckpoint(t *testing.T) string {
	t.Helper()
	return copyCheckpoint(t, tinyQwen3, filepath.Join(t.TempDir(), "ckpt"), func(file string, b []byte) []byte {
		if file != "tokenizer.json" {
			return b
		}
		n := len(b)
		b = bytes.Replace(b, []byte(`\\p{N}|`), []byte(`\\p{N}{1,2}|`), 1)
		if len(b) == n {
			t.Fatal("tiny-qwen3's tokenizer.json has no \\p{N}| to change")
		}
		return b
	})
}

// copyCheckpoint copies the files of checkpoint src into a new directory dst, each
// through edit (which gets the file's name; nil keeps the bytes), and returns dst.
func copyCheckpoint(t *testing.T, src, dst string, edit func(file string, b []byte) []byte) string {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			b = edit(e.Name(), b)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestImportFlagsOneCommand: apr-st import's flags that decide what is read from a
// checkpoint (--tokenizer-pre, --name, --no-files, --hf-layout, --digest) give the
// one command the bytes of the pipe apr-st import FLAGS DIR | apr-quant TYPE |
// apr-gguf export (or of apr-st import FLAGS DIR | apr-quant TYPE for an APR output);
// a checkpoint whose pre-tokenizer apr does not know is refused without
// --tokenizer-pre and converts with it.
func TestImportFlagsOneCommand(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	ckpt := unknownPreCheckpoint(t)
	work := t.TempDir()

	out := filepath.Join(work, "refused.gguf")
	r := runCLI(nil, "q8_0", ckpt, "-o", out)
	if r.code != 1 || !strings.Contains(r.stderr, "does not know the pre-tokenizer") || !strings.Contains(r.stderr, "--tokenizer-pre") {
		t.Fatalf("without --tokenizer-pre: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("an output was written on failure")
	}

	for _, c := range []struct {
		typ, ext string
		flags    []string
	}{
		{"q8_0", ".gguf", []string{"--tokenizer-pre", "qwen2"}},
		{"q4_k_m", ".gguf", []string{"--tokenizer-pre", "qwen2", "--digest"}},
		{"f16", ".apr", []string{"--tokenizer-pre", "qwen2", "--name", "Tiny"}},
		{"q8_0", ".apr", []string{"--no-files"}},
		{"q8_0", ".apr", []string{"--hf-layout", "--name", "HF"}},
	} {
		t.Run(c.typ+c.ext+"/"+strings.Join(c.flags, " "), func(t *testing.T) {
			dir := t.TempDir()
			one, pipe := filepath.Join(dir, "one"+c.ext), filepath.Join(dir, "pipe"+c.ext)
			r := runCLI(nil, append([]string{c.typ, ckpt, "-o", one}, c.flags...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			a := stage(t, importST, nil, append([]string{ckpt}, c.flags...)...)
			if c.ext == ".gguf" {
				q := stage(t, quantize, a, c.typ)
				stage(t, exportGGUF, q, "-o", pipe)
			} else {
				stage(t, quantize, a, c.typ, "-o", pipe)
			}
			sameFiles(t, one, pipe)
			if c.ext == ".gguf" {
				f, err := gguf.Open(one)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				v, _ := f.Get("tokenizer.ggml.pre")
				if pre, _ := v.AsString(); pre != "qwen2" {
					t.Errorf("tokenizer.ggml.pre %q, want qwen2", pre)
				}
			}
		})
	}
}

// TestImportFlagsRefused: apr-st import's flags are a usage error (exit 2, nothing
// written) when the input is not SafeTensors or a checkpoint, from a file or stdin,
// and --digest is one for a piped checkpoint stream, as apr-st import says.
func TestImportFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	apr := filepath.Join(dir, "tiny.apr")
	stage(t, importGGUF, nil, tinyGGUF, "-o", apr)
	ggufBytes, err := os.ReadFile(tinyGGUF)
	if err != nil {
		t.Fatal(err)
	}
	stBytes, err := os.ReadFile("../../testdata/safetensors/valid/pad7.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.gguf")
	for _, c := range []struct {
		stdin []byte
		args  []string
		want  string
	}{
		{nil, []string{"q8_0", tinyGGUF, "--tokenizer-pre", "qwen2"}, "--tokenizer-pre: apr-st import's flags, for a SafeTensors file or checkpoint directory; " + tinyGGUF + " is GGUF"},
		{nil, []string{"q8_0", apr, "--name", "x", "--no-files"}, "--name, --no-files: apr-st import's flags"},
		{nil, []string{"q8_0", apr, "--dry-run", "--hf-layout"}, "is APR"},
		{ggufBytes, []string{"q8_0", "--digest"}, "stdin is GGUF"},
		{stBytes, []string{"q8_0", "--digest"}, "--digest needs a file input"},
	} {
		r := runCLI(c.stdin, append(c.args, "-o", out)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%q: an output was written", c.args)
		}
	}
}

package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputKindErrors: inputs that are not what they seem are named for what they
// are (found by the third adversarial pass, where they gave Go's JSON wording, a bad
// APR magic, a missing model.safetensors or a silent generic conversion), and a
// SafeTensors header after white space, which the safetensors crate reads, converts.
func TestInputKindErrors(t *testing.T) {
	dir := t.TempDir()
	ckpt := func(name string, edit func(d string)) string {
		d := copyCheckpoint(t, tinyCkpt, filepath.Join(dir, name), nil)
		edit(d)
		return d
	}
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// st writes the fixture's model.safetensors with prefix before its header's JSON.
	st := func(name, prefix string) string {
		b, err := os.ReadFile(filepath.Join(tinyCkpt, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		n := binary.LittleEndian.Uint64(b)
		out := binary.LittleEndian.AppendUint64(nil, n+uint64(len(prefix)))
		out = append(append(append(out, prefix...), b[8:8+n]...), b[8+n:]...)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, c := range []struct {
		name, in, want string
	}{
		{"config.json an array", ckpt("array", func(d string) { write(filepath.Join(d, "config.json"), "[1, 2]") }),
			"config.json: expected a JSON object, found an array"},
		{"config.json null", ckpt("null", func(d string) { write(filepath.Join(d, "config.json"), "null") }),
			"config.json: expected a JSON object, found null"},
		{"config.json a string", ckpt("string", func(d string) { write(filepath.Join(d, "config.json"), `"llama"`) }),
			"config.json: expected a JSON object, found a string"},
		{"config.json a directory", ckpt("cfgdir", func(d string) {
			os.Remove(filepath.Join(d, "config.json"))
			os.Mkdir(filepath.Join(d, "config.json"), 0o755)
		}), "config.json is a directory"},
		{"PyTorch weights only", ckpt("pickle", func(d string) {
			os.Remove(filepath.Join(d, "model.safetensors"))
			write(filepath.Join(d, "pytorch_model.bin"), "PK")
		}), "pytorch_model.bin, a PyTorch pickle, which apr does not read"},
		{"header after a byte order mark", st("bom.safetensors", "\xef\xbb\xbf"), "byte order mark, not '{'"},
		{"header after white space", st("space.safetensors", " \n\t"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, "out.gguf")
			r := runCLI(nil, "f16", c.in, "-o", out)
			_, statErr := os.Stat(out)
			os.Remove(out)
			switch {
			case c.want == "" && r.code != 0:
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			case c.want != "" && (r.code != 1 || !strings.Contains(r.stderr, c.want) || statErr == nil):
				t.Fatalf("exit %d, output written %v, stderr %q; want exit 1 naming %q, nothing written", r.code, statErr == nil, r.stderr, c.want)
			}
		})
	}
}

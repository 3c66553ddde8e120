//go:build unix

package stconv

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// copyDir copies the files of the test checkpoint src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// openWithin imports dir with Open, failing the test if it has not returned after
// a few seconds: an open that waits on a FIFO must be a failure, not a hung suite.
func openWithin(t *testing.T, dir string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		s, err := Open(dir, ImportOptions{})
		if err == nil {
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("import of %s blocked for 10 s", dir)
		return nil
	}
}

// TestSpecialCheckpointFiles: a checkpoint file that is a FIFO, a device, a dangling
// link or a loop of links is an error naming it, at once; a link to a regular file
// is read; sub-directories, and kept names that are links to directories, are skipped.
func TestSpecialCheckpointFiles(t *testing.T) {
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	link := func(target string) func(string) error {
		return func(p string) error { return os.Symlink(target, p) }
	}
	cases := []struct {
		ckpt, name string
		make       func(string) error
		want       string // "" for an import that succeeds
	}{
		{"tiny-llama", "model.safetensors", fifo, "model.safetensors: not a regular file (a FIFO)"},
		{"tiny-llama", "config.json", fifo, "config.json: not a regular file (a FIFO)"},
		{"tiny-llama", "tokenizer.model", fifo, "tokenizer.model: not a regular file (a FIFO)"},
		{"tiny-llama", "tokenizer.model", link("/dev/null"), "tokenizer.model: not a regular file (a character device)"},
		{"tiny-llama", "config.json", link("config.json"), "config.json: a loop of symbolic links"},
		{"tiny-llama", "config.json", link("../blobs/missing"), "config.json: a symbolic link to ../blobs/missing, which does not exist"},
		{"tiny-llama", "model.safetensors", link("missing"), "model.safetensors: a symbolic link to missing, which does not exist"},
		{"small-mistral", "model.safetensors.index.json", fifo, "model.safetensors.index.json: not a regular file (a FIFO)"},
		{"small-mistral", "model.safetensors.index.json", link("missing"), "model.safetensors.index.json: a symbolic link to missing, which does not exist"},
		{"small-mistral", "model-00002-of-00003.safetensors", fifo, "model-00002-of-00003.safetensors: not a regular file (a FIFO)"},
		{"tiny-llama", "onnx", func(p string) error { return os.Mkdir(p, 0o755) }, ""},
		{"tiny-llama", "extra.json", link("."), ""},
	}
	for _, c := range cases {
		t.Run(c.ckpt+"/"+c.name+"/"+c.want, func(t *testing.T) {
			dir := copyDir(t, "../../testdata/hf/"+c.ckpt)
			p := filepath.Join(dir, c.name)
			os.Remove(p)
			if err := c.make(p); err != nil {
				t.Skip(err)
			}
			err := openWithin(t, dir)
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want == "":
			case err == nil:
				t.Fatal("imported")
			case !strings.Contains(err.Error(), filepath.Join(dir, c.want)):
				t.Errorf("error %q, want %q", err, filepath.Join(dir, c.want))
			}
		})
	}
}

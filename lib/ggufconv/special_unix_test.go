//go:build unix

package ggufconv

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/stream"
)

// within runs f, failing the test if it has not returned after a few seconds: an open
// that waits on a FIFO must be a failure, not a hung suite.
func within(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("blocked for 10 s")
		return nil
	}
}

// TestSplitPartSpecial: a later part of a split set that is a FIFO, a loop of links or
// a dangling link is refused at once, naming it; one that is a link to the part is read.
func TestSplitPartSpecial(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(dir, p string) error
		want string // "" for a set that opens
	}{
		{"fifo", func(_, p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file (a FIFO)"},
		{"loop", func(_, p string) error { return os.Symlink(filepath.Base(p), p) }, "a loop of symbolic links"},
		{"dangling", func(_, p string) error { return os.Symlink("gone", p) }, "a symbolic link to gone, which does not exist"},
		{"link", func(dir, p string) error {
			if err := os.Rename(p+".orig", filepath.Join(dir, "blob")); err != nil {
				return err
			}
			return os.Symlink("blob", p)
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copySet(t)
			p := partPath(dir, "Q4_K_M", 1, 3)
			if err := os.Rename(p, p+".orig"); err != nil {
				t.Fatal(err)
			}
			if err := c.make(dir, p); err != nil {
				t.Skip(err)
			}
			err := within(t, func() error {
				s, err := OpenFile(partPath(dir, "Q4_K_M", 0, 3), ImportOptions{})
				if err == nil {
					s.Close()
				}
				return err
			})
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want == "":
			case err == nil:
				t.Fatal("opened")
			case !strings.Contains(err.Error(), p+": "+c.want):
				t.Errorf("error %q, want %q", err, p+": "+c.want)
			}
		})
	}
}

// TestFIFOInput: a GGUF path that is a FIFO (as <(...) makes) is read as stdin is,
// with no size in the provenance; with a digest asked for it is refused at once (the
// digest of a stream would be known only after the metadata has gone out: it was the
// digest of no bytes, and a size of 0).
func TestFIFOInput(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	gguf, err := os.ReadFile(filepath.Join(testdata, "tiny-llama.f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "in.gguf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	for _, patched := range []bool{false, true} {
		err := within(t, func() error {
			if patched { // ImportFile's digest beside the conversion, into a file it patches
				out, err := os.Create(filepath.Join(t.TempDir(), "out.apr"))
				if err != nil {
					return err
				}
				defer out.Close()
				return ImportFile(out, fifo, ImportOptions{Digest: true})
			}
			_, err := OpenFile(fifo, ImportOptions{Digest: true})
			return err
		})
		if err == nil || !strings.Contains(err.Error(), fifo+": not a regular file (a FIFO): a digest needs a file") {
			t.Errorf("patched %v: got %v", patched, err)
		}
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write(gguf)
		w.Close()
	}()
	var s stream.Stream
	err = within(t, func() error {
		var err error
		s, err = OpenFile(fifo, ImportOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, ok := s.Header().Metadata.Provenance[ProvSize]; ok {
		t.Errorf("a FIFO's import records %s %v", ProvSize, v)
	}
	var got, want bytes.Buffer
	if err := Import(&got, s); err != nil {
		t.Fatal(err)
	}
	ws, err := NewStream(bytes.NewReader(gguf), ImportOptions{Name: fifo})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := Import(&want, ws); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("the FIFO's import (%d bytes) differs from the same bytes' from a pipe (%d)", got.Len(), want.Len())
	}
}

// TestFIFOExport: an APR path that is a FIFO (as <(...) gives) is exported as stdin
// is, to the same GGUF; it was opened twice (to inspect, then to read), which read
// nothing the second time ("file is 0 bytes"). A path that is a directory is named
// once in the error.
func TestFIFOExport(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	src := filepath.Join(testdata, "tiny-llama.f32.gguf")
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenFile(src, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var apr bytes.Buffer
	if err := Import(&apr, s); err != nil {
		t.Fatal(err)
	}
	s.Close()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in.apr")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	for _, split := range []bool{false, true} {
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			w.Write(apr.Bytes())
			w.Close()
		}()
		var got bytes.Buffer
		err := within(t, func() error {
			if split {
				_, err := ExportSplitFile(filepath.Join(dir, "out"), fifo, ExportOptions{TempDir: dir}, SplitOptions{MaxTensors: 1000})
				if err == nil {
					got.Write(mustRead(t, filepath.Join(dir, "out-00001-of-00001.gguf")))
				}
				return err
			}
			return ExportFile(&got, fifo, ExportOptions{TempDir: dir})
		})
		if err != nil {
			t.Fatalf("split %v: %v", split, err)
		}
		if !split && !bytes.Equal(got.Bytes(), want) {
			t.Errorf("the export of the FIFO (%d bytes) is not the GGUF imported (%d)", got.Len(), len(want))
		}
		if split && (!bytes.HasPrefix(got.Bytes(), []byte("GGUF")) || !bytes.Contains(got.Bytes(), []byte("split.count"))) {
			t.Errorf("the part written (%d bytes) is not a GGUF part", got.Len())
		}
	}
	err = ExportFile(io.Discard, dir, ExportOptions{})
	if err == nil || strings.Count(err.Error(), dir) != 1 {
		t.Errorf("a directory: %v, want its path named once", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

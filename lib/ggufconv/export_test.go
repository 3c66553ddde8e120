package ggufconv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/stream"
)

// exportTo runs export into a fresh file in dir opened with flag (plus O_CREATE, and
// O_WRONLY unless flag has O_RDWR), whose content beforehand is prefix, and returns
// the file's bytes.
func exportTo(t *testing.T, dir string, flag int, prefix []byte, export func(*os.File) error) ([]byte, error) {
	t.Helper()
	path := filepath.Join(dir, "out.gguf")
	if err := os.WriteFile(path, prefix, 0o644); err != nil {
		t.Fatal(err)
	}
	if flag&os.O_RDWR == 0 {
		flag |= os.O_WRONLY
	}
	f, err := os.OpenFile(path, os.O_CREATE|flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	err = export(f)
	if cerr := f.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatal(rerr)
	}
	return b, err
}

// TestExportToFile exports every fixture into files, where the data is copied from
// file to file (copy_file_range where the system has it): from an APR file, and from
// a stream through the spool; into a new file and, through the fallback that O_APPEND
// needs, after the bytes of a file opened for appending. Each must be the original
// GGUF.
func TestExportToFile(t *testing.T) {
	dir := t.TempDir()
	for _, path := range fixtures(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			aprPath := importFile(t, path, dir)
			prefix := []byte("already here\n")
			for _, c := range []struct {
				name   string
				flag   int
				prefix []byte
			}{{"new", os.O_TRUNC, nil}, {"append", os.O_APPEND, prefix}} {
				got, err := exportTo(t, dir, c.flag, c.prefix, func(f *os.File) error {
					return ExportFile(f, aprPath, ExportOptions{TempDir: dir})
				})
				if err != nil {
					t.Fatalf("%s: ExportFile: %v", c.name, err)
				}
				if want := append(c.prefix[:len(c.prefix):len(c.prefix)], orig...); !bytes.Equal(got, want) {
					t.Fatalf("%s: ExportFile wrote %d bytes, want %d (first difference at %d)", c.name, len(got), len(want), firstDiff(got, want))
				}
				got, err = exportTo(t, dir, c.flag, c.prefix, func(f *os.File) error {
					a, err := os.Open(aprPath)
					if err != nil {
						return err
					}
					defer a.Close()
					s, err := stream.Open(a)
					if err != nil {
						return err
					}
					defer s.Close()
					return Export(f, noTable{s}, ExportOptions{TempDir: dir}) // the spool, copied by the kernel
				})
				if err != nil {
					t.Fatalf("%s: Export: %v", c.name, err)
				}
				if want := append(c.prefix[:len(c.prefix):len(c.prefix)], orig...); !bytes.Equal(got, want) {
					t.Fatalf("%s: Export wrote %d bytes, want %d (first difference at %d)", c.name, len(got), len(want), firstDiff(got, want))
				}
			}
		})
	}
}

// TestExportFileDamaged flips one bit in each tensor's data of an APR file: ExportFile
// into a file (data copied by the kernel, checked by the concurrent verifier) and into
// a buffer (data read and checked in one pass) both report the tensor's checksum.
func TestExportFileDamaged(t *testing.T) {
	dir := t.TempDir()
	aprPath := importFile(t, filepath.Join(testdata, "tiny-llama.f32.gguf"), dir)
	orig, err := os.ReadFile(aprPath)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Inspect(aprPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.apr")
	for _, e := range info.Tensors {
		if e.StoredSize == 0 {
			continue
		}
		b := bytes.Clone(orig)
		b[e.DataOffset+e.StoredSize/2] ^= 0x04
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := exportTo(t, dir, os.O_TRUNC, nil, func(f *os.File) error {
			return ExportFile(f, bad, ExportOptions{TempDir: dir})
		})
		var ce *container.ChecksumError
		if !errors.As(err, &ce) || ce.Tensor != e.Name {
			t.Errorf("tensor %q damaged, export to a file: %v", e.Name, err)
		}
		var buf bytes.Buffer
		err = ExportFile(&buf, bad, ExportOptions{TempDir: dir})
		if !errors.As(err, &ce) || ce.Tensor != e.Name {
			t.Errorf("tensor %q damaged, export to a buffer: %v", e.Name, err)
		}
	}
}

// TestExportFileCompressed exports an APR file with zstd-compressed tensors, which
// goes through the verifying stream reader instead of the mapping, into a buffer and
// into a file.
func TestExportFileCompressed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(testdata, "tiny-llama.f32.gguf")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenFile(path, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var a bytes.Buffer
	if err := Import(&a, s, container.WithCompression(container.CompressZstd)); err != nil {
		t.Fatal(err)
	}
	aprPath := filepath.Join(dir, "z.apr")
	if err := os.WriteFile(aprPath, a.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ExportFile(&out, aprPath, ExportOptions{TempDir: dir}); err != nil || !bytes.Equal(out.Bytes(), orig) {
		t.Fatalf("export to a buffer: %v, first difference at %d", err, firstDiff(out.Bytes(), orig))
	}
	got, err := exportTo(t, dir, os.O_TRUNC, nil, func(f *os.File) error {
		return ExportFile(f, aprPath, ExportOptions{TempDir: dir})
	})
	if err != nil || !bytes.Equal(got, orig) {
		t.Fatalf("export to a file: %v, first difference at %d", err, firstDiff(got, orig))
	}
	// A damaged chunk is reported.
	b := a.Bytes()
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(aprPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ExportFile(&out, aprPath, ExportOptions{TempDir: dir}); err == nil {
		t.Error("a damaged compressed file exports")
	}
}

package safetensors

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadHeader feeds arbitrary files to every read path. None may panic; they must
// agree with each other; and whatever is accepted must rewrite to a file that is
// accepted, canonical (rewriting it again changes nothing) and holds the same data.
func FuzzReadHeader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(testdata, "*", "*.safetensors"))
	if len(files) == 0 {
		f.Fatal("no seed files in testdata/safetensors")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Decode(b)
		sh, serr := readStream(oneByteReader{bytes.NewReader(b)})
		if (err == nil) != (serr == nil) {
			t.Fatalf("Decode: %v; stream: %v", err, serr)
		}
		if err != nil {
			var e1, e2 *Error
			if !errors.As(err, &e1) || !errors.As(serr, &e2) || e1.Kind != e2.Kind {
				t.Fatalf("kinds differ: Decode %v; stream %v", err, serr)
			}
			return
		}
		if len(sh.Tensors) != len(h.Tensors) || sh.DataSize != h.DataSize {
			t.Fatalf("stream header differs from Decode's")
		}
		var ts []Tensor
		for _, ti := range h.Tensors {
			ts = append(ts, Tensor{ti.Spec(), b[h.DataStart()+ti.Begin : h.DataStart()+ti.End]})
		}
		var out bytes.Buffer
		if err := Encode(&out, h.Metadata, ts); err != nil {
			t.Fatalf("rewrite of an accepted file failed: %v", err)
		}
		h2, err := Decode(out.Bytes())
		if err != nil {
			t.Fatalf("rewritten file rejected: %v", err)
		}
		if len(h2.Tensors) != len(h.Tensors) || len(h2.Metadata) != len(h.Metadata) {
			t.Fatalf("rewrite lost tensors or metadata")
		}
		for _, ti := range h.Tensors {
			t2, ok := h2.Lookup(ti.Name)
			if !ok || !bytes.Equal(out.Bytes()[h2.DataStart()+t2.Begin:h2.DataStart()+t2.End], b[h.DataStart()+ti.Begin:h.DataStart()+ti.End]) {
				t.Fatalf("tensor %q changed in the rewrite", ti.Name)
			}
		}
		var again bytes.Buffer
		w, err := NewWriterHeader(&again, h2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, bytes.NewReader(out.Bytes()[h2.DataStart():])); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil || !bytes.Equal(again.Bytes(), out.Bytes()) {
			t.Fatalf("canonical file does not rewrite to itself (%v)", err)
		}
	})
}

package ggufconv

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/internal/mmap"
)

// TestTakeMapped: a mapped file lends each tensor in place (what lib/quant's workers
// read) with the bytes a read gives, and the stream goes on to the next tensor as
// after a read; a truncated file lends nothing, and its read reports the truncation.
func TestTakeMapped(t *testing.T) {
	skipUnmapped(t, filepath.Join(testdata, "tiny-llama.f32.gguf"))
	type lender interface {
		Len() int
		TakeMapped() []byte
		ReleaseMapped(int)
	}
	path := filepath.Join(testdata, "tiny-llama.f32.gguf")
	open := func(p string) (read, lent [][]byte) {
		for _, take := range []bool{false, true} {
			s, err := OpenFile(p, ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				_, r, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				var b []byte
				if l, ok := r.(lender); take && ok && i%2 == 0 {
					n := l.Len()
					if b = bytes.Clone(l.TakeMapped()); len(b) != n || l.Len() != 0 {
						t.Fatalf("tensor %d: lent %d bytes, want %d; %d left", i, len(b), n, l.Len())
					}
					l.ReleaseMapped(len(b))
				} else if b, err = io.ReadAll(r); err != nil {
					t.Fatal(err)
				}
				if take {
					lent = append(lent, b)
				} else {
					read = append(read, b)
				}
			}
			s.Close()
		}
		return read, lent
	}
	read, lent := open(path)
	if len(read) < 4 || len(read) != len(lent) {
		t.Fatalf("%d tensors read, %d lent", len(read), len(lent))
	}
	for i := range read {
		if !bytes.Equal(read[i], lent[i]) {
			t.Errorf("tensor %d: lent bytes differ from the read ones", i)
		}
	}

	full, _ := os.ReadFile(path)
	cut := filepath.Join(t.TempDir(), "cut.gguf")
	os.WriteFile(cut, full[:len(full)-1000], 0o644)
	s, err := OpenFile(cut, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		_, r, err := s.Next()
		if err != nil {
			if err == io.EOF {
				t.Fatal("a truncated file ended without an error")
			}
			return
		}
		l, ok := r.(lender)
		if !ok {
			t.Fatal("a mapped tensor does not lend itself")
		}
		if b := l.TakeMapped(); b == nil {
			if _, err := io.ReadAll(r); err == nil || !bytes.Contains([]byte(err.Error()), []byte("cut.gguf")) {
				t.Errorf("reading the cut tensor: %v", err)
			}
			return
		}
	}
}

// skipUnmapped skips where files are not memory-mapped (js/wasm, wasip1): there the
// importers read, and nothing is lent.
func skipUnmapped(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := mmap.Map(f, st.Size())
	if !ok {
		t.Skip("files are not memory-mapped on this platform: nothing is lent")
	}
	mmap.Unmap(m)
}

package stconv

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/apr-go/apr/lib/internal/mmap"
)

// TestTakeMapped: a mapped SafeTensors tensor is lent in place (what lib/quant's
// workers read) with the bytes a read gives, and the stream goes on as after a read.
func TestTakeMapped(t *testing.T) {
	skipUnmapped(t, "../../testdata/hf/tiny-llama/model.safetensors")
	type lender interface {
		Len() int
		TakeMapped() []byte
		ReleaseMapped(int)
	}
	var all [2][][]byte
	lends := 0
	for k, take := range []bool{false, true} {
		s, err := Open("../../testdata/hf/tiny-llama", ImportOptions{HFLayout: true})
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
				l.ReleaseMapped(len(b) / 2)
				l.ReleaseMapped(len(b))
				lends++
			} else if b, err = io.ReadAll(r); err != nil {
				t.Fatal(err)
			}
			all[k] = append(all[k], b)
		}
		s.Close()
	}
	if lends == 0 || len(all[0]) != len(all[1]) {
		t.Fatalf("%d lent; %d and %d tensors", lends, len(all[0]), len(all[1]))
	}
	for i := range all[0] {
		if !bytes.Equal(all[0][i], all[1][i]) {
			t.Errorf("tensor %d: lent bytes differ from the read ones", i)
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

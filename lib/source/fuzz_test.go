package source

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// FuzzOpenReader: whatever a pipe brings, OpenReader sniffs it and the importer it
// picks either refuses it with an error or streams tensors that can be read to the end
// (or to an error); it never panics.
func FuzzOpenReader(f *testing.F) {
	for _, p := range []string{"../../testdata/gguf/allkv.gguf", "../../testdata/safetensors/valid/pad7.safetensors"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"))
	f.Add([]byte("APRN"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, k, rest, err := OpenReader(bytes.NewReader(b), "stdin", Options{})
		if err != nil {
			return
		}
		if s == nil {
			if k != APR || rest == nil {
				t.Fatalf("kind %v, no stream and no reader", k)
			}
			return
		}
		defer s.Close()
		for range 1 << 12 {
			_, r, err := s.Next()
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				return
			}
		}
	})
}

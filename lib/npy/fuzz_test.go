package npy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seed adds every testdata file with the given suffix to a fuzz corpus.
func seed(f *testing.F, suffix string) {
	files, err := filepath.Glob(filepath.Join(testdata, "*"+suffix))
	if err != nil || len(files) == 0 {
		f.Fatalf("no %s seeds in %s: %v", suffix, testdata, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzReadHeader: any input gives a header or an *Error; an accepted header is
// self-consistent and survives re-encoding.
func FuzzReadHeader(f *testing.F) {
	seed(f, ".npy")
	f.Add([]byte(Magic + "\x01\x00\x10\x00{'descr':'<f4','fortran_order':False,'shape':(3,)}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		h, err := ReadHeader(r)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		if consumed := int64(len(in) - r.Len()); consumed != h.HeaderLen {
			t.Fatalf("consumed %d bytes, HeaderLen %d", consumed, h.HeaderLen)
		}
		enc, err := EncodeHeader(h.DType, h.Shape)
		if err != nil {
			t.Fatalf("accepted header %+v does not re-encode: %v", h, err)
		}
		h2, err := ReadHeader(bytes.NewReader(enc))
		if err != nil || h2.DType != h.DType || !equalShape(h2.Shape, h.Shape) || h2.DataSize != h.DataSize {
			t.Fatalf("re-encoded %+v reads back as %+v, %v", h, h2, err)
		}
	})
}

// FuzzNPY: reading a whole .npy never panics and never returns more data than
// the input holds.
func FuzzNPY(f *testing.F) {
	seed(f, ".npy")
	f.Fuzz(func(t *testing.T, in []byte) {
		h, data, err := ReadAll(bytes.NewReader(in), "fuzz.npy", 1<<30)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.npy") {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		if int64(len(data)) != h.DataSize || h.HeaderLen+h.DataSize != int64(len(in)) {
			t.Fatalf("accepted %+v with %d data bytes from %d input bytes", h, len(data), len(in))
		}
	})
}

// FuzzNPZ: opening and reading an archive never panics.
func FuzzNPZ(f *testing.F) {
	seed(f, ".npz")
	f.Fuzz(func(t *testing.T, in []byte) {
		z, err := OpenNPZ(bytes.NewReader(in), int64(len(in)), "fuzz.npz")
		if err != nil {
			return
		}
		for _, e := range z.Entries() {
			a, err := z.Open(e.Name)
			if err != nil {
				continue
			}
			n, err := io.Copy(io.Discard, a)
			a.Close()
			if err == nil && n != e.Header.DataSize {
				t.Fatalf("%s: read %d bytes without error, header says %d", e.Name, n, e.Header.DataSize)
			}
		}
	})
}

//go:build linux

package splice

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The bytes that arrive through the pipe are the file's, from the offset asked for.
func TestFromFile(t *testing.T) {
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	const off = 4097
	pipe := IsPipe(w)
	moved, err := FromFile(w, src, off, int64(len(data)-off-5))
	w.Close()
	b := <-got
	if !pipe || IsPipe(src) {
		t.Fatalf("IsPipe: %v for a pipe, %v for a file", pipe, IsPipe(src))
	}
	if moved != int64(len(data)-off-5) || err != nil {
		t.Fatalf("FromFile: %d, %v", moved, err)
	}
	if !bytes.Equal(b, data[off:len(data)-5]) {
		t.Fatalf("%d bytes arrived, not the file's %d from offset %d", len(b), len(data)-off-5, off)
	}
	// Past the end of the file: an error, not a silent short copy.
	r2, w2, _ := os.Pipe()
	defer r2.Close()
	go io.Copy(io.Discard, r2)
	if moved, err := FromFile(w2, src, int64(len(data)-10), 20); moved != 10 || err == nil {
		t.Fatalf("a range past the end gave %d, %v", moved, err)
	}
	w2.Close()
	// A pipe whose reader has gone: EPIPE, for the caller to report as a write would.
	r3, w3, _ := os.Pipe()
	r3.Close()
	if _, err := FromFile(w3, src, 0, 10); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("a pipe without a reader gave %v", err)
	}
	w3.Close()
}

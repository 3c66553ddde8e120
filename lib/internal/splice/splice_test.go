package splice

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
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
	ok, err := FromFile(w, src, off, int64(len(data)-off-5))
	w.Close()
	b := <-got
	if runtime.GOOS != "linux" {
		if ok || pipe {
			t.Fatalf("FromFile served %v here", runtime.GOOS)
		}
		return
	}
	if !pipe || IsPipe(src) {
		t.Fatalf("IsPipe: %v for a pipe, %v for a file", pipe, IsPipe(src))
	}
	if !ok || err != nil {
		t.Fatalf("FromFile: %v, %v", ok, err)
	}
	if !bytes.Equal(b, data[off:len(data)-5]) {
		t.Fatalf("%d bytes arrived, not the file's %d from offset %d", len(b), len(data)-off-5, off)
	}
	// Past the end of the file: an error, not a silent short copy.
	r2, w2, _ := os.Pipe()
	defer r2.Close()
	go io.Copy(io.Discard, r2)
	if ok, err := FromFile(w2, src, int64(len(data)-10), 20); !ok || err == nil {
		t.Fatalf("a range past the end gave %v, %v", ok, err)
	}
	w2.Close()
}

package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestMap(t *testing.T) {
	want := make([]byte, 3*pageSize+123)
	for i := range want {
		want[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, ok := Map(f, int64(len(want)))
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" || runtime.GOOS == "windows" {
		if ok {
			t.Fatal("Map succeeded on a platform without mmap")
		}
		return
	}
	if !ok || !bytes.Equal(m, want) {
		t.Fatalf("Map: ok %v, equal %v", ok, bytes.Equal(m, want))
	}
	// Dropped pages read back the same (they come again from the page cache).
	DropPages(m, 1, int64(len(m)))
	DropPages(m, 0, int64(len(m)))
	if !bytes.Equal(m, want) {
		t.Error("mapping differs after DropPages")
	}
	if err := Unmap(m); err != nil {
		t.Error(err)
	}
	if _, ok := Map(f, 0); ok {
		t.Error("Map of 0 bytes succeeded")
	}
	for _, c := range []struct{ off, n int64 }{{0, 1}, {1, pageSize}, {pageSize + 5, 2 * pageSize}, {int64(len(want)) - 1, 1}} {
		b, unmap, ok := MapRange(f, c.off, c.n)
		if !ok || !bytes.Equal(b, want[c.off:c.off+c.n]) {
			t.Errorf("MapRange(%d, %d): ok %v", c.off, c.n, ok)
		}
		if ok {
			unmap()
		}
	}
}

func TestAlignedInside(t *testing.T) {
	p := pageSize
	for _, c := range []struct{ off, end, n, lo, hi int64 }{
		{0, p, 3 * p, 0, p},
		{1, 2*p - 1, 3 * p, p, p},            // no whole page inside
		{1, 3*p + 10, 3*p + 10, p, 3*p + 10}, // the last, partial page counts
		{p, 3 * p, 4 * p, p, 3 * p},
	} {
		if lo, hi := alignedInside(c.off, c.end, c.n); lo != c.lo || hi != c.hi {
			t.Errorf("alignedInside(%d, %d, %d) = %d, %d; want %d, %d", c.off, c.end, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

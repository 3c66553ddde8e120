package npy

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// readNPZ reads every array of an archive: name -> (header, little-endian data).
func readNPZ(t *testing.T, z *NPZReader) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, e := range z.Entries() {
		a, err := z.Open(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(a)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		out[e.Name] = data
	}
	return out
}

func TestNumpyNPZ(t *testing.T) {
	type arr struct {
		d     dtype.DType
		shape []int64
	}
	for file, want := range map[string]map[string]arr{
		"arrays.npz": {
			"weight": {dtype.F32, []int64{2, 3}}, "bias": {dtype.F64, []int64{3}}, "layer0/mask": {dtype.Bool, []int64{4}},
		},
		"arrays_deflate.npz": {"weight": {dtype.F32, []int64{2, 3}}, "ids": {dtype.I64, []int64{5}}},
	} {
		z, err := OpenNPZFile(filepath.Join(testdata, file))
		if err != nil {
			t.Fatal(err)
		}
		if len(z.Entries()) != len(want) {
			t.Fatalf("%s: %d entries, want %d", file, len(z.Entries()), len(want))
		}
		data := readNPZ(t, z.NPZReader)
		for name, w := range want {
			e, ok := z.Lookup(name)
			if !ok || e.Header.DType != w.d || !equalShape(e.Header.Shape, w.shape) {
				t.Fatalf("%s: %s is %+v, want %s %v", file, name, e.Header, w.d, w.shape)
			}
			n, _ := dtype.Elems(w.shape)
			equalValues(t, file+":"+name, decode(t, w.d, data[name]), formula(w.d, int(n)))
		}
		if _, err := z.Open("missing"); err == nil {
			t.Errorf("%s: opening a missing array succeeded", file)
		}
		z.Close()
	}
}

func TestNPZWriteRoundTrip(t *testing.T) {
	arrays := []struct {
		name  string
		d     dtype.DType
		shape []int64
	}{
		{"w", dtype.F32, []int64{4, 3}}, {"layer.0/bias", dtype.F16, []int64{3}},
		{"ids", dtype.I64, []int64{}}, {"empty", dtype.U8, []int64{0}}, {"mask", dtype.Bool, []int64{2, 2}},
	}
	for _, c := range []Compression{Store, Deflate} {
		var buf bytes.Buffer
		z := NewNPZWriter(&buf, c)
		want := map[string][]byte{}
		for _, a := range arrays {
			size, _ := dtype.Size(a.d, a.shape)
			data := bytes.Repeat([]byte{1}, int(size))
			if err := z.WriteArray(a.name, a.d, a.shape, data); err != nil {
				t.Fatal(err)
			}
			want[a.name] = data
		}
		if _, err := z.Create("w", dtype.F32, []int64{1}); err == nil {
			t.Error("a second array named w was accepted")
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := OpenNPZ(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "mem.npz")
		if err != nil {
			t.Fatal(err)
		}
		got := readNPZ(t, r)
		for i, e := range r.Entries() {
			if e.Name != arrays[i].name || e.Header.DType != arrays[i].d || !equalShape(e.Header.Shape, arrays[i].shape) {
				t.Fatalf("entry %d: %s %+v, want %+v", i, e.Name, e.Header, arrays[i])
			}
			if !bytes.Equal(got[e.Name], want[e.Name]) {
				t.Fatalf("%s: data differs", e.Name)
			}
		}
		zr, _ := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		wantMethod := map[Compression]uint16{Store: zip.Store, Deflate: zip.Deflate}[c]
		for _, f := range zr.File {
			if f.Method != wantMethod {
				t.Errorf("%s: method %d, want %d", f.Name, f.Method, wantMethod)
			}
		}
	}
}

func TestNPZWriterErrors(t *testing.T) {
	z := NewNPZWriter(io.Discard, Store)
	for _, name := range []string{"", "../x", "/abs", "a//b", "a\\b", "./a"} {
		if _, err := z.Create(name, dtype.F32, []int64{1}); err == nil {
			t.Errorf("array name %q accepted", name)
		}
	}
	w, err := z.Create("short", dtype.F32, []int64{2})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, 4))
	if err := z.Close(); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Close with a short array: %v", err)
	}
	if _, err := NewNPZWriter(io.Discard, Store).Create("x", dtype.BF16, []int64{2}); !errors.Is(err, ErrDType) {
		t.Errorf("BF16 array: %v, want ErrDType", err)
	}
}

// rawZip builds a zip of the given entries (name -> bytes) with archive/zip.
func rawZip(t *testing.T, entries ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e[0], Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e[1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestNPZRejects(t *testing.T) {
	var one bytes.Buffer
	Write(&one, dtype.U8, []int64{3}, []byte{1, 2, 3})
	npy := one.String()
	for _, c := range []struct {
		name    string
		zip     []byte
		kind    error
		message string
	}{
		{"dup", rawZip(t, [2]string{"a.npy", npy}, [2]string{"a.npy", npy}), ErrFormat, `duplicate array name "a"`},
		{"dotdot", rawZip(t, [2]string{"../a.npy", npy}), ErrFormat, `path element ".."`},
		{"abs", rawZip(t, [2]string{"/a.npy", npy}), ErrFormat, "absolute path"},
		{"backslash", rawZip(t, [2]string{"a\\..\\b.npy", npy}), ErrFormat, "backslash"},
		{"drive", rawZip(t, [2]string{"c:a.npy", npy}), ErrFormat, "drive letter"},
		{"not npy", rawZip(t, [2]string{"a.txt", "hi"}), ErrFormat, `not a .npy array`},
		{"empty name", rawZip(t, [2]string{".npy", npy}), ErrFormat, "empty array name"},
		{"bad npy", rawZip(t, [2]string{"a.npy", "PK not npy"}), ErrFormat, "x.npz:a.npy: offset 0"},
		{"fortran", rawZip(t, [2]string{"f.npy", mustRead(t, "fortran_f4.npy")}), ErrUnsupported, "np.ascontiguousarray"},
		{"short", rawZip(t, [2]string{"a.npy", npy[:len(npy)-1]}), ErrFormat, "entry holds 130 bytes"},
		{"long", rawZip(t, [2]string{"a.npy", npy + "x"}), ErrFormat, "entry holds 132 bytes"},
		{"not zip", []byte(npy), ErrFormat, "not a readable .npz"},
	} {
		_, err := OpenNPZ(bytes.NewReader(c.zip), int64(len(c.zip)), "x.npz")
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.message) || !strings.Contains(err.Error(), "x.npz") {
			t.Errorf("%s: %v; want %v saying %q", c.name, err, c.kind, c.message)
		}
	}
	// Directory entries are skipped.
	dir := rawZip(t, [2]string{"d/", ""}, [2]string{"d/a.npy", npy})
	z, err := OpenNPZ(bytes.NewReader(dir), int64(len(dir)), "x.npz")
	if err != nil || len(z.Entries()) != 1 || z.Entries()[0].Name != "d/a" {
		t.Errorf("archive with a directory entry: %v", err)
	}
}

// TestNPZHeaderBudget: many large headers in a small deflated archive are
// refused once their sum passes MaxNPZHeaderBytes.
func TestNPZHeaderBudget(t *testing.T) {
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': ()}"
	dict += strings.Repeat(" ", MaxHeaderLen-len(dict))
	one := []byte(Magic + "\x02\x00\x00\x00\x10\x00" + dict + "\x00\x00\x00\x00")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range MaxNPZHeaderBytes/len(one) + 2 {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "a" + itoa(int64(i)) + ".npy", Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(one)
	}
	zw.Close()
	if buf.Len() > 1<<20 {
		t.Fatalf("test archive is %d bytes", buf.Len())
	}
	_, err := OpenNPZ(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "big.npz")
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "headers exceed") {
		t.Fatalf("archive of %d 1 MiB headers: %v", MaxNPZHeaderBytes/len(one)+2, err)
	}
}

func mustRead(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNPZCorruption cuts a real archive at every byte and flips every bit of
// it: no panic, and every accepted variant still reads to the end without error
// or is rejected with one (the CRC-32 catches flipped data).
func TestNPZCorruption(t *testing.T) {
	raw := []byte(mustRead(t, "arrays_deflate.npz"))
	check := func(b []byte) {
		z, err := OpenNPZ(bytes.NewReader(b), int64(len(b)), "c.npz")
		if err != nil {
			return
		}
		for _, e := range z.Entries() {
			a, err := z.Open(e.Name)
			if err != nil {
				continue
			}
			io.Copy(io.Discard, a)
			a.Close()
		}
	}
	for cut := 0; cut < len(raw); cut++ {
		check(raw[:cut])
	}
	for i := range raw {
		for bit := 0; bit < 8; bit++ {
			b := append([]byte{}, raw...)
			b[i] ^= 1 << bit
			check(b)
		}
	}
	// A flipped bit in stored data is caught by the zip CRC when read.
	stored := []byte(mustRead(t, "arrays.npz"))
	z, _ := OpenNPZ(bytes.NewReader(stored), int64(len(stored)), "s.npz")
	e, _ := z.Lookup("weight")
	off, _ := e.file.DataOffset()
	b := append([]byte{}, stored...)
	b[off+e.Header.HeaderLen] ^= 1
	z, err := OpenNPZ(bytes.NewReader(b), int64(len(b)), "s.npz")
	if err != nil {
		t.Fatal(err)
	}
	a, err := z.Open("weight")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(a); !errors.Is(err, zip.ErrChecksum) {
		t.Errorf("flipped data bit: %v, want zip.ErrChecksum", err)
	}
}

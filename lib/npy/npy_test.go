package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/apr-go/apr/lib/dtype"
)

const testdata = "../../testdata/npy"

// decode returns the elements of little-endian data as float64.
func decode(t *testing.T, d dtype.DType, data []byte) []float64 {
	t.Helper()
	size := d.Info().BlockBytes
	if len(data)%size != 0 {
		t.Fatalf("%s data of %d bytes is not a whole number of elements", d, len(data))
	}
	out := make([]float64, 0, len(data)/size)
	for i := 0; i < len(data); i += size {
		b := data[i : i+size]
		var v float64
		switch d {
		case dtype.Bool, dtype.U8:
			v = float64(b[0])
		case dtype.I8:
			v = float64(int8(b[0]))
		case dtype.I16:
			v = float64(int16(binary.LittleEndian.Uint16(b)))
		case dtype.U16:
			v = float64(binary.LittleEndian.Uint16(b))
		case dtype.I32:
			v = float64(int32(binary.LittleEndian.Uint32(b)))
		case dtype.U32:
			v = float64(binary.LittleEndian.Uint32(b))
		case dtype.I64:
			v = float64(int64(binary.LittleEndian.Uint64(b)))
		case dtype.U64:
			v = float64(binary.LittleEndian.Uint64(b))
		case dtype.F16:
			v = half(binary.LittleEndian.Uint16(b))
		case dtype.F32:
			v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case dtype.F64:
			v = math.Float64frombits(binary.LittleEndian.Uint64(b))
		default:
			t.Fatalf("no decoder for %s", d)
		}
		out = append(out, v)
	}
	return out
}

// half converts IEEE binary16 bits to float64 (finite values only).
func half(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	if exp == 0 {
		return sign * frac * math.Pow(2, -24)
	}
	return sign * (1 + frac/1024) * math.Pow(2, float64(exp-15))
}

// formula returns the values make_testdata.py stores (see testdata/npy/README.md).
func formula(d dtype.DType, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		x := float64(i)
		switch {
		case d.Info().Float:
			out[i] = (x - 2.5) * 0.75
		case d == dtype.Bool:
			if i%3 == 0 {
				out[i] = 1
			}
		case d == dtype.I8 || d == dtype.I16 || d == dtype.I32 || d == dtype.I64:
			out[i] = x*3 - 5
		default:
			out[i] = x*3 + 1
		}
	}
	return out
}

func equalValues(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: value %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var numpyFiles = []struct {
	file  string
	d     dtype.DType
	shape []int64
	big   bool
	major int
}{
	{"f4_le.npy", dtype.F32, []int64{2, 3}, false, 1},
	{"f4_be.npy", dtype.F32, []int64{2, 3}, true, 1},
	{"f8_le.npy", dtype.F64, []int64{4}, false, 1},
	{"f8_be.npy", dtype.F64, []int64{4}, true, 1},
	{"f2_le.npy", dtype.F16, []int64{5}, false, 1},
	{"f2_be.npy", dtype.F16, []int64{5}, true, 1},
	{"i1.npy", dtype.I8, []int64{3, 4}, false, 1},
	{"u1.npy", dtype.U8, []int64{3, 4}, false, 1},
	{"b1.npy", dtype.Bool, []int64{7}, false, 1},
	{"i2_be.npy", dtype.I16, []int64{3, 2}, true, 1},
	{"u2_le.npy", dtype.U16, []int64{3, 2}, false, 1},
	{"i4_be.npy", dtype.I32, []int64{2, 2, 2}, true, 1},
	{"u4_be.npy", dtype.U32, []int64{6}, true, 1},
	{"i8_le.npy", dtype.I64, []int64{1, 5}, false, 1},
	{"u8_be.npy", dtype.U64, []int64{2, 3}, true, 1},
	{"scalar_f8.npy", dtype.F64, []int64{}, false, 1},
	{"empty_f4.npy", dtype.F32, []int64{0, 3}, false, 1},
	{"v2_i4_be.npy", dtype.I32, []int64{2, 3}, true, 2},
	{"v3_i4_be.npy", dtype.I32, []int64{2, 3}, true, 3},
	{"fortran_1d_f4.npy", dtype.F32, []int64{4, 1}, false, 1},
}

// TestNumpyFiles reads every file numpy wrote into testdata and checks header and
// values, whole and through readers that return one byte or half a buffer at a time.
func TestNumpyFiles(t *testing.T) {
	for _, c := range numpyFiles {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(testdata, c.file)
			h, data, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if h.DType != c.d || !equalShape(h.Shape, c.shape) || h.BigEndian != c.big || h.Major != c.major {
				t.Fatalf("header %+v, want %s %v big=%v version %d", h, c.d, c.shape, c.big, c.major)
			}
			fi, _ := os.Stat(path)
			if h.HeaderLen+h.DataSize != fi.Size() || h.HeaderLen%64 != 0 {
				t.Fatalf("header %d + data %d bytes, file %d bytes", h.HeaderLen, h.DataSize, fi.Size())
			}
			n, _ := dtype.Elems(c.shape)
			equalValues(t, c.file, decode(t, c.d, data), formula(c.d, int(n)))

			raw, _ := os.ReadFile(path)
			for name, wrap := range map[string]func(io.Reader) io.Reader{
				"one-byte": iotest.OneByteReader, "half": iotest.HalfReader, "data-err": iotest.DataErrReader,
			} {
				r, err := NewReader(wrap(bytes.NewReader(raw)), c.file)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got, err := io.ReadAll(r)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !bytes.Equal(got, data) {
					t.Fatalf("%s: data differs from a whole read", name)
				}
			}
			// ReadHeader + DataReader leave the stream right after the data.
			br := bytes.NewReader(append(append([]byte{}, raw...), "tail"...))
			h2, err := ReadHeader(br)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(DataReader(br, h2))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("DataReader: %v, data equal %v", err, bytes.Equal(got, data))
			}
			if rest, _ := io.ReadAll(br); string(rest) != "tail" {
				t.Fatalf("DataReader left %q in the stream, want \"tail\"", rest)
			}
		})
	}
}

// TestByteSwap checks every byte of an 8-byte big-endian element is reversed.
func TestByteSwap(t *testing.T) {
	h, data, err := ReadFile(filepath.Join(testdata, "swap_u8_be.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if !h.BigEndian || h.ByteOrder() != binary.BigEndian {
		t.Fatalf("header %+v: want big-endian", h)
	}
	want := []uint64{0x0102030405060708, 0xF0E0D0C0B0A09080}
	for i, w := range want {
		if got := binary.LittleEndian.Uint64(data[8*i:]); got != w {
			t.Errorf("element %d: %#x, want %#x", i, got, w)
		}
	}
	// Reads into buffers smaller than an element go through the pending buffer.
	raw, _ := os.ReadFile(filepath.Join(testdata, "swap_u8_be.npy"))
	for _, step := range []int{1, 3, 5, 7, 9, 13} {
		r, err := NewReader(bytes.NewReader(raw), "")
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		buf := make([]byte, step)
		for {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("reads of %d bytes: % x, want % x", step, got, data)
		}
	}
}

// TestRejectedNumpyFiles: arrays numpy writes that apr refuses, with the reason.
func TestRejectedNumpyFiles(t *testing.T) {
	for _, c := range []struct{ file, msg string }{
		{"fortran_f4.npy", "fortran_order arrays are not supported; save with np.ascontiguousarray"},
		{"complex_c8.npy", "complex arrays are not supported"},
		{"unicode_U3.npy", "string arrays are not supported"},
		{"object.npy", "object arrays"},
		{"structured.npy", "structured dtype"},
	} {
		path := filepath.Join(testdata, c.file)
		_, _, err := ReadFile(path)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v; want ErrUnsupported naming the file and saying %q", c.file, err, c.msg)
		}
	}
}

// npyWith builds a version-1.0 file around a header dict (no padding rules applied).
func npyWith(dict string, data []byte) []byte {
	b := []byte(Magic + "\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(dict)))
	b = append(b, dict...)
	return append(b, data...)
}

func TestHeaderVariants(t *testing.T) {
	ok := []struct {
		dict  string
		d     dtype.DType
		shape []int64
		big   bool
	}{
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", dtype.F32, []int64{3}, false},
		{"{'shape': (3,), 'fortran_order': False, 'descr': '>i2'}", dtype.I16, []int64{3}, true},
		{"{ 'descr' : '|u1' ,'fortran_order':False,'shape':( 2 , 3 , ) }   \n", dtype.U8, []int64{2, 3}, false},
		{"{\"descr\": \"<u8\", \"fortran_order\": False, \"shape\": ()}\n", dtype.U64, []int64{}, false},
		{"{'descr': '<f8', 'fortran_order': False, 'shape': (3L, 1L), }", dtype.F64, []int64{3, 1}, false},
		{"{'descr': '>i1', 'fortran_order': False, 'shape': (1,)}", dtype.I8, []int64{1}, false},
		{"{'descr': '=b1', 'fortran_order': False, 'shape': (1,)}", dtype.Bool, []int64{1}, false},
		{"{'descr': '<u1', 'fortran_order': True, 'shape': (1, 1)}", dtype.U8, []int64{1, 1}, false},
		{"{'descr': '<f2',\t'fortran_order': False,\r\n'shape': (1,\n)}", dtype.F16, []int64{1}, false},
	}
	for _, c := range ok {
		size, _ := dtype.Size(c.d, c.shape)
		h, err := ReadHeader(bytes.NewReader(npyWith(c.dict, make([]byte, size))))
		if err != nil {
			t.Errorf("%q: %v", c.dict, err)
			continue
		}
		if h.DType != c.d || !equalShape(h.Shape, c.shape) || h.BigEndian != c.big || h.DataSize != size {
			t.Errorf("%q: got %+v", c.dict, h)
		}
	}
	bad := []struct {
		dict string
		kind error
		msg  string
	}{
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", ErrFormat, "a one-dimensional shape is written (3,)"},
		{"{'descr': '<f4', 'fortran_order': False}", ErrFormat, `no "shape" key`},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", ErrFormat, `unexpected key "x"`},
		{"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", ErrFormat, `duplicate key "descr"`},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}", ErrFormat, "negative dimension"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", ErrFormat, "64 bits"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", ErrFormat, "2^56"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': [3]}", ErrFormat, "must be a tuple"},
		{"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}", ErrFormat, "True or False"},
		{"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3)}", ErrUnsupported, "np.ascontiguousarray"},
		{"{'descr': '|f4', 'fortran_order': False, 'shape': (3,)}", ErrFormat, "explicit byte order"},
		{"{'descr': '=i8', 'fortran_order': False, 'shape': (3,)}", ErrFormat, "explicit byte order"},
		{"{'descr': 'f4', 'fortran_order': False, 'shape': (3,)}", ErrFormat, "byte-order character"},
		{"{'descr': '<f16', 'fortran_order': False, 'shape': (3,)}", ErrUnsupported, "long double"},
		{"{'descr': '<i3', 'fortran_order': False, 'shape': (3,)}", ErrUnsupported, "no 3-byte"},
		{"{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (3,)}", ErrUnsupported, "datetime"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} x", ErrFormat, "after the header dict"},
		{"{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}", ErrFormat, "expected ',' or '}'"},
		{"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (3,)}", ErrFormat, "unsupported character"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,", ErrFormat, "end of header"},
		{"", ErrFormat, "expected '{'"},
	}
	for _, c := range bad {
		_, err := ReadHeader(bytes.NewReader(npyWith(c.dict, make([]byte, 64))))
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: error %v; want %v saying %q", c.dict, err, c.kind, c.msg)
		}
		var e *Error
		if errors.As(err, &e) && (e.Offset < 10 || e.Offset > int64(10+len(c.dict))) {
			t.Errorf("%q: error offset %d is outside the header dict", c.dict, e.Offset)
		}
	}
	// Python 2's long suffix is only legal in versions 1.0 and 2.0.
	v3 := []byte(Magic + "\x03\x00")
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,)}"
	v3 = binary.LittleEndian.AppendUint32(v3, uint32(len(dict)))
	v3 = append(v3, dict...)
	if _, err := ReadHeader(bytes.NewReader(v3)); !errors.Is(err, ErrFormat) {
		t.Errorf("3L in a version 3.0 header: %v, want ErrFormat", err)
	}
	deep := "{'descr': '<f4', 'fortran_order': False, 'shape': (" + strings.Repeat("1, ", MaxDims+1) + ")}"
	if _, err := ReadHeader(bytes.NewReader(npyWith(deep, nil))); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "dimensions") {
		t.Errorf("%d dimensions: %v", MaxDims+1, err)
	}
}

func TestPreamble(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind error
		msg  string
	}{
		{"", ErrTruncated, "empty input"},
		{"\x93NUM", ErrTruncated, "after 4 bytes"},
		{"PK\x03\x04", ErrFormat, "not a .npy file"},
		{"\x93NUMPX\x01\x00\x00\x00", ErrFormat, "not a .npy file"},
		{Magic + "\x04\x00\x00\x00", ErrUnsupported, "version 4.0"},
		{Magic + "\x01\x01\x00\x00", ErrUnsupported, "version 1.1"},
		{Magic + "\x02\x00\x00\x00", ErrTruncated, "4-byte header length"},
		{Magic + "\x02\x00\x01\x00\x10\x00", ErrFormat, "exceeds the limit"},
		{Magic + "\x03\x00\xff\xff\xff\xff", ErrFormat, "exceeds the limit"},
		// A header claiming 1 MiB with only a few bytes present: a truncation
		// error, and no 1 MiB buffer.
		{Magic + "\x02\x00\x00\x00\x10\x00" + "{'descr'", ErrTruncated, "announces 1048576 bytes at offset 12, input ends after 8"},
		{Magic + "\x02\x00\x00\x00\x0f\x00" + "{'descr'", ErrTruncated, "announces 983040 bytes at offset 12, input ends after 8"},
	} {
		_, err := ReadHeader(strings.NewReader(c.in))
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: error %v; want %v saying %q", c.in, err, c.kind, c.msg)
		}
	}
	allocs := testing.AllocsPerRun(10, func() {
		ReadHeader(strings.NewReader(Magic + "\x02\x00\x00\x00\x0f\x00{"))
	})
	// A handful of small allocations; the point is that the test process did
	// not reserve the announced 983040 bytes (see TestHeaderAllocation).
	if allocs > 20 {
		t.Errorf("%v allocations for a 1-byte header", allocs)
	}
}

// TestHeaderAllocation: a header announcing far more than present costs memory
// in proportion to the bytes present, not to the announcement.
func TestHeaderAllocation(t *testing.T) {
	in := Magic + "\x02\x00\x00\x00\x0f\x00{"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 100
	for range runs {
		if _, err := ReadHeader(strings.NewReader(in)); !errors.Is(err, ErrTruncated) {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 16<<10 {
		t.Errorf("ReadHeader allocated %d bytes per call for a 1-byte header announcing 983040", per)
	}
}

// TestTruncation cuts real files at every byte: each prefix is an ErrTruncated
// error naming the file, and data truncation names both sizes.
func TestTruncation(t *testing.T) {
	for _, file := range []string{"f4_be.npy", "v3_i4_be.npy", "u8_be.npy"} {
		raw, err := os.ReadFile(filepath.Join(testdata, file))
		if err != nil {
			t.Fatal(err)
		}
		hdr, _ := ReadHeader(bytes.NewReader(raw))
		for cut := 0; cut < len(raw); cut++ {
			_, _, err := ReadAll(bytes.NewReader(raw[:cut]), file, 1<<20)
			if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), file) {
				t.Fatalf("%s cut at %d: %v, want ErrTruncated naming the file", file, cut, err)
			}
			if int64(cut) >= hdr.HeaderLen {
				want := "needs " + itoa(hdr.DataSize) + " data bytes"
				got := "input has only " + itoa(int64(cut)-hdr.HeaderLen)
				if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), got) {
					t.Fatalf("%s cut at %d: %v; want %q and %q", file, cut, err, want, got)
				}
			}
		}
		// Appended bytes are an error too.
		_, _, err = ReadAll(bytes.NewReader(append(raw, 0)), file, 1<<20)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "unexpected bytes after") {
			t.Fatalf("%s with a byte appended: %v", file, err)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestBitFlips flips every bit of a file's header: each result is either an
// error or a header that describes bytes the file can hold; none panics.
func TestBitFlips(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testdata, "i4_be.npy"))
	if err != nil {
		t.Fatal(err)
	}
	h0, _ := ReadHeader(bytes.NewReader(raw))
	accepted := 0
	for i := 0; i < int(h0.HeaderLen); i++ {
		for bit := 0; bit < 8; bit++ {
			b := append([]byte{}, raw...)
			b[i] ^= 1 << bit
			h, data, err := ReadAll(bytes.NewReader(b), "flip", 1<<20)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("byte %d bit %d: error %v is not an *Error", i, bit, err)
				}
				continue
			}
			accepted++
			if int64(len(data)) != h.DataSize || h.HeaderLen+h.DataSize != int64(len(b)) {
				t.Fatalf("byte %d bit %d: accepted %+v with %d data bytes", i, bit, h, len(data))
			}
		}
	}
	t.Logf("%d of %d header bit flips still give a consistent file (e.g. the byte-order or padding)", accepted, h0.HeaderLen*8)
}

// TestWriterMatchesNumpy: for every little-endian file numpy wrote, our writer
// produces the same bytes from the same array.
func TestWriterMatchesNumpy(t *testing.T) {
	for _, c := range numpyFiles {
		if c.big || c.major != 1 || strings.HasPrefix(c.file, "fortran") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(testdata, c.file))
		if err != nil {
			t.Fatal(err)
		}
		h, data, err := ReadAll(bytes.NewReader(raw), c.file, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Write(&out, h.DType, h.Shape, data); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), raw) {
			t.Errorf("%s: ours\n%q\nnumpy's\n%q", c.file, out.Bytes(), raw)
		}
	}
}

// TestWriteRoundTrip writes every NumPy-compatible dtype, in versions 1.0, 2.0
// and 3.0, and reads it back.
func TestWriteRoundTrip(t *testing.T) {
	shapes := [][]int64{{}, {0}, {5}, {2, 3}, {1, 2, 1, 3}}
	for _, d := range dtype.All() {
		if d.Info().NumPy == "" {
			if _, err := EncodeHeader(d, []int64{32}); !errors.Is(err, ErrDType) {
				t.Errorf("%s: EncodeHeader error %v, want ErrDType", d, err)
			}
			continue
		}
		for _, shape := range shapes {
			size, _ := dtype.Size(d, shape)
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i*7 + 1)
			}
			for major := 1; major <= 3; major++ {
				hdr, err := encodeHeader(d, shape, major)
				if err != nil {
					t.Fatal(err)
				}
				if len(hdr)%64 != 0 || hdr[len(hdr)-1] != '\n' {
					t.Fatalf("%s %v v%d: header of %d bytes, not a newline-terminated multiple of 64", d, shape, major, len(hdr))
				}
				h, got, err := ReadAll(bytes.NewReader(append(hdr, data...)), "", 1<<20)
				if err != nil {
					t.Fatalf("%s %v v%d: %v", d, shape, major, err)
				}
				if h.DType != d || !equalShape(h.Shape, shape) || h.Major != major || !bytes.Equal(got, data) {
					t.Fatalf("%s %v v%d: read back %+v", d, shape, major, h)
				}
			}
		}
	}
}

func TestWriterChecksSize(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, dtype.F32, []int64{2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 12)); err == nil {
		t.Error("writing 12 bytes into an 8-byte array succeeded")
	}
	w.Write(make([]byte, 4))
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "4 data bytes missing") {
		t.Errorf("Close after 4 of 8 bytes: %v", err)
	}
	if err := Write(&buf, dtype.F32, []int64{2}, make([]byte, 7)); err == nil {
		t.Error("Write of 7 bytes for F32[2] succeeded")
	}
	if err := WriteHeader(&buf, dtype.F32, []int64{-1}); err == nil {
		t.Error("negative dimension accepted")
	}
	path := filepath.Join(t.TempDir(), "x.npy")
	if err := WriteFile(path, dtype.I16, []int64{3}, make([]byte, 5)); err == nil {
		t.Error("WriteFile of a short array succeeded")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("failed WriteFile left %s behind", path)
	}
}

// TestVersion2Header: the version 2.0 layout (4-byte length) as numpy writes it.
func TestVersion2Header(t *testing.T) {
	// No shape of at most MaxDims dimensions needs 64 KiB, so ask for 2.0.
	hdr, err := encodeHeader(dtype.F32, []int64{3}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if hdr[6] != 2 || binary.LittleEndian.Uint32(hdr[8:12])+12 != uint32(len(hdr)) {
		t.Fatalf("version 2.0 header % x", hdr[:12])
	}
	h, err := ReadHeader(bytes.NewReader(hdr))
	if err != nil || h.Major != 2 || h.HeaderLen != int64(len(hdr)) {
		t.Fatalf("%+v %v", h, err)
	}
}

// patternReader yields n bytes of a repeating pattern without holding them.
type patternReader struct{ n, off int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if int64(len(b)) > p.n-p.off {
		b = b[:p.n-p.off]
	}
	for i := range b {
		b[i] = byte((p.off + int64(i)) % 251)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// TestStreamingBoundedMemory reads a 64 MiB big-endian array from a stream
// that never exists in memory: allocation stays small whatever the size.
func TestStreamingBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB stream")
	}
	const elems = 16 << 20
	hdr, err := EncodeHeader(dtype.F32, []int64{elems / 1024, 1024})
	if err != nil {
		t.Fatal(err)
	}
	hdr = bytes.Replace(hdr, []byte("'<f4'"), []byte("'>f4'"), 1)
	src := io.MultiReader(bytes.NewReader(hdr), &patternReader{n: elems * 4})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := NewReader(src, "stream.npy")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10+3) // not a multiple of the element size
	var total int64
	var first [4]byte
	for {
		n, err := r.Read(buf)
		if total == 0 && n >= 4 {
			copy(first[:], buf)
		}
		total += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if total != elems*4 {
		t.Fatalf("read %d bytes, want %d", total, elems*4)
	}
	if first != [4]byte{3, 2, 1, 0} {
		t.Fatalf("first element % x, want 03 02 01 00 (swapped)", first)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Fatalf("streaming 64 MiB allocated %d bytes", alloc)
	}
}

func BenchmarkReadBigEndianF32(b *testing.B) {
	const elems = 4 << 20
	hdr, _ := EncodeHeader(dtype.F32, []int64{elems})
	hdr = bytes.Replace(hdr, []byte("'<f4'"), []byte("'>f4'"), 1)
	file := append(hdr, make([]byte, elems*4)...)
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(file), "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf); err != nil {
			b.Fatal(err)
		}
	}
}

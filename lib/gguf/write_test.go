package gguf

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

func validHeader() *Header {
	h := &Header{
		KVs: []KV{
			{"general.architecture", String("test")},
			{"general.alignment", Uint32(64)},
			{"a.u8s", Array([]uint8{1, 2})},
			{"a.empty", Array([]string(nil))},
		},
		Tensors: []TensorInfo{
			{Name: "a", Dims: []int64{32, 2}, Type: 2}, // Q4_0: 2 blocks, 36 bytes
			{Name: "b", Dims: []int64{3}, Type: 0},     // F32: 12 bytes
			{Name: "empty", Dims: []int64{0, 5}, Type: 0},
			{Name: "c", Dims: []int64{1, 1, 1, 1}, Type: 26},
		},
	}
	if err := h.Layout(); err != nil {
		panic(err)
	}
	return h
}

func TestLayoutAndWrite(t *testing.T) {
	h := validHeader()
	var offs []int64
	for _, ti := range h.Tensors {
		offs = append(offs, ti.Offset)
	}
	if !slices.Equal(offs, []int64{0, 64, 128, 128}) || h.Alignment != 64 || h.DataOffset%64 != 0 {
		t.Fatalf("offsets %v alignment %d data offset %d", offs, h.Alignment, h.DataOffset)
	}
	var out bytes.Buffer
	w, err := NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	if out.Len() != int(h.DataOffset) {
		t.Fatalf("header wrote %d bytes, data offset %d", out.Len(), h.DataOffset)
	}
	if i, left := w.Next(); i != 0 || left != 36 {
		t.Errorf("Next = %d, %d", i, left)
	}
	// All the data in odd-sized writes across tensor boundaries.
	data := make([]byte, 36+12+4)
	for i := range data {
		data[i] = byte(i + 1)
	}
	for p := data; len(p) > 0; {
		n := min(len(p), 5)
		if _, err := w.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if i, _ := w.Next(); i != -1 {
		t.Errorf("Next after all data = %d", i)
	}
	if _, err := w.Write([]byte{1}); err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("write past the end: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close after a failed write reports no error")
	}
	f, err := NewFile(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if f.DataOffset+f.DataSize() != int64(out.Len()) || out.Len() != int(h.DataOffset)+192 {
		t.Errorf("file of %d bytes, data %d+%d", out.Len(), f.DataOffset, f.DataSize())
	}
	for i, want := range [][]byte{data[:36], data[36:48], {}, data[48:]} {
		got, err := f.TensorData(i)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("tensor %d = %v, %v", i, got, err)
		}
	}
	if err := headersEqual(h, &f.Header); err != nil {
		t.Error(err)
	}
	// Padding is zero.
	b := out.Bytes()
	for _, r := range [][2]int64{{h.InfoEnd, h.DataOffset}, {h.DataOffset + 36, h.DataOffset + 64}, {h.DataOffset + 76, h.DataOffset + 128}, {h.DataOffset + 132, h.DataOffset + 192}} {
		if !bytes.Equal(b[r[0]:r[1]], make([]byte, r[1]-r[0])) {
			t.Errorf("padding %v not zero", r)
		}
	}
}

// TestWriterWrote writes the data of validHeader's tensors to the underlying writer
// directly, as a copy_file_range would, and lets Wrote pad; the bytes must equal those
// of Write.
func TestWriterWrote(t *testing.T) {
	data := make([]byte, 36+12+4)
	for i := range data {
		data[i] = byte(i + 1)
	}
	var want bytes.Buffer
	w, err := NewWriter(&want, validHeader())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if w, err = NewWriter(&got, validHeader()); err != nil {
		t.Fatal(err)
	}
	// Tensor a in two pieces, then b, then c (the empty tensor is passed over).
	for _, n := range []int{20, 16, 12, 4} {
		got.Write(data[:n])
		data = data[n:]
		if err := w.Wrote(int64(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("Wrote gives %d bytes, Write %d, or they differ", got.Len(), want.Len())
	}
	if err := w.Wrote(1); err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("Wrote past the end: %v", err)
	}
}

func TestWriterIncomplete(t *testing.T) {
	h := validHeader()
	w, err := NewWriter(io.Discard, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensor(make([]byte, 35)); err == nil || !strings.Contains(err.Error(), "got 35 bytes, the tensor has 36") {
		t.Errorf("short WriteTensor: %v", err)
	}
	if _, err := w.Write(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensor(make([]byte, 26)); err == nil || !strings.Contains(err.Error(), "middle of the tensor") {
		t.Errorf("WriteTensor mid-tensor: %v", err)
	}
	err = w.Close()
	expectErr(t, err, ErrInvalid, `tensor "a"`, "26 of its 36 bytes unwritten")
}

// failWriter accepts n bytes, then fails.
type failWriter struct{ n int64 }

func (f *failWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > f.n {
		return 0, errors.New("disk full")
	}
	f.n -= int64(len(p))
	return len(p), nil
}

func TestWriterPropagatesErrors(t *testing.T) {
	if _, err := NewWriter(&failWriter{}, validHeader()); err == nil {
		t.Error("header write error lost")
	}
	if _, err := NewWriter(&failWriter{n: validHeader().InfoEnd}, validHeader()); err == nil {
		t.Error("padding write error lost")
	}
	w, err := NewWriter(&failWriter{n: validHeader().DataOffset}, validHeader())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensor(make([]byte, 36)); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("data write error: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close after a write error reports none")
	}
}

// TestValidate: every rule, each a clear ErrInvalid before any byte is written.
func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(h *Header)
		msg  []string
	}{
		{"version 1", func(h *Header) { h.Version = 1 }, []string{"version 1"}},
		{"empty key", func(h *Header) { h.KVs[2].Key = "" }, []string{"KV #2 has an empty key"}},
		{"NUL in key", func(h *Header) { h.KVs[2].Key = "a\x00b" }, []string{"NUL"}},
		{"duplicate key", func(h *Header) { h.KVs[3].Key = "a.u8s" }, []string{`key "a.u8s"`, "duplicate key"}},
		{"zero value", func(h *Header) { h.KVs[2].Value = Value{} }, []string{`key "a.u8s"`, "invalid (zero) Value"}},
		{"nested array", func(h *Header) {
			v, _ := NestedArray([]Value{Array([]int32{1})})
			h.KVs[2].Value = v
		}, []string{"array of arrays"}},
		{"alignment type", func(h *Header) { h.KVs[1].Value = Uint64(64) }, []string{`key "general.alignment"`, "must be a u32"}},
		{"alignment not power of two", func(h *Header) { h.KVs[1].Value = Uint32(96) }, []string{"power of two, got 96"}},
		{"alignment field mismatch", func(h *Header) { h.Alignment = 32 }, []string{"Alignment is 32 but the KVs give 64"}},
		{"empty name", func(h *Header) { h.Tensors[1].Name = "" }, []string{"tensor #1", "empty tensor name"}},
		{"long name", func(h *Header) { h.Tensors[1].Name = strings.Repeat("x", 64) }, []string{"64 bytes, llama.cpp accepts at most 63"}},
		{"NUL in name", func(h *Header) { h.Tensors[1].Name = "b\x00" }, []string{"NUL"}},
		{"duplicate name", func(h *Header) { h.Tensors[1].Name = "a" }, []string{`tensor "a"`, "duplicate tensor name"}},
		{"0 dims", func(h *Header) { h.Tensors[1].Dims = nil }, []string{`tensor "b"`, "0 dims, must be 1 to 4"}},
		{"5 dims", func(h *Header) { h.Tensors[3].Dims = []int64{1, 1, 1, 1, 1} }, []string{"5 dims"}},
		{"negative dim", func(h *Header) { h.Tensors[1].Dims = []int64{-3} }, []string{"negative"}},
		{"overflowing dims", func(h *Header) { h.Tensors[1].Dims = []int64{1 << 40, 1 << 40} }, []string{"more than 2^56"}},
		{"unknown type", func(h *Header) { h.Tensors[1].Type = 5 }, []string{`tensor "b"`, "unknown ggml type 5"}},
		{"partial block", func(h *Header) { h.Tensors[0].Dims = []int64{48, 2} }, []string{"multiple of 32, got 48"}},
		{"gap", func(h *Header) { h.Tensors[1].Offset = 128 }, []string{`tensor "b"`, "offset 128, expected 64"}},
		{"out of order", func(h *Header) { h.Tensors[0].Offset, h.Tensors[1].Offset = 64, 0 }, []string{"offset 64, expected 0"}},
		{"info end mismatch", func(h *Header) { h.InfoEnd++ }, []string{"InfoEnd"}},
		{"data offset mismatch", func(h *Header) { h.DataOffset += 64 }, []string{"DataOffset"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := validHeader()
			c.edit(h)
			var out bytes.Buffer
			_, err := NewWriter(&out, h)
			expectErr(t, err, ErrInvalid, c.msg...)
			if out.Len() != 0 {
				t.Errorf("%d bytes written before the error", out.Len())
			}
			if err := h.Validate(); err == nil {
				t.Error("Validate accepts it")
			}
			if _, err := h.EncodeHeader(); err == nil {
				t.Error("EncodeHeader accepts it")
			}
		})
	}
	if err := validHeader().Validate(); err != nil {
		t.Errorf("valid header: %v", err)
	}
}

// TestEveryGGMLType: every ggml type the dtype table knows can be written and read
// back with the size ggml gives it.
func TestEveryGGMLType(t *testing.T) {
	h := &Header{}
	for _, d := range dtype.All() {
		tt, ok := TensorTypeOf(d)
		if !ok {
			continue
		}
		i := d.Info()
		h.Tensors = append(h.Tensors, TensorInfo{Name: "t." + d.String(), Dims: []int64{int64(i.BlockElems) * 2, 3}, Type: tt})
	}
	if len(h.Tensors) < 30 {
		t.Fatalf("only %d ggml types", len(h.Tensors))
	}
	if err := h.Layout(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range h.Tensors {
		d, _ := h.Tensors[i].Type.DType()
		n := 6 * d.Info().BlockBytes
		if sz, _ := h.Tensors[i].Size(); sz != int64(n) {
			t.Errorf("%s: size %d, want %d", d, sz, n)
		}
		if err := w.WriteTensor(bytes.Repeat([]byte{byte(i)}, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		b, _ := f.TensorData(i)
		if len(b) == 0 || b[0] != byte(i) || b[len(b)-1] != byte(i) {
			t.Errorf("%s data wrong", f.Tensors[i].Name)
		}
		if !strings.HasSuffix(f.Tensors[i].Name, f.Tensors[i].Type.String()) {
			t.Errorf("%s has type %s", f.Tensors[i].Name, f.Tensors[i].Type)
		}
	}
}

// TestValueAllTypes: every value type written and read back keeps its exact type,
// bits, and textual form.
func TestValueAllTypes(t *testing.T) {
	nan := math.Float32frombits(0x7FC00001)
	kvs := []struct {
		v    Value
		typ  string
		text string
	}{
		{Uint8(200), "u8", "200"},
		{Int8(-5), "i8", "-5"},
		{Uint16(65535), "u16", "65535"},
		{Int16(-300), "i16", "-300"},
		{Uint32(1 << 31), "u32", "2147483648"},
		{Int32(-7), "i32", "-7"},
		{Uint64(math.MaxUint64), "u64", "18446744073709551615"},
		{Int64(math.MinInt64), "i64", "-9223372036854775808"},
		{Float32(nan), "f32", "NaN(0x7fc00001)"},
		{Float32(float32(math.Copysign(0, -1))), "f32", "-0"},
		{Float64(math.Inf(-1)), "f64", "-Inf"},
		{Float64(1.0 / 3), "f64", "0.3333333333333333"},
		{Bool(true), "bool", "true"},
		{String("a\x00\xff\"b"), "string", `"a\x00\xff\"b"`},
		{Array([]uint8{}), "array[u8]", "[]"},
		{Array([]int8{-1}), "array[i8]", "[-1]"},
		{Array([]uint16{1, 2}), "array[u16]", "[1, 2]"},
		{Array([]int16{-1, 2}), "array[i16]", "[-1, 2]"},
		{Array([]uint32{3}), "array[u32]", "[3]"},
		{Array([]int32{-3}), "array[i32]", "[-3]"},
		{Array([]uint64{4}), "array[u64]", "[4]"},
		{Array([]int64{-4}), "array[i64]", "[-4]"},
		{Array([]float32{nan, 0.1}), "array[f32]", "[NaN(0x7fc00001), 0.1]"},
		{Array([]float64{0.1}), "array[f64]", "[0.1]"},
		{Array([]bool{false, true}), "array[bool]", "[false, true]"},
		{Array([]string{"x", ""}), "array[string]", `["x", ""]`},
		{Array(make([]int32, 17)), "array[i32]", "[array of 17 i32]"},
	}
	h := &Header{}
	for i, kv := range kvs {
		if kv.v.TypeName() != kv.typ || kv.v.String() != kv.text {
			t.Errorf("%d: %s %s, want %s %s", i, kv.v.TypeName(), kv.v.String(), kv.typ, kv.text)
		}
		h.KVs = append(h.KVs, KV{Key: "k" + string(rune('a'+i)), Value: kv.v})
		// Interface and FromInterface are inverse, bit for bit.
		back, err := FromInterface(kv.v.Interface())
		if err != nil || !back.Equal(kv.v) {
			t.Errorf("%d: FromInterface(Interface()) = %v, %v", i, back, err)
		}
	}
	if err := h.Layout(); err != nil {
		t.Fatal(err)
	}
	enc, err := h.EncodeHeader()
	if err != nil {
		t.Fatal(err)
	}
	g, err := ReadHeader(bytes.NewReader(enc))
	if err != nil {
		t.Fatal(err)
	}
	if err := headersEqual(h, g); err != nil {
		t.Fatal(err)
	}
}

func TestValueAccessors(t *testing.T) {
	if _, ok := Uint16(3).AsInt64(); ok {
		t.Error("u16 as int64")
	}
	if v, ok := Uint16(3).AsUint64(); !ok || v != 3 {
		t.Error("u16 as uint64")
	}
	if v, ok := Int8(-3).AsInt64(); !ok || v != -3 {
		t.Error("i8 as int64")
	}
	if v, ok := Float32(0.1).AsFloat64(); !ok || v != float64(float32(0.1)) {
		t.Error("f32 as float64")
	}
	if v, ok := Bool(true).AsBool(); !ok || !v {
		t.Error("AsBool")
	}
	if _, ok := Uint8(1).AsBool(); ok {
		t.Error("u8 as bool")
	}
	if s, ok := String("x").AsString(); !ok || s != "x" {
		t.Error("AsString")
	}
	if Float64(0).Equal(Float64(math.Copysign(0, -1))) || !Float32(float32(math.NaN())).Equal(Float32(float32(math.NaN()))) {
		t.Error("Equal is not bitwise")
	}
	if Uint32(1).Equal(Int32(1)) || Array([]int32{}).Equal(Array([]uint32{})) {
		t.Error("Equal ignores the type")
	}
	var zero Value
	if zero.IsValid() || zero.TypeName() != "invalid" || zero.Interface() != nil || zero.Len() != 0 {
		t.Error("zero Value")
	}
	if _, err := FromInterface(3); err == nil {
		t.Error("FromInterface(int) accepted")
	}
	if _, err := NestedArray([]Value{Uint8(1)}); err == nil {
		t.Error("NestedArray of scalars accepted")
	}
	src := []string{"a"}
	v := Array(src)
	src[0] = "b"
	if s, _ := v.Strings(); s[0] != "a" {
		t.Error("Array does not copy")
	}
	for _, n := range valueTypeNames {
		if vt, err := ParseValueType(n); err != nil || vt.String() != n {
			t.Errorf("ParseValueType(%q)", n)
		}
	}
	if TensorType(2).String() != "Q4_0" || TensorType(4).String() != "ggml_type(4)" || TensorType(4).Known() {
		t.Error("TensorType names")
	}
}

// TestNewestGGMLTypes: ggml's codes 40-42 (NVFP4, Q1_0, Q2_0 in ggml d99724f2) size
// tensors as ggml does (ggml_row_size: bytes per block times blocks per row), and
// 43, which ggml has not defined, stays unknown.
func TestNewestGGMLTypes(t *testing.T) {
	for _, c := range []struct {
		code        TensorType
		name        string
		ne0, nbytes int64 // a row of ne0 values takes nbytes
	}{
		{40, "NVFP4", 128, 2 * 36},
		{41, "Q1_0", 256, 2 * 18},
		{42, "Q2_0", 192, 3 * 18},
	} {
		if c.code.String() != c.name || !c.code.Known() {
			t.Errorf("ggml type %d: %q, known %v; want %s", int(c.code), c.code.String(), c.code.Known(), c.name)
		}
		ti := TensorInfo{Name: "w", Dims: []int64{c.ne0, 5}, Type: c.code}
		if n, err := ti.Size(); err != nil || n != 5*c.nbytes {
			t.Errorf("%s [%d, 5]: %d bytes, %v; want %d", c.name, c.ne0, n, err, 5*c.nbytes)
		}
		bad := TensorInfo{Name: "w", Dims: []int64{c.ne0 + 32, 1}, Type: c.code}
		if _, err := bad.Size(); err == nil {
			t.Errorf("%s: a row of %d values is not whole blocks, Size accepted it", c.name, c.ne0+32)
		}
	}
	if TensorType(43).Known() {
		t.Error("ggml type 43 is not defined by ggml")
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// TestHugeAlignmentNoAllocation: padding to a huge (valid) alignment is written in
// chunks, never allocated whole.
func TestHugeAlignmentNoAllocation(t *testing.T) {
	h := &Header{KVs: []KV{{AlignmentKey, Uint32(1 << 28)}}, Tensors: []TensorInfo{{Name: "w", Dims: []int64{1}, Type: 0}}}
	if err := h.Layout(); err != nil {
		t.Fatal(err)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	var c countWriter
	w, err := NewWriter(&c, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensor(make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms1)
	if c.n != 2<<28 {
		t.Errorf("wrote %d bytes, want %d", c.n, 2<<28)
	}
	if got := ms1.TotalAlloc - ms0.TotalAlloc; got > 1<<20 {
		t.Errorf("allocated %d bytes", got)
	}
}

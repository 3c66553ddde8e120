package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// mk builds a file from header JSON and data.
func mk(hdr string, data []byte) []byte {
	b := make([]byte, 8, 8+len(hdr)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	b = append(b, hdr...)
	return append(b, data...)
}

// TestHeaderRules covers serde/serde_json behaviour of the crate that the fixtures do
// not: each row is a header, its data length, and the crate's verdict ("" = accepted).
func TestHeaderRules(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	u8 := func(extra string) string {
		return `{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]` + extra + `}}`
	}
	for _, c := range []struct {
		name, hdr string
		data      int
		want      string
	}{
		{"dtype as {variant: null}", `{"a":{"dtype":{"U8":null},"shape":[2],"data_offsets":[0,2]}}`, 2, ""},
		{"dtype map with a non-null value", `{"a":{"dtype":{"U8":1},"shape":[2],"data_offsets":[0,2]}}`, 2, "InvalidHeaderDeserialization"},
		{"dtype map with two keys", `{"a":{"dtype":{"U8":null,"I8":null},"shape":[2],"data_offsets":[0,2]}}`, 2, "InvalidHeaderDeserialization"},
		{"entry as a 3-element array", `{"a":["U8",[2],[0,2]]}`, 2, ""},
		{"entry as a 2-element array", `{"a":["U8",[2]]}`, 2, "InvalidHeaderDeserialization"},
		{"entry as a 4-element array", `{"a":["U8",[2],[0,2],1]}`, 2, "InvalidHeaderDeserialization"},
		{"duplicate dtype field", `{"a":{"dtype":"U8","dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, 2, "InvalidHeaderDeserialization"},
		{"field name case", `{"a":{"DType":"U8","shape":[2],"data_offsets":[0,2]}}`, 2, "InvalidHeaderDeserialization"},
		{"ignored field, nested 126 deep", u8(`,"x":` + deep(125)), 2, ""},
		{"ignored field, nested 128 deep", u8(`,"x":` + deep(126)), 2, "InvalidHeaderDeserialization"},
		{"ignored field with bad JSON", u8(`,"x":[1,]`), 2, "InvalidHeaderDeserialization"},
		{"ignored field number 1.", u8(`,"x":1.`), 2, "InvalidHeaderDeserialization"},
		{"ignored field number -0.5e+3", u8(`,"x":-0.5e+3`), 2, ""},
		{"ignored field literal tru", u8(`,"x":tru`), 2, "InvalidHeaderDeserialization"},
		{"escaped __metadata__ key", `{"\u005f_metadata__":{"k":"v"}}`, 0, ""},
		{"metadata key repeated: last wins", `{"__metadata__":{"k":"1","k":"2"}}`, 0, ""},
		{"lone leading surrogate", `{"\ud800":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, 0, "InvalidHeaderDeserialization"},
		{"lone trailing surrogate", `{"\udc00":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, 0, "InvalidHeaderDeserialization"},
		{"surrogate pair", `{"\ud83d\ude00":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, 0, ""},
		{"invalid escape", `{"\x":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, 0, "InvalidHeaderDeserialization"},
		{"raw control char in key", "{\"a\tb\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, "InvalidHeaderDeserialization"},
		{"leading zero", `{"a":{"dtype":"U8","shape":[02],"data_offsets":[0,2]}}`, 2, "InvalidHeaderDeserialization"},
		{"exponent", `{"a":{"dtype":"U8","shape":[2e0],"data_offsets":[0,2]}}`, 2, "InvalidHeaderDeserialization"},
		{"minus zero", `{"a":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]}}`, 0, "InvalidHeaderDeserialization"},
		{"2^64 is too big", `{"a":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}}`, 0, "InvalidHeaderDeserialization"},
		{"2^64-1 end offset", `{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,18446744073709551615]}}`, 2, "TensorInvalidInfo"},
		{"huge zero-size dim (int64 cannot hold it)", `{"a":{"dtype":"U8","shape":[0,18446744073709551615],"data_offsets":[0,0]}}`, 0, "ValidationOverflow"},
		{"two zero-size tensors at the same offset", `{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`, 0, ""},
		{"trailing comma", `{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},}`, 2, "InvalidHeaderDeserialization"},
		{"missing colon", `{"a" {}}`, 0, "InvalidHeaderDeserialization"},
		{"unterminated", `{"a":{"dtype":"U8"`, 0, "InvalidHeaderDeserialization"},
		{"metadata null then tensors", `{"__metadata__":null,"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1, ""},
		{"metadata array", `{"__metadata__":[]}`, 0, "InvalidHeaderDeserialization"},
		{"F6 [2,2]: 24 bits, whole bytes by total", `{"a":{"dtype":"F6_E3M2","shape":[2,2],"data_offsets":[0,3]}}`, 3, ""},
		{"F4 [1,3]: 12 bits", `{"a":{"dtype":"F4","shape":[1,3],"data_offsets":[0,2]}}`, 2, "MisalignedSlice"},
		{"offset error before size error", `{"a":{"dtype":"U8","shape":[3],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}}`, 5, "TensorInvalidInfo"},
		{"offsets checked per tensor in order", `{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}}`, 5, "InvalidOffset"},
	} {
		b := mk(c.hdr, make([]byte, c.data))
		_, err := Decode(b)
		got := ""
		if err != nil {
			got = kindOf(err)
		}
		if got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.name, got, err, c.want)
		}
		_, serr := readStream(bytes.NewReader(b))
		if (serr == nil) != (err == nil) || (err != nil && kindOf(serr) != got) {
			t.Errorf("%s: stream gives %v, Decode %v", c.name, serr, err)
		}
	}

	h, err := Decode(mk(`{"__metadata__":{"k":"1","j":"x","k":"2"}}`, nil))
	if err != nil || len(h.Metadata) != 2 || h.Metadata[0] != (MetadataEntry{"k", "2"}) {
		t.Errorf("repeated metadata key: %#v, %v", h, err)
	}
	h, err = Decode(mk(`{"\u005f_metadata__":{"k":"v"}}`, nil))
	if err != nil || len(h.Tensors) != 0 || h.Metadata[0].Value != "v" {
		t.Errorf("escaped metadata key: %#v, %v", h, err)
	}
}

// TestHugeHeaderLengthBoundedAlloc: a prefix claiming the maximum header on a short
// stream fails without allocating the claimed size.
func TestHugeHeaderLengthBoundedAlloc(t *testing.T) {
	b := make([]byte, 8, 18)
	binary.LittleEndian.PutUint64(b, MaxHeaderSize)
	b = append(b, `{"a":1}   `...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadHeader(bytes.NewReader(b))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, InvalidHeaderLength) {
		t.Fatalf("got %v, want InvalidHeaderLength", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 4<<20 {
		t.Errorf("allocated %d bytes for a 10-byte stream", d)
	}
}

// TestStreamErrors: a stream that ends inside a tensor, or goes on after the last one.
func TestStreamErrors(t *testing.T) {
	hdr := `{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}`
	full := mk(hdr, []byte{1, 2, 3, 4, 5, 6})

	r, err := NewReader(bytes.NewReader(full[:len(full)-1]))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	// Skip a without reading it; b then comes up short.
	ti, tr, err := r.Next()
	if err != nil || ti.Name != "b" {
		t.Fatalf("Next: %v %v", ti, err)
	}
	_, err = io.ReadAll(tr)
	var e *Error
	if !errors.As(err, &e) || e.Kind != MetadataIncompleteBuffer || e.Tensor != "b" {
		t.Errorf("short stream: %v", err)
	}

	r, err = NewReader(bytes.NewReader(append(full, 0)))
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	err = r.ReadAll(func(_ TensorInfo, tr io.Reader) error {
		d, err := io.ReadAll(tr)
		got = append(got, d...)
		return err
	})
	if !errors.Is(err, MetadataIncompleteBuffer) {
		t.Errorf("trailing byte: %v", err)
	}
	if !bytes.Equal(got, []byte{1, 2, 3, 4, 5, 6}) {
		t.Errorf("data %v", got)
	}
	if _, _, err2 := r.Next(); !errors.Is(err2, MetadataIncompleteBuffer) {
		t.Errorf("Next after failure: %v", err2)
	}
}

// genReader produces a file of n F32 tensors of size bytes each without holding it.
type genReader struct {
	hdr  []byte
	left int64
	pos  int64
}

func newGen(t testing.TB, n int, size int64) (*genReader, *Header) {
	var specs []TensorSpec
	for i := 0; i < n; i++ {
		specs = append(specs, TensorSpec{Name: "t" + string(rune('a'+i)), DType: 2 /* F32 */, Shape: []int64{size / 4}})
	}
	h, err := Layout(Metadata{{"format", "pt"}}, specs)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := h.MarshalHeader()
	if err != nil {
		t.Fatal(err)
	}
	return &genReader{hdr: hb, left: h.DataSize}, h
}

func (g *genReader) Read(p []byte) (int, error) {
	if len(g.hdr) > 0 {
		n := copy(p, g.hdr)
		g.hdr = g.hdr[n:]
		return n, nil
	}
	if g.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	for i := range p {
		p[i] = byte(g.pos + int64(i))
	}
	g.pos += int64(len(p))
	g.left -= int64(len(p))
	return len(p), nil
}

// TestStreamBoundedMemory streams 256 MiB of tensors through the reader and the writer
// and checks that the heap does not grow with the data.
func TestStreamBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	g, h := newGen(t, 4, 64<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := NewReader(g)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriterHeader(io.Discard, r.Header())
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	if err := r.ReadAll(func(_ TensorInfo, tr io.Reader) error {
		_, err := io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{tr}, buf)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
		t.Errorf("streaming %d bytes allocated %d bytes", h.DataSize, d)
	}
}

func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Open(dir); err == nil {
		t.Error("directory accepted")
	}
	p := filepath.Join(dir, "x.safetensors")
	if err := os.WriteFile(p, mk(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, []byte{1, 2}), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Data("nope")
	var e *Error
	if !errors.As(err, &e) || e.Kind != TensorNotFound || e.File != p || e.Tensor != "nope" {
		t.Errorf("missing tensor: %v", err)
	}
	s, err := f.Section("a")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := io.ReadAll(s); !bytes.Equal(d, []byte{1, 2}) {
		t.Errorf("section %v", d)
	}
	if !strings.Contains(err2str(Open(filepath.Join(testdata, "cases", "hole.safetensors"))), "hole.safetensors") {
		t.Error("error does not name the file")
	}
}

func err2str(_ *File, err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestOverLimit: headers the crate accepts but that pass one of apr's caps are refused
// as OverLimit (docs/SAFETENSORS.md, "Files the crate accepts and apr refuses"), from a
// stream and from a file; one entry fewer is accepted.
func TestOverLimit(t *testing.T) {
	tensors := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"t%d":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`, i)
		}
		return b.String() + "}"
	}
	keys := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"__metadata__":{`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%d":""`, i)
		}
		return b.String() + "}}"
	}
	value := func(n int) string { return `{"__metadata__":{"k":"` + strings.Repeat("v", n) + `"}}` }
	shape := func(n int) string {
		return `{"w":{"dtype":"U8","shape":[` + strings.TrimSuffix(strings.Repeat("1,", n), ",") + `],"data_offsets":[0,1]}}`
	}
	for _, c := range []struct {
		name      string
		over, cap string
		data      int
		msg       string
	}{
		{"tensors", tensors(MaxTensors + 1), tensors(MaxTensors), 0, "MaxTensors"},
		{"metadata keys", keys(MaxMetadataEntries + 1), keys(MaxMetadataEntries), 0, "MaxMetadataEntries"},
		// `"k":"` and `"}` frame the value: 7 bytes of JSON besides it.
		{"metadata bytes", value(MaxMetadataSize - 6), value(MaxMetadataSize - 7), 0, "MaxMetadataSize"},
		{"dimensions", shape(MaxDims + 1), shape(MaxDims), 1, "MaxDims"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(mk(c.over, make([]byte, c.data))))
			if !errors.Is(err, OverLimit) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("stream: %v, want OverLimit naming %s", err, c.msg)
			}
			if _, err := Decode(mk(c.over, make([]byte, c.data))); !errors.Is(err, OverLimit) {
				t.Errorf("Decode: %v, want OverLimit", err)
			}
			if _, err := Decode(mk(c.cap, make([]byte, c.data))); err != nil {
				t.Errorf("at the cap: %v", err)
			}
		})
	}
}

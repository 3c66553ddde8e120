package container

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

func infosOf(tensors []testTensor) []TensorInfo {
	out := make([]TensorInfo, len(tensors))
	for i, t := range tensors {
		out[i] = t.info
	}
	return out
}

// buildTable is build with the tensor table of the tensors written.
func buildTable(t testing.TB, tensors []testTensor, opts ...Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Type: modeltype.LinearRegression, Metadata: sampleMeta(), Table: infosOf(tensors)}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tensors {
		if err := w.WriteTensorBytes(tt.info, tt.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestTableRoundTrip(t *testing.T) {
	tensors := sampleTensors()
	want := infosOf(tensors)
	for name, opts := range codecOptions {
		t.Run(name, func(t *testing.T) {
			b := buildTable(t, tensors, opts...)
			if b[5] != 1 {
				t.Fatalf("a file with a table is version 2.%d, want 2.1", b[5])
			}
			h, got, entries, err := readStream(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.Minor != 1 || !sameTable(h.Table, want) {
				t.Fatalf("streaming reader: version 2.%d, table %v, want %v", h.Minor, h.Table, want)
			}
			for _, tt := range tensors {
				if !bytes.Equal(got[tt.info.Name], tt.data) {
					t.Errorf("tensor %q differs", tt.info.Name)
				}
			}
			f, err := NewFile(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if !sameTable(f.Header().Table, want) {
				t.Fatalf("random access: table %v, want %v", f.Header().Table, want)
			}
			if err := f.Verify(); err != nil {
				t.Fatal(err)
			}
			// The records follow the table: the file without it, shifted.
			plain := build(t, tensors, opts...)
			shift := int64(len(b) - len(plain))
			pe := f.Entries()
			if shift <= 0 || len(entries) != len(pe) {
				t.Fatalf("file with a table is %d bytes longer", shift)
			}
			for i := range entries {
				if entries[i].RecordOffset != pe[i].RecordOffset || entries[i].CRC != pe[i].CRC {
					t.Errorf("tensor %q: readers disagree", entries[i].Name)
				}
			}
		})
	}
}

func sameTable(a, b []TensorInfo) bool {
	return slices.EqualFunc(a, b, func(x, y TensorInfo) bool {
		return x.Name == y.Name && x.DType == y.DType && slices.Equal(x.Shape, y.Shape)
	})
}

// TestNoTableKeepsVersion0: a file without a table is written as before, version 2.0
// with bytes 24..31 zero, so readers of 2.0 still read it.
func TestNoTableKeepsVersion0(t *testing.T) {
	b := build(t, sampleTensors())
	if b[5] != 0 || !bytes.Equal(b[24:32], make([]byte, 8)) {
		t.Fatalf("version 2.%d, bytes 24..31 % x", b[5], b[24:32])
	}
	h, _, _, err := readStream(b)
	if err != nil || h.Table != nil {
		t.Fatalf("table %v, err %v", h.Table, err)
	}
	empty := buildTable(t, nil)
	h, _, _, err = readStream(empty)
	if err != nil || h.Table == nil || len(h.Table) != 0 {
		t.Fatalf("an empty table must read as empty, not absent: %v, %v", h.Table, err)
	}
}

func TestWriterHoldsToTable(t *testing.T) {
	tensors := sampleTensors()[:2]
	table := infosOf(tensors)
	newW := func(table []TensorInfo) *Writer {
		w, err := NewWriter(io.Discard, Header{Type: modeltype.Custom, Table: table})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := newW(table)
	other := tensors[1]
	if err := w.WriteTensorBytes(other.info, other.data); err == nil || !strings.Contains(err.Error(), "tensor table says \"layer.0.weight\"") {
		t.Errorf("tensor out of table order: %v", err)
	}
	w = newW(table)
	wrongShape := TensorInfo{Name: tensors[0].info.Name, DType: dtype.F32, Shape: []int64{300, 64}}
	if err := w.WriteTensorBytes(wrongShape, tensors[0].data); err == nil {
		t.Error("a shape other than the table's was accepted")
	}
	w = newW(table)
	if err := w.WriteTensorBytes(tensors[0].info, tensors[0].data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), `"layer.0.bias"`) {
		t.Errorf("Close with a tensor of the table missing: %v", err)
	}
	w = newW(table[:1])
	w.WriteTensorBytes(tensors[0].info, tensors[0].data)
	if err := w.WriteTensorBytes(tensors[1].info, tensors[1].data); err == nil || !strings.Contains(err.Error(), "lists 1 tensors") {
		t.Errorf("a tensor beyond the table: %v", err)
	}
	for name, bad := range map[string][]TensorInfo{
		"duplicate": {table[0], table[0]},
		"no name":   {{DType: dtype.F32, Shape: []int64{1}}},
		"bad dtype": {{Name: "x", DType: dtype.DType(0x7777), Shape: []int64{1}}},
		"overflow":  {{Name: "x", DType: dtype.F64, Shape: []int64{1 << 40, 1 << 40}}},
	} {
		if _, err := NewWriter(io.Discard, Header{Type: modeltype.Custom, Table: bad}); err == nil {
			t.Errorf("%s: table accepted", name)
		}
	}
}

// withTable replaces the table of the 2.1 file b by table, with every CRC made right
// again (table, header, file), so only the readers' comparison can catch the change.
func withTable(t *testing.T, b []byte, table []TensorInfo) []byte {
	t.Helper()
	h, err := decodeHeader(b[:HeaderSize])
	if err != nil {
		t.Fatal(err)
	}
	start := h.tableStart()
	old := alignUp(start+int64(h.TableLen)) - start
	enc := encodeTable(table)
	padded := make([]byte, alignUp(int64(len(enc))))
	copy(padded, enc)
	c := append([]byte(nil), b[:start]...)
	c = append(c, padded...)
	rest := b[start+old:]
	h.TableLen, h.TableCRC = uint32(len(enc)), crc32.ChecksumIEEE(enc)
	copy(c, h.encode())
	if len(padded) != int(old) {
		t.Fatalf("the edited table is %d bytes, the original %d: offsets would move", len(padded), old)
	}
	c = append(c, rest...)
	foot := len(c) - FooterSize
	crc := crc32.Update(crc32.ChecksumIEEE(c[:foot]), crc32.IEEETable, c[foot:foot+52])
	le.PutUint32(c[foot+52:], crc)
	return c
}

func TestTableDisagreesWithData(t *testing.T) {
	tensors := sampleTensors()
	b := buildTable(t, tensors)
	if _, _, _, err := readStream(withTable(t, b, infosOf(tensors))); err != nil {
		t.Fatalf("rewriting the same table broke the file: %v", err)
	}
	shape := infosOf(tensors)
	shape[1].Shape = []int64{32, 2}
	renamed := infosOf(tensors)
	renamed[2].Name = "scalax" // same length, so the layout does not move
	retyped := infosOf(tensors)
	retyped[0].DType = dtype.I32
	swapped := infosOf(tensors)
	swapped[3], swapped[4] = swapped[4], swapped[3]
	for name, c := range map[string]struct {
		table  []TensorInfo
		tensor string
	}{
		"shape": {shape, "layer.0.bias"},
		"name":  {renamed, "scalar"},
		"dtype": {retyped, "layer.0.weight"},
		"order": {swapped, "empty"},
	} {
		t.Run(name, func(t *testing.T) {
			e := withTable(t, b, c.table)
			_, _, _, err := readStream(e)
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Tensor != c.tensor || !strings.Contains(err.Error(), "tensor table") {
				t.Errorf("streaming reader: got %v, want a format error naming %q and the table", err, c.tensor)
			}
			_, err = NewFile(bytes.NewReader(e), int64(len(e)))
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), "tensor table") {
				t.Errorf("random access: got %v, want a format error naming the table", err)
			}
		})
	}
	// A table that lists a tensor the file lacks, and one that lacks a tensor of the
	// file: written by a writer whose check is taken out after its table went out.
	for name, c := range map[string]struct{ listed, written int }{"missing": {5, 4}, "extra": {4, 5}} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, Header{Type: modeltype.LinearRegression, Metadata: sampleMeta(), Table: infosOf(tensors[:c.listed])})
		if err != nil {
			t.Fatal(err)
		}
		w.table = nil
		for _, tt := range tensors[:c.written] {
			if err := w.WriteTensorBytes(tt.info, tt.data); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		e := buf.Bytes()
		_, _, _, err = readStream(e)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Tensor != "mask" || !strings.Contains(err.Error(), "tensor table lists") {
			t.Errorf("%s: streaming reader: got %v, want a format error naming \"mask\"", name, err)
		}
		if _, err = NewFile(bytes.NewReader(e), int64(len(e))); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "tensor table") {
			t.Errorf("%s: random access: got %v", name, err)
		}
	}
}

// TestTableVersionRules: a table in a file that says 2.0 is reserved bytes set; a
// minor version above 1 is refused as a version.
func TestTableVersionRules(t *testing.T) {
	b := buildTable(t, sampleTensors())
	v0 := append([]byte(nil), b...)
	v0[5] = 0
	le.PutUint32(v0[60:], crc32.ChecksumIEEE(v0[:60]))
	if _, err := NewReader(bytes.NewReader(v0)); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "reserved header byte") {
		t.Errorf("2.0 with a table: %v", err)
	}
	v2 := append([]byte(nil), b...)
	v2[5] = 2
	var ve *VersionError
	if _, err := NewReader(bytes.NewReader(v2)); !errors.As(err, &ve) || ve.Minor != 2 || ve.SupportedMinorTo != 1 {
		t.Errorf("2.2: %v", err)
	}
	big := append([]byte(nil), b...)
	le.PutUint32(big[24:], MaxTable+1)
	le.PutUint32(big[60:], crc32.ChecksumIEEE(big[:60]))
	if _, err := NewReader(bytes.NewReader(big)); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "tensor table length") {
		t.Errorf("table over the cap: %v", err)
	}
}

func TestTableEveryTruncationAndBitFlipFails(t *testing.T) {
	for _, name := range []string{"none", "zstd"} {
		b := buildTable(t, sampleTensors()[1:], codecOptions[name]...)
		for n := 0; n < len(b); n++ {
			mustFail(t, name+" table truncated", b[:n])
		}
		if testing.Short() {
			continue
		}
		c := make([]byte, len(b))
		for i := 0; i < len(b)*8; i++ {
			copy(c, b)
			c[i/8] ^= 1 << (i % 8)
			mustFail(t, name+" table bit flip", c)
		}
	}
}

// FuzzTable feeds arbitrary bytes to the table decoder: an accepted table re-encodes
// to the same bytes (the encoding is canonical).
func FuzzTable(f *testing.F) {
	f.Add(encodeTable(infosOf(sampleTensors())))
	f.Add(encodeTable(nil))
	f.Add([]byte("APRL\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		table, err := decodeTable(b, 0)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if again := encodeTable(table); !bytes.Equal(again, b) {
			t.Fatalf("accepted table re-encodes to other bytes")
		}
		if err := checkTable(table); err != nil {
			t.Fatalf("decoded table fails the writer's check: %v", err)
		}
	})
}

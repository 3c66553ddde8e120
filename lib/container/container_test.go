package container

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

type testTensor struct {
	info TensorInfo
	data []byte
}

// weights returns n float32 values that look like trained weights (normal, small).
func weights(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(r.NormFloat64()*0.02)))
	}
	return b
}

func sampleTensors() []testTensor {
	return []testTensor{
		{TensorInfo{"layer.0.weight", dtype.F32, []int64{64, 300}}, weights(1, 64*300)},
		{TensorInfo{"layer.0.bias", dtype.F32, []int64{64}}, weights(2, 64)},
		{TensorInfo{"scalar", dtype.F64, nil}, make([]byte, 8)},
		{TensorInfo{"empty", dtype.I32, []int64{0, 5}}, nil},
		{TensorInfo{"mask", dtype.Bool, []int64{7}}, []byte{1, 0, 1, 1, 0, 0, 1}},
	}
}

func sampleMeta() Metadata {
	return Metadata{
		Name: "test-model", Description: "a model for tests", CreatedAt: "2026-01-02T03:04:05Z", Producer: "apr test",
		Hyperparameters: map[string]any{"lr": 0.01, "epochs": int64(3)},
		Metrics:         map[string]any{"r2": 0.5},
		Custom:          map[string]any{"nested": map[string]any{"b": []any{int64(1), "x"}, "a": true}},
		Extra:           map[string]any{"future_key": "kept"},
	}
}

func build(t testing.TB, tensors []testTensor, opts ...Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Type: modeltype.LinearRegression, Metadata: sampleMeta()}, opts...)
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

var codecOptions = map[string][]Option{
	"none":             nil,
	"zstd":             {WithCompression(CompressZstd), WithChunkSize(MinChunk)},
	"zstd-max-shuffle": {WithCompression(CompressZstdMax), WithShuffle(true), WithChunkSize(MinChunk)},
	"lz4":              {WithCompression(CompressLZ4), WithChunkSize(MinChunk), WithWorkers(3)},
	"lz4-shuffle":      {WithCompression(CompressLZ4), WithShuffle(true)},
}

// readStream reads every tensor through the streaming Reader.
func readStream(b []byte) (*FileHeader, map[string][]byte, []Entry, error) {
	r, err := NewReader(bytes.NewReader(b), WithReadWorkers(2))
	if err != nil {
		return nil, nil, nil, err
	}
	defer r.Close()
	got := map[string][]byte{}
	for {
		t, err := r.Next()
		if err == io.EOF {
			h := r.Header()
			return &h, got, r.Entries(), nil
		}
		if err != nil {
			return nil, nil, nil, err
		}
		data, err := io.ReadAll(t)
		if err != nil {
			return nil, nil, nil, err
		}
		got[t.Name] = data
	}
}

// readRandom reads every tensor through the random-access File.
func readRandom(b []byte) (map[string][]byte, error) {
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	got := map[string][]byte{}
	for _, e := range f.Entries() {
		data, err := f.TensorBytes(e.Name)
		if err != nil {
			return nil, err
		}
		got[e.Name] = data
	}
	return got, f.Verify()
}

func TestRoundTrip(t *testing.T) {
	tensors := sampleTensors()
	for name, opts := range codecOptions {
		t.Run(name, func(t *testing.T) {
			b := build(t, tensors, opts...)
			if len(b)%Align != 0 {
				t.Fatalf("file size %d not aligned", len(b))
			}
			h, got, entries, err := readStream(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.Type != modeltype.LinearRegression || h.Metadata.Name != "test-model" || h.Metadata.Extra["future_key"] != "kept" {
				t.Fatalf("header/metadata not kept: %+v %+v", h, h.Metadata)
			}
			if len(entries) != len(tensors) {
				t.Fatalf("%d entries, want %d", len(entries), len(tensors))
			}
			random, err := readRandom(b)
			if err != nil {
				t.Fatal(err)
			}
			for i, tt := range tensors {
				if !bytes.Equal(got[tt.info.Name], tt.data) || !bytes.Equal(random[tt.info.Name], tt.data) {
					t.Errorf("tensor %q differs", tt.info.Name)
				}
				if entries[i].Name != tt.info.Name {
					t.Errorf("entry %d is %q, want %q", i, entries[i].Name, tt.info.Name)
				}
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	for name, opts := range codecOptions {
		a := build(t, sampleTensors(), opts...)
		b := build(t, sampleTensors(), append(opts, WithWorkers(1))...)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: output depends on run or worker count", name)
		}
	}
}

func TestCompressionShrinksWeights(t *testing.T) {
	// Random normal weights barely compress byte-wise; grouping their bytes lets zstd
	// entropy-code the sign/exponent bytes. Without shuffle, incompressible chunks are
	// stored raw, so a file grows by no more than the frame headers.
	plain := len(build(t, sampleTensors()))
	if c := len(build(t, sampleTensors(), codecOptions["zstd-max-shuffle"]...)); c >= plain*95/100 {
		t.Errorf("zstd-max with shuffle: %d bytes, want < 95%% of plain %d", c, plain)
	}
	for _, name := range []string{"zstd", "lz4", "lz4-shuffle"} {
		if c := len(build(t, sampleTensors(), codecOptions[name]...)); c > plain+8*32+Align {
			t.Errorf("%s: %d bytes, more than framing over plain %d", name, c, plain)
		}
	}
}

func TestMmapInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.apr")
	if err := os.WriteFile(path, build(t, sampleTensors()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := f.TensorBytes("layer.0.weight")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, sampleTensors()[0].data) {
		t.Fatal("tensor differs")
	}
	if f.Mapped() {
		e, _ := f.Entry("layer.0.weight")
		if &b[0] != &f.mapped[e.DataOffset] {
			t.Error("plain tensor of a mapped file was copied")
		}
		if e.DataOffset%Align != 0 {
			t.Error("data not aligned")
		}
	}
}

// mustFail asserts that both readers refuse b with a typed error and never panic.
func mustFail(t *testing.T, what string, b []byte) {
	t.Helper()
	if _, _, _, err := readStream(b); err == nil {
		t.Fatalf("%s: streaming reader accepted the file", what)
	} else if !typed(err) {
		t.Fatalf("%s: streaming reader error is untyped: %v", what, err)
	}
	if _, err := readRandom(b); err == nil {
		t.Fatalf("%s: random-access reader accepted the file", what)
	} else if !typed(err) {
		t.Fatalf("%s: random-access reader error is untyped: %v", what, err)
	}
}

func typed(err error) bool {
	return errors.Is(err, ErrFormat) || errors.Is(err, ErrChecksum) || errors.Is(err, ErrVersion)
}

func TestEveryTruncationFails(t *testing.T) {
	for _, name := range []string{"none", "zstd"} {
		b := build(t, sampleTensors()[1:], codecOptions[name]...)
		for n := 0; n < len(b); n++ {
			mustFail(t, name+" truncated", b[:n])
		}
	}
}

func TestEveryBitFlipFails(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive")
	}
	for _, name := range []string{"none", "lz4-shuffle"} {
		b := build(t, sampleTensors()[1:], codecOptions[name]...)
		c := make([]byte, len(b))
		for i := 0; i < len(b)*8; i++ {
			copy(c, b)
			c[i/8] ^= 1 << (i % 8)
			mustFail(t, name+" bit flip", c)
		}
	}
}

func TestAppendedBytesFail(t *testing.T) {
	b := build(t, sampleTensors())
	for _, extra := range [][]byte{{0}, make([]byte, 64), b[:128]} {
		mustFail(t, "appended", append(append([]byte(nil), b...), extra...))
	}
}

func TestSwappedRecordsFail(t *testing.T) {
	ts := []testTensor{
		{TensorInfo{"a", dtype.F32, []int64{16}}, weights(3, 16)},
		{TensorInfo{"b", dtype.F32, []int64{16}}, weights(4, 16)},
	}
	b := build(t, ts)
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	e := f.Entries()
	recLen := e[1].RecordOffset - e[0].RecordOffset
	c := append([]byte(nil), b...)
	copy(c[e[0].RecordOffset:], b[e[1].RecordOffset:e[1].RecordOffset+recLen])
	copy(c[e[1].RecordOffset:], b[e[0].RecordOffset:e[0].RecordOffset+recLen])
	mustFail(t, "swapped", c)
}

func TestVersionAndMagic(t *testing.T) {
	b := build(t, sampleTensors())
	v1 := append([]byte(nil), b...)
	v1[4] = 1
	if _, err := NewFile(bytes.NewReader(v1), int64(len(v1))); !errors.Is(err, ErrVersion) {
		t.Errorf("major 1: got %v, want a version error", err)
	}
	var ve *VersionError
	v3 := append([]byte(nil), b...)
	v3[4] = 3
	if _, err := NewReader(bytes.NewReader(v3)); !errors.As(err, &ve) || ve.Major != 3 {
		t.Errorf("major 3: got %v", err)
	}
	bad := append([]byte(nil), b...)
	copy(bad, "GGUF")
	if _, err := NewReader(bytes.NewReader(bad)); !errors.Is(err, ErrFormat) {
		t.Errorf("bad magic: got %v", err)
	}
}

func TestChecksumErrorCarriesValues(t *testing.T) {
	b := build(t, sampleTensors())
	f, _ := NewFile(bytes.NewReader(b), int64(len(b)))
	e, _ := f.Entry("layer.0.weight")
	b[e.DataOffset+5] ^= 0x10
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err) // index is intact: opening must work
	}
	_, err = f.TensorBytes("layer.0.weight")
	var ce *ChecksumError
	if !errors.As(err, &ce) || ce.Tensor != "layer.0.weight" || ce.Expected == ce.Actual || ce.Expected != e.CRC {
		t.Fatalf("got %v, want a checksum error naming the tensor with expected and actual", err)
	}
}

func TestWriterRefusesBadInput(t *testing.T) {
	w, err := NewWriter(io.Discard, Header{Type: modeltype.Custom})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		info TensorInfo
		data []byte
	}{
		{TensorInfo{"", dtype.F32, []int64{1}}, make([]byte, 4)},
		{TensorInfo{"x", dtype.DType(999), []int64{1}}, make([]byte, 4)},
		{TensorInfo{"x", dtype.F32, []int64{-1}}, nil},
		{TensorInfo{"x", dtype.F32, []int64{3}}, make([]byte, 4)},
		{TensorInfo{"q", dtype.Q4_0, []int64{32}}, make([]byte, 18)}, // not declared quantized
		{TensorInfo{"x", dtype.F32, []int64{1 << 40, 1 << 40}}, nil},
	}
	for _, c := range cases {
		if err := w.WriteTensorBytes(c.info, c.data); err == nil {
			t.Errorf("%+v accepted", c.info)
		}
	}
	if err := w.WriteTensor(TensorInfo{"short", dtype.F32, []int64{4}}, bytes.NewReader(make([]byte, 3))); err == nil {
		t.Error("short data accepted")
	}
	if _, err := NewWriter(io.Discard, Header{Type: modeltype.Type(0x77)}); err == nil {
		t.Error("unknown model type accepted")
	}
}

func TestBlocks(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Type: modeltype.Custom, Flags: FlagSigned})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlock(Block{Kind: BlockLicense, Payload: []byte("x")}); err == nil {
		t.Error("license block accepted without the licensed flag")
	}
	if err := w.AddBlock(Block{Kind: BlockSignature, Payload: []byte("sig")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if bl := f.Blocks(); len(bl) != 1 || string(bl[0].Payload) != "sig" {
		t.Fatalf("blocks %+v", bl)
	}
	if err := f.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestMetadataDeterministicAndHostile(t *testing.T) {
	m := sampleMeta()
	a, _ := m.Encode()
	b, _ := m.Encode()
	if !bytes.Equal(a, b) {
		t.Fatal("metadata encoding not deterministic")
	}
	deep := bytes.Repeat([]byte{0x91}, 10000) // nested 1-element arrays
	if _, err := DecodeMetadata(append([]byte{0x81, 0xa1, 'k'}, deep...)); err == nil {
		t.Error("deep nesting accepted")
	}
	if _, err := DecodeMetadata([]byte{0xdf, 0xff, 0xff, 0xff, 0xff}); err == nil {
		t.Error("huge map count accepted")
	}
}

func TestSourceDateEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	s, err := CreatedAt()
	if err != nil || s != "2023-11-14T22:13:20Z" {
		t.Fatalf("got %q, %v", s, err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "soon")
	if _, err := CreatedAt(); err == nil {
		t.Fatal("bad SOURCE_DATE_EPOCH accepted")
	}
}

// TestWrongKindOfFile: a file of another format apr reads names the program for it.
func TestWrongKindOfFile(t *testing.T) {
	st := append(binary.LittleEndian.AppendUint64(nil, 60), []byte(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}    `)...)
	for want, b := range map[string][]byte{
		"apr-gguf import": append([]byte("GGUF\x03\x00\x00\x00"), make([]byte, 60)...),
		"apr-st import":   append(st, make([]byte, 8)...),
		"apr-encode":      append([]byte("\x93NUMPY\x01\x00"), make([]byte, 60)...),
		"zip":             append([]byte("PK\x03\x04"), make([]byte, 64)...),
	} {
		_, err := NewReader(bytes.NewReader(b))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// TestMetadataDuplicateKeys: a map with a key twice has two meanings (a reader keeping
// the first value and one keeping the last disagree), so it is refused, at the top and
// nested, whatever the key's encoding.
func TestMetadataDuplicateKeys(t *testing.T) {
	for name, b := range map[string][]byte{
		"top level":         {0x82, 0xa4, 'n', 'a', 'm', 'e', 0xa1, 'a', 0xa4, 'n', 'a', 'm', 'e', 0xa1, 'b'},
		"fixstr and str8":   {0x82, 0xa4, 'n', 'a', 'm', 'e', 0xa1, 'a', 0xd9, 4, 'n', 'a', 'm', 'e', 0xa1, 'b'},
		"nested":            {0x81, 0xa6, 'c', 'u', 's', 't', 'o', 'm', 0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x02},
		"integer keys":      {0x81, 0xa1, 'm', 0x82, 0x01, 0xc0, 0xcc, 0x01, 0xc0},
		"in a list of maps": {0x81, 0xa1, 'l', 0x91, 0x82, 0xa1, 'x', 0xc3, 0xa1, 'x', 0xc2},
	} {
		if _, err := DecodeMetadata(b); err == nil || !strings.Contains(err.Error(), "duplicate map key") {
			t.Errorf("%s: %v", name, err)
		}
	}
	ok := []byte{0x82, 0xa1, 'a', 0x81, 0xa1, 'k', 0x01, 0xa1, 'b', 0x81, 0xa1, 'k', 0x02} // same key in two maps
	if _, err := DecodeMetadata(ok); err != nil {
		t.Errorf("one key in two sibling maps: %v", err)
	}
}

// TestMetadataKeepsFloat32: a float32 (a GGUF key's f32) decodes as float32 and
// re-encodes to the same bytes, so re-encoding or sealing a file leaves its metadata as
// it was; integers decode as int64 (uint64 when encoded unsigned).
func TestMetadataKeepsFloat32(t *testing.T) {
	md := Metadata{Name: "m", Extra: map[string]any{"f32": float32(1e-5), "f64": 0.1, "i": int64(-3), "u": uint64(1 << 63),
		"list": []any{float32(10000), int64(7)}}}
	b, err := md.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeMetadata(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := back.Extra["f32"].(float32); !ok {
		t.Errorf("f32 decodes as %T", back.Extra["f32"])
	}
	if _, ok := back.Extra["i"].(int64); !ok {
		t.Errorf("an integer decodes as %T", back.Extra["i"])
	}
	again, err := back.Encode()
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("re-encoding changed the metadata: %d -> %d bytes, %v", len(b), len(again), err)
	}
}

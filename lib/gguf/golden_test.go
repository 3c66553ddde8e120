package gguf

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const testdataDir = "../../testdata/gguf"

// fixture holds the facts of testdata/gguf/README.md's summary table.
type fixture struct {
	name       string
	bytes      int64
	sha256     string
	kvs        int
	tensors    int
	alignment  int64
	infoEnd    int64
	dataOffset int64
}

var fixtures = []fixture{
	{"small.f32.gguf", 198208, "43e4531e60e88809efb54b83bd951c48ac257c0a46a5eab4b80243e6b644d5d9", 9, 3, 32, 565, 576},
	{"small.Q8_0.gguf", 53888, "afad83cc06920fdf72b04e84a4cede958d45c94dd272d7b30f4510c3e06cce1d", 10, 3, 32, 609, 640},
	{"small.Q4_0.gguf", 29312, "8633c3b9a8626b803d181d5d37afe2a0be65c9d92fea441a2343593baf1c7276", 10, 3, 32, 609, 640},
	{"small.Q4_1.gguf", 32384, "22aa06ba9ab1fd9bc689abb20b66004ee160903c8440917a3ca233a1b7c8127c", 10, 3, 32, 609, 640},
	{"small.Q5_0.gguf", 35456, "1232e05a22c1138c21053bdec337c7de9cbbe1474e0a691461d568a289ed25bd", 10, 3, 32, 609, 640},
	{"small.Q5_1.gguf", 38528, "f183178966856d58f296ca70967fd1e942415ee5beaec446f072f3fc55db6060", 10, 3, 32, 609, 640},
	{"small.Q4_K.gguf", 29312, "7713dc76f71857dd69e4d4a9d8297ed4db548d96538c90434ab26790d8474fd2", 10, 3, 32, 609, 640},
	{"small.Q6_K.gguf", 41984, "c3be86918576e3433351121225d5f309fb418809616015791a62da1362ea3491", 10, 3, 32, 609, 640},
	{"small.F16.gguf", 99968, "ab7378441ef5ea390f1904b057c2c6234c99927950ebb27c17df072f41fc5c44", 10, 3, 32, 609, 640},
	{"small.BF16.gguf", 99968, "892660c158b6d11470d2c5425937e94a39db8aed9205649883504bc812fbfa24", 10, 3, 32, 609, 640},
	{"allkv.gguf", 2752, "213dbce3ed2ac3d0c5d275687a2377d7a7e96bdb6b4e4634ec70a7933623002d", 32, 10, 64, 1869, 1920},
	{"tiny-llama.f32.gguf", 548512, "4014bb3b05f9337a385034570957f84c5ed7e9a07e776865d91d2b3e31ac161b", 23, 21, 32, 10648, 10656},
	{"tiny-llama.Q8_0.gguf", 154528, "2c2c1ab39b0a713a54b7c3364d1bf0fde5ab53b0b858bf919872186ccb18d22c", 24, 21, 32, 10692, 10720},
	{"tiny-llama.Q4_0.gguf", 100512, "25060b1328beed4fdc660091d2e5c25b8bfadf9d05b971b4dcdba81480863342", 24, 21, 32, 10692, 10720},
	{"tiny-llama.Q4_0.pure.gguf", 87456, "cd55c558bc495475510c3470308a8c571bc6f410b8aee92d5d1ff15f03414685", 24, 21, 32, 10692, 10720},
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFixturesCovered makes sure every .gguf in testdata is in the table above.
func TestFixturesCovered(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testdataDir, "*.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	var want []string
	for _, f := range fixtures {
		want = append(want, f.name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("testdata has %v, the test table %v", names, want)
	}
}

// headersEqual compares two headers exactly (values by type and bits).
func headersEqual(a, b *Header) error {
	if a.Version != b.Version || a.Alignment != b.Alignment || a.InfoEnd != b.InfoEnd || a.DataOffset != b.DataOffset {
		return fmt.Errorf("version/alignment/infoEnd/dataOffset %d/%d/%d/%d vs %d/%d/%d/%d",
			a.Version, a.Alignment, a.InfoEnd, a.DataOffset, b.Version, b.Alignment, b.InfoEnd, b.DataOffset)
	}
	if len(a.KVs) != len(b.KVs) || len(a.Tensors) != len(b.Tensors) {
		return fmt.Errorf("%d KVs/%d tensors vs %d/%d", len(a.KVs), len(a.Tensors), len(b.KVs), len(b.Tensors))
	}
	for i := range a.KVs {
		if a.KVs[i].Key != b.KVs[i].Key || !a.KVs[i].Value.Equal(b.KVs[i].Value) {
			return fmt.Errorf("KV %d: %q=%v vs %q=%v", i, a.KVs[i].Key, a.KVs[i].Value, b.KVs[i].Key, b.KVs[i].Value)
		}
	}
	for i := range a.Tensors {
		x, y := a.Tensors[i], b.Tensors[i]
		if x.Name != y.Name || x.Type != y.Type || x.Offset != y.Offset || !slices.Equal(x.Dims, y.Dims) {
			return fmt.Errorf("tensor %d: %+v vs %+v", i, x, y)
		}
	}
	return nil
}

// writeFromFile writes f back out through the Writer, tensor by tensor.
func writeFromFile(t testing.TB, f *File) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := NewWriter(&out, &f.Header)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		data, err := f.TensorData(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteTensor(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// writeStreaming reads src as a stream (ReadHeader + DataReader) and writes it back
// through Writer.Write with io.Copy, never holding a whole tensor.
func writeStreaming(t testing.TB, src io.Reader) ([]byte, *Header) {
	t.Helper()
	br := bufio.NewReaderSize(src, 4096)
	h, err := ReadHeader(br)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	dr, err := NewDataReader(br, h)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; ; k++ {
		i, r, err := dr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i != k {
			t.Fatalf("DataReader gave tensor %d as the %dth", i, k)
		}
		if _, err := io.Copy(w, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("%d bytes left after the data section", len(rest))
	}
	return out.Bytes(), h
}

// TestGoldenRoundTrip: every fixture, read through each API and written back, is
// byte-identical to the original, and the summary-table facts hold.
func TestGoldenRoundTrip(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			orig := readFixture(t, fx.name)
			sum := sha256.Sum256(orig)
			if int64(len(orig)) != fx.bytes || hex.EncodeToString(sum[:]) != fx.sha256 {
				t.Fatalf("fixture is %d bytes sha256 %x, README says %d bytes %s", len(orig), sum, fx.bytes, fx.sha256)
			}

			// File API, memory-mapped where the platform allows.
			f, err := Open(filepath.Join(testdataDir, fx.name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Version != 3 || len(f.KVs) != fx.kvs || len(f.Tensors) != fx.tensors || f.Alignment != fx.alignment ||
				f.InfoEnd != fx.infoEnd || f.DataOffset != fx.dataOffset {
				t.Fatalf("v%d, %d KVs, %d tensors, alignment %d, infos end %d, data at %d; README: v3, %d, %d, %d, %d, %d",
					f.Version, len(f.KVs), len(f.Tensors), f.Alignment, f.InfoEnd, f.DataOffset,
					fx.kvs, fx.tensors, fx.alignment, fx.infoEnd, fx.dataOffset)
			}
			// The file ends exactly at the end of the padded data.
			if got := f.DataOffset + f.DataSize(); got != fx.bytes {
				t.Errorf("data section ends at %d, file is %d bytes", got, fx.bytes)
			}
			// Offsets are packed in info order, so Layout reproduces them.
			h2 := f.Header
			h2.Tensors = slices.Clone(f.Tensors)
			if err := h2.Layout(); err != nil {
				t.Fatal(err)
			}
			if err := headersEqual(&f.Header, &h2); err != nil {
				t.Errorf("Layout changed the header: %v", err)
			}
			if got := writeFromFile(t, f); !bytes.Equal(got, orig) {
				t.Fatalf("file API round trip differs (%d vs %d bytes), first at %d", len(got), len(orig), firstDiff(got, orig))
			}

			// File API over a plain ReaderAt.
			g, err := NewFile(bytes.NewReader(orig), int64(len(orig)))
			if err != nil {
				t.Fatal(err)
			}
			if g.Mapped() {
				t.Error("NewFile claims a mapping")
			}
			if err := headersEqual(&f.Header, &g.Header); err != nil {
				t.Fatalf("Open and NewFile disagree: %v", err)
			}
			if got := writeFromFile(t, g); !bytes.Equal(got, orig) {
				t.Fatalf("ReaderAt round trip differs, first at %d", firstDiff(got, orig))
			}

			// Streaming, through a reader that hands out a few bytes at a time.
			got, h := writeStreaming(t, &slowReader{r: bytes.NewReader(orig), n: 7})
			if err := headersEqual(&f.Header, h); err != nil {
				t.Fatalf("streaming and file headers disagree: %v", err)
			}
			if !bytes.Equal(got, orig) {
				t.Fatalf("streaming round trip differs, first at %d", firstDiff(got, orig))
			}

			// ReadHeader stops exactly at the data section.
			r := bytes.NewReader(orig)
			if _, err := ReadHeader(r); err != nil {
				t.Fatal(err)
			}
			if pos := int64(len(orig)) - int64(r.Len()); pos != fx.dataOffset {
				t.Errorf("ReadHeader consumed %d bytes, data section at %d", pos, fx.dataOffset)
			}
			enc, err := f.EncodeHeader()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, orig[:fx.dataOffset]) {
				t.Errorf("EncodeHeader differs from the file's header at %d", firstDiff(enc, orig[:fx.dataOffset]))
			}
			// The padding is zero.
			for _, b := range orig[fx.infoEnd:fx.dataOffset] {
				if b != 0 {
					t.Fatal("non-zero header padding")
				}
			}
		})
	}
}

type slowReader struct {
	r io.Reader
	n int
}

func (s *slowReader) Read(p []byte) (int, error) {
	if len(p) > s.n {
		p = p[:s.n]
	}
	return s.r.Read(p)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// kvRow and tensorRow are rows of the README's tables; value is Value.Text(-1).
type kvRow struct{ key, typ, value string }

type tensorRow struct {
	name   string
	typ    string
	code   uint32
	dims   []int64
	offset int64
	bytes  int64
}

func checkKVs(t *testing.T, h *Header, want []kvRow) {
	t.Helper()
	if len(h.KVs) != len(want) {
		t.Errorf("%d KVs, want %d", len(h.KVs), len(want))
	}
	for i := range min(len(h.KVs), len(want)) {
		kv, w := h.KVs[i], want[i]
		got := kvRow{kv.Key, kv.Value.TypeName(), kv.Value.Text(-1)}
		if w.value == "*" { // long arrays: checked separately
			got.value = "*"
		}
		if got != w {
			t.Errorf("KV %d: got %q %s %s, want %q %s %s", i, got.key, got.typ, got.value, w.key, w.typ, w.value)
		}
	}
}

func checkTensors(t *testing.T, h *Header, want []tensorRow) {
	t.Helper()
	if len(h.Tensors) != len(want) {
		t.Errorf("%d tensors, want %d", len(h.Tensors), len(want))
	}
	for i := range min(len(h.Tensors), len(want)) {
		ti, w := &h.Tensors[i], want[i]
		size, err := ti.Size()
		if err != nil {
			t.Errorf("tensor %d: %v", i, err)
		}
		if ti.Name != w.name || ti.Type.String() != w.typ || uint32(ti.Type) != w.code ||
			!slices.Equal(ti.Dims, w.dims) || ti.Offset != w.offset || size != w.bytes {
			t.Errorf("tensor %d: got %s %s(%d) %v @%d %d bytes, want %s %s(%d) %v @%d %d bytes", i,
				ti.Name, ti.Type, uint32(ti.Type), ti.Dims, ti.Offset, size, w.name, w.typ, w.code, w.dims, w.offset, w.bytes)
		}
	}
}

func openFixture(t *testing.T, name string) *File {
	t.Helper()
	f, err := Open(filepath.Join(testdataDir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

var smallKVs = []kvRow{
	{"general.architecture", "string", `"llama"`},
	{"general.name", "string", `"small-fixture"`},
	{"llama.context_length", "u32", "128"},
	{"llama.embedding_length", "u32", "256"},
	{"llama.block_count", "u32", "1"},
	{"llama.feed_forward_length", "u32", "128"},
	{"llama.attention.head_count", "u32", "4"},
	{"llama.attention.layer_norm_rms_epsilon", "f32", "1e-05"},
}

func TestReadmeSmallF32(t *testing.T) {
	f := openFixture(t, "small.f32.gguf")
	checkKVs(t, &f.Header, append(slices.Clone(smallKVs), kvRow{"general.file_type", "u32", "0"}))
	eps, _ := f.Get("llama.attention.layer_norm_rms_epsilon")
	if v, _ := eps.AsFloat64(); math.Float32bits(float32(v)) != 0x3727C5AC || v != 9.999999747378752e-06 {
		t.Errorf("rms eps = %v", v)
	}
	checkTensors(t, &f.Header, []tensorRow{
		{"blk.0.attn_norm.weight", "F32", 0, []int64{256}, 0, 1024},
		{"blk.0.ffn_up.weight", "F32", 0, []int64{256, 64}, 1024, 65536},
		{"blk.0.ffn_gate.weight", "F32", 0, []int64{256, 128}, 66560, 131072},
	})
	if s := f.Tensors[1].Shape(); !slices.Equal(s, []int64{64, 256}) {
		t.Errorf("numpy shape of ffn_up = %v, want [64 256]", s)
	}
}

// TestReadmeSmallQuantized checks every llama-quantize output of small.f32.gguf:
// the KV rule (file_type removed, quantization_version then file_type appended) and
// the tensor tables.
func TestReadmeSmallQuantized(t *testing.T) {
	cases := []struct {
		file     string
		typ      string
		code     uint32
		fileType string
		gate, up int64 // bytes
	}{
		{"small.Q8_0.gguf", "Q8_0", 8, "7", 34816, 17408},
		{"small.Q4_0.gguf", "Q4_0", 2, "2", 18432, 9216},
		{"small.Q4_1.gguf", "Q4_1", 3, "3", 20480, 10240},
		{"small.Q5_0.gguf", "Q5_0", 6, "8", 22528, 11264},
		{"small.Q5_1.gguf", "Q5_1", 7, "9", 24576, 12288},
		{"small.Q4_K.gguf", "Q4_K", 12, "15", 18432, 9216},
		{"small.Q6_K.gguf", "Q6_K", 14, "18", 26880, 13440},
		{"small.F16.gguf", "F16", 1, "1", 65536, 32768},
		{"small.BF16.gguf", "BF16", 30, "32", 65536, 32768},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f := openFixture(t, c.file)
			checkKVs(t, &f.Header, append(slices.Clone(smallKVs),
				kvRow{"general.quantization_version", "u32", "2"},
				kvRow{"general.file_type", "u32", c.fileType}))
			checkTensors(t, &f.Header, []tensorRow{
				{"blk.0.attn_norm.weight", "F32", 0, []int64{256}, 0, 1024},
				{"blk.0.ffn_gate.weight", c.typ, c.code, []int64{256, 128}, 1024, c.gate},
				{"blk.0.ffn_up.weight", c.typ, c.code, []int64{256, 64}, alignUp(1024+c.gate, 32), c.up},
			})
		})
	}
}

func TestReadmeAllKV(t *testing.T) {
	f := openFixture(t, "allkv.gguf")
	checkKVs(t, &f.Header, []kvRow{
		{"general.architecture", "string", `"allkv"`},
		{"general.alignment", "u32", "64"},
		{"test.u8", "u8", "255"},
		{"test.i8", "i8", "-128"},
		{"test.u16", "u16", "65535"},
		{"test.i16", "i16", "-32768"},
		{"test.u32", "u32", "4294967295"},
		{"test.i32", "i32", "-2147483648"},
		{"test.f32", "f32", "0.1"},
		{"test.bool.true", "bool", "true"},
		{"test.bool.false", "bool", "false"},
		{"test.string", "string", `"hello"`},
		{"test.string.empty", "string", `""`},
		{"test.string.unicode", "string", `"héllo wörld — 日本語 🦙 \"q\" \\ tab\there\nnewline"`},
		{"test.u64", "u64", "18446744073709551615"},
		{"test.i64", "i64", "-9223372036854775808"},
		{"test.f64", "f64", "0.1"},
		{"test.array.u8", "array[u8]", "[0, 1, 127, 128, 255]"},
		{"test.array.i8", "array[i8]", "[-128, -1, 0, 1, 127]"},
		{"test.array.u16", "array[u16]", "[0, 1, 32768, 65535]"},
		{"test.array.i16", "array[i16]", "[-32768, -1, 0, 32767]"},
		{"test.array.u32", "array[u32]", "[0, 1, 2147483648, 4294967295]"},
		{"test.array.i32", "array[i32]", "[-2147483648, -1, 0, 2147483647]"},
		{"test.array.f32", "array[f32]", "[0, -0, 1.5, -2.25, +Inf, -Inf, 1e-45, 3.4028235e+38]"},
		{"test.array.bool", "array[bool]", "[true, false, true]"},
		{"test.array.u64", "array[u64]", "[0, 1, 18446744073709551615]"},
		{"test.array.i64", "array[i64]", "[-9223372036854775808, -1, 0, 9223372036854775807]"},
		{"test.array.f64", "array[f64]", "[0, -0, 0.1, -1e+308, 5e-324, +Inf]"},
		{"test.array.string", "array[string]", `["a", "", "ünïcödé", "with space", "🦙"]`},
		{"test.array.empty_i32", "array[i32]", "[]"},
		{"test.array.empty_string", "array[string]", "[]"},
		{"test.unicode_key.ключ", "u32", "7"},
	})
	// Exact bits, beyond the text.
	v, _ := f.Get("test.f32")
	if x := v.Interface().(float32); math.Float32bits(x) != 0x3DCCCCCD {
		t.Errorf("test.f32 bits %#x", math.Float32bits(x))
	}
	v, _ = f.Get("test.array.f32")
	var bits []uint32
	for _, x := range v.Interface().([]float32) {
		bits = append(bits, math.Float32bits(x))
	}
	if want := []uint32{0, 0x80000000, 0x3FC00000, 0xC0100000, 0x7F800000, 0xFF800000, 1, 0x7F7FFFFF}; !slices.Equal(bits, want) {
		t.Errorf("test.array.f32 bits %#x", bits)
	}
	v, _ = f.Get("test.array.f64")
	if a := v.Interface().([]float64); math.Float64bits(a[1]) != 1<<63 || math.Float64bits(a[4]) != 1 || a[2] != 0.1 {
		t.Errorf("test.array.f64 = %v", a)
	}
	v, _ = f.Get("test.string.unicode")
	if s, _ := v.AsString(); hex.EncodeToString([]byte(s)) != "68c3a96c6c6f2077c3b6726c6420e2809420e697a5e69cace8aa9e20f09fa69920227122205c2074616209686572650a6e65776c696e65" || len(s) != 55 {
		t.Errorf("test.string.unicode bytes %x", s)
	}
	checkTensors(t, &f.Header, []tensorRow{
		{"t.f32", "F32", 0, []int64{8, 3}, 0, 96},
		{"t.f16", "F16", 1, []int64{16}, 128, 32},
		{"t.bf16", "BF16", 30, []int64{8, 2, 2}, 192, 64},
		{"t.i8", "I8", 24, []int64{5}, 256, 5},
		{"t.i16", "I16", 25, []int64{3, 1}, 320, 6},
		{"t.i32", "I32", 26, []int64{2, 2, 1, 2}, 384, 32},
		{"t.i64", "I64", 27, []int64{3}, 448, 24},
		{"t.f64", "F64", 28, []int64{2, 2}, 512, 32},
		{"t.q8_0", "Q8_0", 8, []int64{64, 2}, 576, 136},
		{"t.q4_0", "Q4_0", 2, []int64{32, 3}, 768, 54},
	})
	// Tensor contents.
	le := func(i int) []byte {
		b, err := f.TensorData(i)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var u32s []uint32
	b := le(0)
	for i := 0; i < len(b); i += 4 {
		u32s = append(u32s, uint32(b[i])|uint32(b[i+1])<<8|uint32(b[i+2])<<16|uint32(b[i+3])<<24)
	}
	wantF32 := []uint32{0, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00001, 1, 0x7F7FFFFF, 0x40490FDB, 0x3DCCCCCD, 0xC2F6E979}
	for i := uint32(0); i < 12; i++ {
		wantF32 = append(wantF32, 0x40000000+i)
	}
	if !slices.Equal(u32s, wantF32) {
		t.Errorf("t.f32 = %#x", u32s)
	}
	var u16s []uint16
	b = le(1)
	for i := 0; i < len(b); i += 2 {
		u16s = append(u16s, uint16(b[i])|uint16(b[i+1])<<8)
	}
	if want := []uint16{0x0000, 0x8000, 0x3C00, 0xBC00, 0x7BFF, 0x0001, 0x03FF, 0x0400, 0x7C00, 0xFC00, 0x7E00, 0x3555, 0x4248, 0xD7B7, 0x2E66, 0x1419}; !slices.Equal(u16s, want) {
		t.Errorf("t.f16 = %#x", u16s)
	}
	b = le(2)
	for i := 0; i < len(b); i += 2 {
		if got := uint16(b[i]) | uint16(b[i+1])<<8; got != 0x3F80+uint16(i/2) {
			t.Errorf("t.bf16[%d] = %#x", i/2, got)
		}
	}
	if got := le(3); !bytes.Equal(got, []byte{0x80, 0xFF, 0, 1, 0x7F}) {
		t.Errorf("t.i8 = %x", got)
	}
	if got := hex.EncodeToString(le(6)); got != "0000000000000080"+"0000000000000000"+"ffffffffffffff7f" {
		t.Errorf("t.i64 = %s", got)
	}
	b = le(7)
	var f64 []uint64
	for i := 0; i < len(b); i += 8 {
		f64 = append(f64, uint64(b[i])|uint64(b[i+1])<<8|uint64(b[i+2])<<16|uint64(b[i+3])<<24|
			uint64(b[i+4])<<32|uint64(b[i+5])<<40|uint64(b[i+6])<<48|uint64(b[i+7])<<56)
	}
	if want := []uint64{math.Float64bits(0.1), 1 << 63, math.Float64bits(1e308), 1}; !slices.Equal(f64, want) {
		t.Errorf("t.f64 bits = %#x, want %#x", f64, want)
	}
}

var tinyLlamaPieces = []string{"▁", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z", "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S", "T", "U", "V", "W", "X", "Y", "Z", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", ".", ",", "!", "?", "'", "-", ":", ";", "(", ")", "\"", "▁a", "▁b", "▁c", "▁d", "▁e", "▁f", "▁g", "▁h", "▁i", "▁j", "▁k", "▁l", "▁m", "▁n", "▁o", "▁p", "▁q", "▁r", "▁s", "▁t", "▁u", "▁v", "▁w", "▁x", "▁y", "▁z", "th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es", "or", "te", "of", "ed", "is", "it", "al", "ar", "st", "to", "nt", "ng", "se", "ha", "ou", "ll", "ing", "ion", "the", "and", "▁the", "▁and", "▁of", "▁to", "▁in", "▁is", "▁it", "▁that", "▁Hello", "▁hello", "▁world", "▁once", "▁upon", "▁time", "▁there", "▁was", "▁llama"}

var tinyLlamaKVs = []kvRow{
	{"general.architecture", "string", `"llama"`},
	{"general.name", "string", `"tiny-llama-fixture"`},
	{"llama.context_length", "u32", "128"},
	{"llama.embedding_length", "u32", "64"},
	{"llama.block_count", "u32", "2"},
	{"llama.feed_forward_length", "u32", "128"},
	{"llama.attention.head_count", "u32", "4"},
	{"llama.attention.head_count_kv", "u32", "4"},
	{"llama.rope.dimension_count", "u32", "16"},
	{"llama.rope.freq_base", "f32", "10000"},
	{"llama.attention.layer_norm_rms_epsilon", "f32", "1e-05"},
	{"llama.vocab_size", "u32", "408"},
	{"general.file_type", "u32", "0"},
	{"tokenizer.ggml.model", "string", `"llama"`},
	{"tokenizer.ggml.pre", "string", `"default"`},
	{"tokenizer.ggml.tokens", "array[string]", "*"},
	{"tokenizer.ggml.scores", "array[f32]", "*"},
	{"tokenizer.ggml.token_type", "array[i32]", "*"},
	{"tokenizer.ggml.bos_token_id", "u32", "1"},
	{"tokenizer.ggml.eos_token_id", "u32", "2"},
	{"tokenizer.ggml.unknown_token_id", "u32", "0"},
	{"tokenizer.ggml.add_bos_token", "bool", "true"},
	{"tokenizer.ggml.add_eos_token", "bool", "false"},
}

func checkTinyLlamaVocab(t *testing.T, h *Header) {
	t.Helper()
	v, _ := h.Get("tokenizer.ggml.tokens")
	if v.Len() != 408 || v.String() != "[array of 408 string]" {
		t.Fatalf("tokens: %s", v)
	}
	toks, _ := v.Strings()
	want := []string{"<unk>", "<s>", "</s>"}
	for i := 0; i < 256; i++ {
		want = append(want, fmt.Sprintf("<0x%02X>", i))
	}
	want = append(want, tinyLlamaPieces...)
	if !slices.Equal(toks, want) {
		t.Errorf("tokens differ from the README's vocabulary")
	}
	v, _ = h.Get("tokenizer.ggml.token_type")
	types := v.Interface().([]int32)
	v, _ = h.Get("tokenizer.ggml.scores")
	scores := v.Interface().([]float32)
	for id := range 408 {
		wantType, wantScore := int32(1), float32(0)
		switch {
		case id == 0:
			wantType = 2
		case id <= 2:
			wantType = 3
		case id <= 258:
			wantType = 6
		default:
			p := id - 259
			if p == 148 {
				p = 149
			}
			base := -1.0
			if utf8.RuneCountInString(toks[id]) == 1 {
				base = -10.0
			}
			wantScore = float32(base - 0.01*float64(p))
		}
		if types[id] != wantType || scores[id] != wantScore {
			t.Errorf("token %d %q: type %d score %v, want %d %v", id, toks[id], types[id], scores[id], wantType, wantScore)
		}
	}
}

func TestReadmeTinyLlamaF32(t *testing.T) {
	f := openFixture(t, "tiny-llama.f32.gguf")
	checkKVs(t, &f.Header, tinyLlamaKVs)
	for key, bits := range map[string]uint32{"llama.rope.freq_base": 0x461C4000, "llama.attention.layer_norm_rms_epsilon": 0x3727C5AC} {
		v, _ := f.Get(key)
		if x, ok := v.Interface().(float32); !ok || math.Float32bits(x) != bits {
			t.Errorf("%s = %v", key, v)
		}
	}
	checkTinyLlamaVocab(t, &f.Header)
	var want []tensorRow
	add := func(name string, dims ...int64) {
		off := int64(0)
		if n := len(want); n > 0 {
			off = alignUp(want[n-1].offset+want[n-1].bytes, 32)
		}
		size := int64(4)
		for _, d := range dims {
			size *= d
		}
		want = append(want, tensorRow{name, "F32", 0, dims, off, size})
	}
	add("token_embd.weight", 64, 408)
	add("output_norm.weight", 64)
	add("output.weight", 64, 408)
	for l := range 2 {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", 64)
		for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
			add(p+n+".weight", 64, 64)
		}
		add(p+"ffn_norm.weight", 64)
		add(p+"ffn_gate.weight", 64, 128)
		add(p+"ffn_up.weight", 64, 128)
		add(p+"ffn_down.weight", 128, 64)
	}
	checkTensors(t, &f.Header, want)
	// Spot checks against the README's table.
	if want[20].offset != 505088 || want[11].offset != 340736 || want[2].offset != 104704 {
		t.Fatalf("test table is off: %d %d %d", want[20].offset, want[11].offset, want[2].offset)
	}
}

// TestReadmeTinyLlamaQuantized checks the KV rule and the tensor types, order and
// offsets of the three llama-quantize outputs.
func TestReadmeTinyLlamaQuantized(t *testing.T) {
	for _, c := range []struct {
		file     string
		fileType string
		weight   string // type of the 2-D weights
		output   string // type of output.weight
		lastOff  int64  // offset of blk.1.ffn_up.weight
	}{
		{"tiny-llama.Q8_0.gguf", "7", "Q8_0", "Q8_0", 135104},
		{"tiny-llama.Q4_0.gguf", "2", "Q4_0", "Q8_0", 85184},
		{"tiny-llama.Q4_0.pure.gguf", "2", "Q4_0", "Q4_0", 72128},
	} {
		t.Run(c.file, func(t *testing.T) {
			f := openFixture(t, c.file)
			kvs := slices.Clone(tinyLlamaKVs)
			kvs = slices.Delete(kvs, 12, 13)
			kvs = append(kvs, kvRow{"general.quantization_version", "u32", "2"}, kvRow{"general.file_type", "u32", c.fileType})
			checkKVs(t, &f.Header, kvs)
			checkTinyLlamaVocab(t, &f.Header)
			names := []string{"output.weight", "output_norm.weight", "token_embd.weight"}
			for l := range 2 {
				for _, n := range []string{"attn_k", "attn_norm", "attn_output", "attn_q", "attn_v", "ffn_down", "ffn_gate", "ffn_norm", "ffn_up"} {
					names = append(names, fmt.Sprintf("blk.%d.%s.weight", l, n))
				}
			}
			var off int64
			for i, ti := range f.Tensors {
				wantType := c.weight
				switch {
				case len(ti.Dims) == 1:
					wantType = "F32"
				case ti.Name == "output.weight":
					wantType = c.output
				}
				if ti.Name != names[i] || ti.Type.String() != wantType || ti.Offset != off {
					t.Errorf("tensor %d: %s %s @%d, want %s %s @%d", i, ti.Name, ti.Type, ti.Offset, names[i], wantType, off)
				}
				n, _ := ti.Size()
				off = alignUp(ti.Offset+n, 32)
			}
			if last := f.Tensors[20]; last.Name != "blk.1.ffn_up.weight" || last.Offset != c.lastOff {
				t.Errorf("last tensor %s @%d, README says blk.1.ffn_up.weight @%d", last.Name, last.Offset, c.lastOff)
			}
		})
	}
}

// TestTextSummary: long arrays are summarised, short ones shown in full.
func TestTextSummary(t *testing.T) {
	f := openFixture(t, "tiny-llama.f32.gguf")
	v, _ := f.Get("tokenizer.ggml.scores")
	if got := v.String(); got != "[array of 408 f32]" {
		t.Errorf("got %s", got)
	}
	if got := v.Text(-1); !strings.HasPrefix(got, "[0, 0, 0,") || strings.Count(got, ",") != 407 {
		t.Errorf("Text(-1) = %.60s...", got)
	}
}

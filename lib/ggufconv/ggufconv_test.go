package ggufconv

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

const testdata = "../../testdata/gguf"

// fixtures returns every GGUF file in testdata/gguf (the 15 of the shared fixtures).
func fixtures(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(testdata, "*.gguf"))
	if err != nil || len(paths) != 15 {
		t.Fatalf("want the 15 GGUF fixtures in %s, found %d (%v)", testdata, len(paths), err)
	}
	return paths
}

// importFile imports the GGUF at path into an APR file in dir and returns its path.
func importFile(t *testing.T, path, dir string) string {
	t.Helper()
	s, err := OpenFile(path, ImportOptions{Digest: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := filepath.Join(dir, filepath.Base(path)+".apr")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Import(f, s); err != nil {
		t.Fatalf("import %s: %v", path, err)
	}
	return out
}

// TestRoundTripFixtures imports every fixture and exports it again, through a file
// (index, no spool) and through a pipe (streaming import; export streamed from the
// tensor table, and spooled without it), and wants the original bytes back each time.
func TestRoundTripFixtures(t *testing.T) {
	dir := t.TempDir()
	for _, path := range fixtures(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			aprPath := importFile(t, path, dir)

			var out bytes.Buffer
			if err := ExportFile(&out, aprPath, ExportOptions{TempDir: dir}); err != nil {
				t.Fatalf("export file: %v", err)
			}
			if !bytes.Equal(out.Bytes(), orig) {
				t.Fatalf("file round trip differs: %d bytes, want %d (first difference at %d)", out.Len(), len(orig), firstDiff(out.Bytes(), orig))
			}

			// The pipe path: a streaming import into memory, then a spooled export.
			s, err := NewStream(bytes.NewReader(orig), ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var aprBuf bytes.Buffer
			if err := Import(&aprBuf, s); err != nil {
				t.Fatal(err)
			}
			aprBytes := bytes.Clone(aprBuf.Bytes())
			as, err := stream.Open(&aprBuf)
			if err != nil {
				t.Fatal(err)
			}
			if as.Header().Table == nil {
				t.Fatal("the import wrote no tensor table")
			}
			// With the import's tensor table: streamed, nothing in the temporary directory.
			spoolDir := t.TempDir()
			out.Reset()
			if err := Export(&out, as, ExportOptions{TempDir: spoolDir, Spooling: func(why string) { t.Errorf("spooled: %s", why) }}); err != nil {
				t.Fatalf("export stream: %v", err)
			}
			if !bytes.Equal(out.Bytes(), orig) {
				t.Fatalf("pipe round trip differs at byte %d", firstDiff(out.Bytes(), orig))
			}
			if ents, _ := os.ReadDir(spoolDir); len(ents) != 0 {
				t.Errorf("the export with a table wrote temporary files: %v", ents)
			}
			// Without it (a 2.0 stream): spooled, and the same bytes.
			as, err = stream.Open(bytes.NewReader(aprBytes))
			if err != nil {
				t.Fatal(err)
			}
			out.Reset()
			spooled := ""
			if err := Export(&out, noTable{as}, ExportOptions{TempDir: dir, Spooling: func(why string) { spooled = why }}); err != nil {
				t.Fatalf("export stream without a table: %v", err)
			}
			if !bytes.Equal(out.Bytes(), orig) || !strings.Contains(spooled, "no tensor table") {
				t.Fatalf("spooled round trip differs at byte %d (spooling: %q)", firstDiff(out.Bytes(), orig), spooled)
			}

			// Provenance: the digest of the source, which equals the export's.
			info, err := stream.Inspect(aprPath)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(orig)
			p := info.Metadata.Provenance
			if p["source_format"] != "gguf" || p[ProvSHA256] != hex.EncodeToString(sum[:]) {
				t.Errorf("provenance %v, want source_format gguf and sha256 %x", p, sum)
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.spool")); len(left) != 0 {
		t.Errorf("spool files left behind: %v", left)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestImportContent checks what an import holds: shapes are the GGUF dims reversed,
// dtypes the ggml types, data unchanged, names and metadata as documented.
func TestImportContent(t *testing.T) {
	path := filepath.Join(testdata, "allkv.gguf")
	gf, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer gf.Close()
	s, err := OpenFile(path, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Header()
	if h.Type != modeltype.Custom || h.Flags&container.FlagQuantized == 0 {
		t.Errorf("type %v flags %v, want Custom with the quantized flag (allkv has Q8_0 and Q4_0)", h.Type, h.Flags)
	}
	if _, ok := h.Metadata.Provenance[ProvSHA256]; ok {
		t.Errorf("an import without Digest computed a digest")
	}
	for i := 0; ; i++ {
		info, r, err := s.Next()
		if err == io.EOF {
			if i != len(gf.Tensors) {
				t.Errorf("%d tensors, want %d", i, len(gf.Tensors))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		gt := gf.Tensors[i]
		want := slices.Clone(gt.Dims)
		slices.Reverse(want)
		d, _ := gt.Type.DType()
		if info.Name != gt.Name || info.DType != d || !slices.Equal(info.Shape, want) {
			t.Errorf("tensor %d: %q %v %v, want %q %v %v", i, info.Name, info.DType, info.Shape, gt.Name, d, want)
		}
		got, _ := io.ReadAll(r)
		data, _ := gf.TensorData(i)
		if !bytes.Equal(got, data) {
			t.Errorf("tensor %q: data differs", info.Name)
		}
	}
}

// TestKVsThroughMessagePack sends every value type, the edge values and the NaN
// payloads through the APR metadata encoding and back.
func TestKVsThroughMessagePack(t *testing.T) {
	nested, err := gguf.NestedArray([]gguf.Value{gguf.Array([]uint8{1, 2}), gguf.Array([]string{"x"})})
	if err != nil {
		t.Fatal(err)
	}
	kvs := []gguf.KV{
		{Key: "z.first", Value: gguf.Uint8(255)},
		{Key: "a.i8", Value: gguf.Int8(-128)},
		{Key: "u16", Value: gguf.Uint16(65535)},
		{Key: "i16", Value: gguf.Int16(-32768)},
		{Key: "u32", Value: gguf.Uint32(math.MaxUint32)},
		{Key: "i32", Value: gguf.Int32(math.MinInt32)},
		{Key: "u64", Value: gguf.Uint64(math.MaxUint64)},
		{Key: "i64", Value: gguf.Int64(math.MinInt64)},
		{Key: "f32", Value: gguf.Float32(float32(math.Copysign(0, -1)))},
		{Key: "f32.nan", Value: gguf.Float32(math.Float32frombits(0x7f800001))},
		{Key: "f32.sub", Value: gguf.Float32(math.Float32frombits(1))},
		{Key: "f64.nan", Value: gguf.Float64(math.Float64frombits(0xfff0000000000123))},
		{Key: "f64.inf", Value: gguf.Float64(math.Inf(-1))},
		{Key: "bool", Value: gguf.Bool(true)},
		{Key: "string", Value: gguf.String("h\xffé\x00")},
		{Key: "ключ", Value: gguf.String("")},
		{Key: "arr.f32", Value: gguf.Array([]float32{1.5, float32(math.Inf(1)), math.Float32frombits(0x7fc00001)})},
		{Key: "arr.empty", Value: gguf.Array([]int16{})},
		{Key: "arr.string", Value: gguf.Array([]string{"a", "", "ü"})},
		{Key: "arr.bool", Value: gguf.Array([]bool{true, false})},
		{Key: "arr.u64", Value: gguf.Array([]uint64{0, math.MaxUint64})},
		{Key: "arr.nested", Value: nested},
	}
	md := container.Metadata{Extra: map[string]any{KeyGGUF: gguf.EncodeKVs(2, kvs)}}
	b, err := md.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := container.DecodeMetadata(b)
	if err != nil {
		t.Fatal(err)
	}
	ver, got, err := gguf.DecodeKVs(back.Extra[KeyGGUF])
	if err != nil {
		t.Fatal(err)
	}
	if ver != 2 || len(got) != len(kvs) {
		t.Fatalf("version %d, %d KVs; want 2, %d", ver, len(got), len(kvs))
	}
	for i := range kvs {
		if got[i].Key != kvs[i].Key || !got[i].Value.Equal(kvs[i].Value) {
			t.Errorf("KV %d: %q %s = %v, want %q %s = %v", i, got[i].Key, got[i].Value.TypeName(), got[i].Value,
				kvs[i].Key, kvs[i].Value.TypeName(), kvs[i].Value)
		}
	}
}

// TestDecodeKVsRefuses: damaged or edited metadata is an error naming the key, never a
// guess.
func TestDecodeKVsRefuses(t *testing.T) {
	kv := func(m map[string]any) map[string]any { return map[string]any{"version": int64(3), "kv": m} }
	cases := []struct {
		name string
		x    any
		want string
	}{
		{"not a map", []any{1}, "want a map"},
		{"version", map[string]any{"version": int64(1)}, "version"},
		{"entry shape", kv(map[string]any{"k": []any{int64(0), "u8"}}), `key "k"`},
		{"position", kv(map[string]any{"k": []any{int64(1), "u8", int64(1)}}), "position"},
		{"same position", kv(map[string]any{"a": []any{int64(0), "u8", int64(1)}, "b": []any{int64(0), "u8", int64(1)}}), "both claim"},
		{"range", kv(map[string]any{"k": []any{int64(0), "u8", int64(256)}}), "not a u8"},
		{"negative unsigned", kv(map[string]any{"k": []any{int64(0), "u32", int64(-1)}}), "not a u32"},
		{"type", kv(map[string]any{"k": []any{int64(0), "u128", int64(1)}}), "unknown type"},
		{"f32 inexact", kv(map[string]any{"k": []any{int64(0), "f32", 0.1}}), "not a f32"},
		{"bad nan", kv(map[string]any{"k": []any{int64(0), "f32", "NaN(0x3f800000)"}}), "not a f32"},
		{"array element", kv(map[string]any{"k": []any{int64(0), "array[i8]", []any{int64(1), "x"}}}), "element 1"},
		{"string as int", kv(map[string]any{"k": []any{int64(0), "string", int64(3)}}), "not a string"},
	}
	for _, c := range cases {
		_, _, err := gguf.DecodeKVs(c.x)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestExportRefuses: what llama.cpp cannot read is an error before any byte.
func TestExportRefuses(t *testing.T) {
	f32 := func(name string, shape ...int64) tensor.Tensor {
		n, _ := dtype.Elems(shape)
		return tensor.Tensor{Name: name, DType: dtype.F32, Shape: shape, Data: make([]byte, 4*n)}
	}
	dupKeys := container.Metadata{Extra: map[string]any{KeyGGUF: map[string]any{"version": int64(3), "kv": map[string]any{
		"general.alignment": []any{int64(0), "u32", int64(48)}}}}}
	cases := []struct {
		name    string
		md      container.Metadata
		tensors []tensor.Tensor
		want    string
	}{
		{"long name", container.Metadata{}, []tensor.Tensor{f32(strings.Repeat("n", 64), 2)}, "name of 64 bytes"},
		{"scalar", container.Metadata{}, []tensor.Tensor{f32("s")}, "0 dims"},
		{"five dims", container.Metadata{}, []tensor.Tensor{f32("t", 1, 1, 1, 1, 2)}, "5 dims"},
		{"duplicate", container.Metadata{}, []tensor.Tensor{f32("t", 2), f32("t", 2)}, "t"},
		{"no ggml type", container.Metadata{}, []tensor.Tensor{{Name: "b", DType: dtype.Bool, Shape: []int64{1}, Data: []byte{1}}}, "no ggml type"},
		{"block rows", container.Metadata{}, []tensor.Tensor{{Name: "q", DType: dtype.Q8_0, Shape: []int64{1, 34}, Data: make([]byte, 34)}}, "q"},
		{"alignment", dupKeys, []tensor.Tensor{f32("t", 2)}, "alignment"},
		{"config map", container.Metadata{ModelConfig: map[string]any{"m": map[string]any{}}}, []tensor.Tensor{f32("t", 2)}, `config key "m"`},
	}
	for _, c := range cases {
		var out bytes.Buffer
		err := Export(&out, stream.FromTensors(modeltype.Custom, c.md, c.tensors), ExportOptions{TempDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%s: %d bytes written before the error", c.name, out.Len())
		}
	}
}

// TestImportRefuses: a truncated file, bytes after the data and a broken header are
// errors naming the input.
func TestImportRefuses(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(testdata, "small.Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"truncated data":   orig[:len(orig)-100],
		"trailing bytes":   append(slices.Clone(orig), 0),
		"truncated header": orig[:100],
		"bad magic":        append([]byte("GGUX"), orig[4:]...),
		"empty":            nil,
	}
	for name, b := range cases {
		err := func() error {
			s, err := NewStream(bytes.NewReader(b), ImportOptions{Name: "in.gguf"})
			if err != nil {
				return err
			}
			return Import(io.Discard, s)
		}()
		if err == nil || !strings.Contains(err.Error(), "in.gguf") {
			t.Errorf("%s: error %v, want one naming in.gguf", name, err)
		}
	}
}

// TestClassicalModels exports apr's own models to GGUF and imports them back: the same
// type, config and parameters load from the result.
func TestClassicalModels(t *testing.T) {
	dir := t.TempDir()
	x, _ := model.FromRows([][]float64{{0, 1}, {1, 0}, {2, 2}, {3, 5}, {4, 1}})
	lin := model.NewLinearRegression()
	if err := lin.Fit(x, []float64{1, 2, 6, 13, 7}); err != nil {
		t.Fatal(err)
	}
	logit := model.NewLogisticRegression()
	logit.MaxIter, logit.LearningRate = 50, 0.25
	if err := logit.Fit(x, []float64{0, 0, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	nn, err := model.NewNeuralSequential([]int{2, 3, 2}, model.ActReLU, model.ActSoftmax, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []model.Model{lin, logit, nn} {
		t.Run(m.Type().String(), func(t *testing.T) {
			src := filepath.Join(dir, m.Type().String()+".apr")
			if err := apr.Save(src, m, apr.SaveOptions{Name: "classic", Description: "a test model"}); err != nil {
				t.Fatal(err)
			}
			ggufPath := filepath.Join(dir, m.Type().String()+".gguf")
			var out bytes.Buffer
			if err := ExportFile(&out, src, ExportOptions{TempDir: dir}); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(ggufPath, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			gf, err := gguf.Open(ggufPath)
			if err != nil {
				t.Fatal(err)
			}
			arch, _ := gf.Get(KeyArchitecture)
			name, _ := gf.Get(KeyName)
			if s, _ := arch.AsString(); s != Arch(m.Type()) {
				t.Errorf("general.architecture %v, want %q", arch, Arch(m.Type()))
			}
			if s, _ := name.AsString(); s != "classic" {
				t.Errorf("general.name %v", name)
			}
			gf.Close()

			back := importFile(t, ggufPath, t.TempDir())
			info, err := stream.Inspect(back)
			if err != nil {
				t.Fatal(err)
			}
			if info.Type != m.Type() || info.Metadata.Name != "classic" || info.Metadata.Description != "a test model" {
				t.Errorf("imported %v %q %q", info.Type, info.Metadata.Name, info.Metadata.Description)
			}
			var got model.Model
			switch m.Type() {
			case modeltype.LinearRegression:
				got, err = apr.Load[*model.LinearRegressionModel](back, m.Type())
			case modeltype.LogisticRegression:
				got, err = apr.Load[*model.LogisticRegressionModel](back, m.Type())
			default:
				got, err = apr.Load[*model.NeuralSequentialModel](back, m.Type())
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameModel(m, got) {
				t.Errorf("loaded model differs:\n got config %v\nwant config %v", got.Config(), m.Config())
			}
			// And it exports to the same GGUF bytes again.
			var again bytes.Buffer
			if err := ExportFile(&again, back, ExportOptions{TempDir: dir}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again.Bytes(), out.Bytes()) {
				t.Errorf("second export differs at byte %d", firstDiff(again.Bytes(), out.Bytes()))
			}
		})
	}
}

func sameModel(a, b model.Model) bool {
	if a.Type() != b.Type() || !sameConfig(a.Config(), b.Config()) {
		return false
	}
	ta, tb := a.Tensors(), b.Tensors()
	if len(ta) != len(tb) {
		return false
	}
	for i := range ta {
		if ta[i].Name != tb[i].Name || ta[i].DType != tb[i].DType || !slices.Equal(ta[i].Shape, tb[i].Shape) || !bytes.Equal(ta[i].Data, tb[i].Data) {
			return false
		}
	}
	return true
}

func sameConfig(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !sameValue(v, b[k]) {
			return false
		}
	}
	return true
}

func sameValue(a, b any) bool {
	if xs, ok := a.([]any); ok {
		ys, ok := b.([]any)
		if !ok || len(xs) != len(ys) {
			return false
		}
		for i := range xs {
			if !sameValue(xs[i], ys[i]) {
				return false
			}
		}
		return true
	}
	if i, err := gguf.PlainInt64(a); err == nil {
		j, err := gguf.PlainInt64(b)
		return err == nil && i == j
	}
	return a == b
}

// TestQuantizedExportUpdatesFileType: after apr-quant, general.file_type follows the
// new type and general.quantization_version is added, as llama-quantize does.
func TestQuantizedExportUpdatesFileType(t *testing.T) {
	s, err := OpenFile(filepath.Join(testdata, "small.f32.gguf"), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Header()
	h.Metadata.Provenance = map[string]any{"quantization": map[string]any{"type": "Q8_0"}}
	gh, err := Plan(h, []container.TensorInfo{{Name: "w", DType: dtype.Q8_0, Shape: []int64{2, 32}}})
	if err != nil {
		t.Fatal(err)
	}
	ft, _ := gh.Get(KeyFileType)
	qv, _ := gh.Get(KeyQuantVersion)
	if u, _ := ft.AsUint64(); u != 7 || ft.Type() != gguf.TypeUint32 {
		t.Errorf("general.file_type %s %v, want u32 7", ft.TypeName(), ft)
	}
	if u, _ := qv.AsUint64(); u != 2 || gh.KVs[len(gh.KVs)-1].Key != KeyQuantVersion {
		t.Errorf("general.quantization_version %v, want 2 appended", qv)
	}
	if gh.KVs[8].Key != KeyFileType {
		t.Errorf("general.file_type moved to %v", gh.KVs)
	}
}

// TestNameEdit: a name set on the APR file replaces general.name in place.
func TestNameEdit(t *testing.T) {
	s, err := OpenFile(filepath.Join(testdata, "small.f32.gguf"), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Header()
	if h.Metadata.Name != "small-fixture" {
		t.Fatalf("name %q, want general.name", h.Metadata.Name)
	}
	h.Metadata.Name = "renamed"
	gh, err := Plan(h, []container.TensorInfo{{Name: "w", DType: dtype.F32, Shape: []int64{2}}})
	if err != nil {
		t.Fatal(err)
	}
	if gh.KVs[1].Key != KeyName || gh.KVs[1].Value.String() != `"renamed"` {
		t.Errorf("KV 1 is %s = %v", gh.KVs[1].Key, gh.KVs[1].Value)
	}
}

func TestSpoolDirError(t *testing.T) {
	s := noTable{stream.FromTensors(modeltype.Custom, container.Metadata{}, nil)}
	err := Export(io.Discard, s, ExportOptions{TempDir: filepath.Join(t.TempDir(), "missing")})
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v, want a spool error", err)
	}
}

// noTable is a stream without its tensor table, as a 2.0 writer sends it.
type noTable struct{ stream.Stream }

func (s noTable) Header() container.Header {
	h := s.Stream.Header()
	h.Table = nil
	return h
}

// editTable changes the first dimension of tensor i in the tensor table of the APR
// stream b (same encoded size) and makes every CRC right again (table, header, file),
// as a forger would: only the comparison of table and records can catch it.
func editTable(t *testing.T, b []byte, i int, dim int64) []byte {
	t.Helper()
	c := bytes.Clone(b)
	le := binary.LittleEndian
	align := func(n int64) int64 { return (n + 63) &^ 63 }
	if c[5] != 1 || le.Uint32(c[24:]) == 0 {
		t.Fatal("not a stream with a tensor table")
	}
	start := align(align(64+int64(le.Uint32(c[12:]))) + int64(le.Uint32(c[20:])))
	table := c[start : start+int64(le.Uint32(c[24:]))]
	p := 16
	for k := 0; ; k++ {
		nd, nl := int(table[p+2]), int(le.Uint16(table[p+4:]))
		if k == i {
			le.PutUint64(table[p+8:], uint64(dim))
			break
		}
		p += 8 + 8*nd + nl
	}
	le.PutUint32(c[28:], crc32.ChecksumIEEE(table))
	le.PutUint32(c[60:], crc32.ChecksumIEEE(c[:60]))
	foot := len(c) - 64
	le.PutUint32(c[foot+52:], crc32.Update(crc32.ChecksumIEEE(c[:foot]), crc32.IEEETable, c[foot:foot+52]))
	return c
}

// TestExportTableDisagrees: a stream whose tensor table disagrees with its records (an
// edited APR stream, CRCs fixed) or with the tensors a stream yields (any stream) is
// refused with an error that names the tensor, before its bytes are written.
func TestExportTableDisagrees(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(testdata, "tiny-llama.f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStream(bytes.NewReader(orig), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var aprBuf bytes.Buffer
	if err := Import(&aprBuf, s); err != nil {
		t.Fatal(err)
	}
	as, err := stream.Open(bytes.NewReader(aprBuf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	table := as.Header().Table
	as.Close()
	// Tensor 1, its first dimension doubled: the GGUF header would promise twice its data.
	edited := editTable(t, aprBuf.Bytes(), 1, 2*table[1].Shape[0])
	es, err := stream.Open(bytes.NewReader(edited))
	if err != nil {
		t.Fatal(err)
	}
	err = Export(io.Discard, es, ExportOptions{TempDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), strconv.Quote(table[1].Name)) || !strings.Contains(err.Error(), "tensor table") {
		t.Errorf("edited table: got %v, want an error naming %q and the table", err, table[1].Name)
	}
	t.Log(err)
	// A stream (not APR bytes) whose table lies about a dtype.
	ls, err := stream.Open(bytes.NewReader(aprBuf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	lie := slices.Clone(table)
	lie[2].DType = dtype.F16
	err = Export(io.Discard, liar{ls, lie}, ExportOptions{TempDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), strconv.Quote(table[2].Name)) || !strings.Contains(err.Error(), "tensor table says") {
		t.Errorf("lying stream: got %v", err)
	}
	t.Log(err)
}

// liar is a stream whose header announces another table.
type liar struct {
	stream.Stream
	table []container.TensorInfo
}

func (s liar) Header() container.Header {
	h := s.Stream.Header()
	h.Table = s.table
	return h
}

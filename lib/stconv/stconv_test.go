package stconv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/safetensors"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

const validDir = "../../testdata/safetensors/valid"

func validFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(validDir, "*.safetensors"))
	if err != nil || len(files) != 10 {
		t.Fatalf("want the 10 crate-written files of %s, got %d (%v)", validDir, len(files), err)
	}
	return files
}

// toAPR writes a stream as an APR v2 file.
func toAPR(t *testing.T, s stream.Stream, opts ...container.Option) []byte {
	t.Helper()
	defer s.Close()
	var buf bytes.Buffer
	w, err := container.NewWriter(&buf, s.Header(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Copy(w, s); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// exportFile exports the APR file at path (random access) to bytes.
func exportFile(t *testing.T, path string, opts ExportOptions) []byte {
	t.Helper()
	src, err := OpenSource(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out bytes.Buffer
	if err := Export(&out, src, opts); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// exportStream exports APR bytes read as a pipe: with the stream's tensor table
// (streamed when the output's order is the stream's, else spooled), and as a 2.0
// stream without it (spooled), which must give the same bytes. It returns the bytes
// and why the export with the table spooled ("" when it streamed, and then it wrote
// nothing into its temporary directory).
func exportStream(t *testing.T, b []byte, opts ExportOptions) ([]byte, string) {
	t.Helper()
	run := func(strip bool) ([]byte, string) {
		s, err := stream.Open(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if strip {
			s = noTable{s}
		}
		src := StreamSource(s)
		defer src.Close()
		o := opts
		o.TempDir = t.TempDir()
		why := ""
		o.Spooling = func(r string) { why = r }
		var out bytes.Buffer
		if err := Export(&out, src, o); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(o.TempDir); len(ents) != 0 {
			t.Errorf("temporary files left: %v", ents)
		}
		return out.Bytes(), why
	}
	got, why := run(false)
	spooled, why2 := run(true)
	if !bytes.Equal(got, spooled) || why2 == "" {
		t.Errorf("the export without a tensor table differs or did not spool (%q)", why2)
	}
	return got, why
}

// noTable is a stream without its tensor table, as a 2.0 writer sends it.
type noTable struct{ stream.Stream }

func (s noTable) Header() container.Header {
	h := s.Stream.Header()
	h.Table = nil
	return h
}

// TestRoundTripValid: every crate-written file, imported three ways (mapped file,
// open file, pipe) and exported three ways (file in one pass, file compressed, pipe
// spooled), comes back byte for byte.
func TestRoundTripValid(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	for _, path := range validFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s1, err := Open(path, ImportOptions{Digest: true})
			if err != nil {
				t.Fatal(err)
			}
			a1 := toAPR(t, s1)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			s2, err := OpenFile(f, filepath.Base(path), ImportOptions{Digest: true})
			if err != nil {
				t.Fatal(err)
			}
			if a2 := toAPR(t, s2); !bytes.Equal(a1, a2) {
				t.Error("import of the path and of the open file differ")
			}
			s3, err := NewStream(bytes.NewReader(want), ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a3 := toAPR(t, s3)
			aprPath := writeTemp(t, "m.apr", a1)
			if got := exportFile(t, aprPath, ExportOptions{}); !bytes.Equal(got, want) {
				t.Errorf("file export differs from the crate's file:\n got %q\nwant %q", got, want)
			}
			zst := writeTemp(t, "z.apr", toAPR(t, mustOpen(t, path), container.WithCompression(container.CompressZstd), container.WithShuffle(true)))
			if got := exportFile(t, zst, ExportOptions{}); !bytes.Equal(got, want) {
				t.Error("export of the zstd APR differs from the crate's file")
			}
			if got, why := exportStream(t, a3, ExportOptions{}); !bytes.Equal(got, want) || why != "" {
				t.Errorf("export of the piped APR differs from the crate's file, or spooled (%q)", why)
			}
			// The metadata carries the digest of the file and __metadata__ in order.
			info, err := container.NewFile(bytes.NewReader(a1), int64(len(a1)))
			if err != nil {
				t.Fatal(err)
			}
			md := info.Header().Metadata
			if md.Provenance["source_format"] != SourceFormat {
				t.Errorf("provenance %v", md.Provenance)
			}
			files, _ := md.Provenance[ProvFiles].([]any)
			if len(files) != 1 {
				t.Fatalf("source_files %v", md.Provenance[ProvFiles])
			}
			if d, _ := files[0].(map[string]any)["sha256"].(string); len(d) != 64 {
				t.Errorf("source_files %v", md.Provenance[ProvFiles])
			}
		})
	}
}

func mustOpen(t *testing.T, path string) stream.Stream {
	t.Helper()
	s, err := Open(path, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMetadataOrderKept: several __metadata__ keys keep their order (the crate's own
// order is a HashMap's, so this is our writer's file).
func TestMetadataOrderKept(t *testing.T) {
	meta := safetensors.Metadata{{Key: "z", Value: "1"}, {Key: "a", Value: "2"}, {Key: "format", Value: "pt"}}
	var src bytes.Buffer
	if err := safetensors.Encode(&src, meta, []safetensors.Tensor{{TensorSpec: safetensors.TensorSpec{Name: "w", DType: dtype.F32, Shape: []int64{2}}, Data: make([]byte, 8)}}); err != nil {
		t.Fatal(err)
	}
	s, err := NewStream(bytes.NewReader(src.Bytes()), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := exportStream(t, toAPR(t, s), ExportOptions{}); !bytes.Equal(got, src.Bytes()) {
		t.Errorf("got %q\nwant %q", got, src.Bytes())
	}
}

// reverseAPR builds an APR whose tensors come in the reverse of the writer's order.
func reverseAPR(t *testing.T, opts ...container.Option) ([]byte, []byte) {
	t.Helper()
	path := filepath.Join(validDir, "big_f32.safetensors")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, path)
	defer s.Close()
	var tensors []tensor.Tensor
	for {
		info, r, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		tensors = append(tensors, tensor.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: b})
	}
	slices.Reverse(tensors)
	hdr := s.Header()
	return toAPR(t, stream.FromTensors(hdr.Type, hdr.Metadata, tensors), opts...), want
}

// TestExportPaths: a file whose order is not the writer's is read by random access
// (plain) or spooled (compressed); both give the crate's bytes.
func TestExportPaths(t *testing.T) {
	plain, want := reverseAPR(t)
	if got := exportFile(t, writeTemp(t, "p.apr", plain), ExportOptions{}); !bytes.Equal(got, want) {
		t.Error("random-access export differs")
	}
	lz4, _ := reverseAPR(t, container.WithCompression(container.CompressLZ4))
	tmp := t.TempDir()
	if got := exportFile(t, writeTemp(t, "c.apr", lz4), ExportOptions{TempDir: tmp}); !bytes.Equal(got, want) {
		t.Error("spooled export of a compressed file differs")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("spool files left behind: %v", left)
	}
}

// TestExportCorruptFile: a flipped byte in a plain tensor is caught on every path.
func TestExportCorruptFile(t *testing.T) {
	big := filepath.Join(validDir, "big_f32.safetensors")
	for _, variant := range []string{"plain", "plain reversed", "lz4 in order"} {
		var b []byte
		switch variant {
		case "plain":
			b = toAPR(t, mustOpen(t, big))
		case "plain reversed":
			b, _ = reverseAPR(t)
		default:
			b = toAPR(t, mustOpen(t, big), container.WithCompression(container.CompressLZ4))
		}
		cf, err := container.NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		e := cf.Entries()[0]
		b[e.DataOffset+e.StoredSize-3] ^= 0x40
		src, err := OpenSource(writeTemp(t, "bad.apr", b))
		if err != nil {
			t.Fatal(err)
		}
		err = Export(io.Discard, src, ExportOptions{})
		src.Close()
		if !errors.Is(err, container.ErrChecksum) || !strings.Contains(err.Error(), e.Name) {
			t.Errorf("%s: got %v, want a checksum error naming %q", variant, err, e.Name)
		}
		s, err := stream.Open(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := Export(io.Discard, StreamSource(s), ExportOptions{}); !errors.Is(err, container.ErrChecksum) {
			t.Errorf("%s, pipe: got %v, want a checksum error", variant, err)
		}
	}
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestExportQuantized: a Q8_0 tensor is dequantized (to its source dtype by default,
// or as asked), never written as block bytes.
func TestExportQuantized(t *testing.T) {
	vals := make([]float32, 2*64)
	for i := range vals {
		vals[i] = float32(math.Sin(float64(i))) * 3
	}
	q := make([]byte, 2*2*34)
	if err := kernels.Quantize(dtype.Q8_0, q, vals); err != nil {
		t.Fatal(err)
	}
	deq := make([]float32, len(vals))
	if err := kernels.Dequantize(dtype.Q8_0, deq, q); err != nil {
		t.Fatal(err)
	}
	tensors := []tensor.Tensor{{Name: "w", DType: dtype.Q8_0, Shape: []int64{2, 64}, Data: q}, tensor.F32("b", []float32{1, 2})}
	for _, tc := range []struct {
		prov map[string]any
		opt  dtype.DType
		want dtype.DType
	}{
		{nil, 0, dtype.F32},
		{map[string]any{ProvDTypes: map[string]any{"w": "BF16"}}, 0, dtype.BF16},
		{map[string]any{ProvDTypes: map[string]any{"w": "BF16"}}, dtype.F16, dtype.F16},
		{nil, dtype.F64, dtype.F64},
	} {
		b := toAPR(t, stream.FromTensors(modeltype.Custom, container.Metadata{Provenance: tc.prov}, tensors))
		piped, _ := exportStream(t, b, ExportOptions{DType: tc.opt}) // out of the output's order: spooled
		for _, out := range [][]byte{exportFile(t, writeTemp(t, "q.apr", b), ExportOptions{DType: tc.opt}), piped} {
			h, err := safetensors.Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			ti, _ := h.Lookup("w")
			if ti.DType != tc.want || !slices.Equal(ti.Shape, []int64{2, 64}) {
				t.Fatalf("w is %v %v, want %v [2 64]", ti.DType, ti.Shape, tc.want)
			}
			got, err := stream.ToF32(tensor.Tensor{Name: "w", DType: ti.DType, Shape: ti.Shape, Data: out[h.DataStart()+ti.Begin : h.DataStart()+ti.End]})
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range f32s(got.Data) {
				w := deq[i]
				switch tc.want {
				case dtype.F16:
					w = kernels.F16BitsToF32(kernels.F32ToF16Bits(w))
				case dtype.BF16:
					w = kernels.BF16BitsToF32(kernels.F32ToBF16Bits(w))
				}
				if v != w {
					t.Fatalf("%v: w[%d] = %v, want %v", tc.want, i, v, w)
				}
			}
		}
	}
	b := toAPR(t, stream.FromTensors(modeltype.Custom, container.Metadata{}, tensors))
	src, err := OpenSource(writeTemp(t, "q.apr", b))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := Export(io.Discard, src, ExportOptions{DType: dtype.I8}); err == nil {
		t.Error("dequantizing to I8 was accepted")
	}
}

// TestCheckpointDir: a sharded checkpoint with config and tokenizer files imports,
// exports as shards with its files, and re-imports to the same tensors.
func TestCheckpointDir(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	dir := t.TempDir()
	var specs []safetensors.TensorSpec
	for i := range 5 {
		specs = append(specs, safetensors.TensorSpec{Name: "layer." + string(rune('a'+i)) + ".weight", DType: dtype.BF16, Shape: []int64{8, 8}})
	}
	plan, err := safetensors.PlanShards(specs, 300, safetensors.Metadata{{Key: "format", Value: "pt"}})
	if err != nil {
		t.Fatal(err)
	}
	fill := func(ti safetensors.TensorInfo) (io.Reader, error) {
		return bytes.NewReader(bytes.Repeat([]byte(ti.Name[6:7]), int(ti.Size()))), nil
	}
	if err := plan.WriteDir(dir, fill); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"config.json": `{"model_type": "llama"}`, "tokenizer.json": `{"version":"1.0"}`, "merges.txt": "a b\n", "README.md": "not kept"}
	for n, c := range files {
		os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644)
	}
	s, err := Open(dir, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := toAPR(t, s)
	aprPath := writeTemp(t, "ck.apr", a)
	out := filepath.Join(t.TempDir(), "out")
	for _, shard := range []int64{300, 0} {
		src, err := OpenSource(aprPath)
		if err != nil {
			t.Fatal(err)
		}
		if !HasFiles(src.Header()) {
			t.Fatal("no hf files kept")
		}
		if err := ExportDir(out, src, ExportOptions{ShardSize: shard}); err != nil {
			t.Fatal(err)
		}
		src.Close()
		names := dirNames(t, out)
		want := []string{"config.json", "merges.txt", "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors", "model.safetensors.index.json", "tokenizer.json"}
		if shard == 0 {
			want = []string{"config.json", "merges.txt", "model.safetensors", "tokenizer.json"}
		}
		if !slices.Equal(names, want) {
			t.Fatalf("shard %d: files %v, want %v", shard, names, want)
		}
		if shard == 300 {
			for _, n := range []string{"model-00001-of-00003.safetensors", "model-00003-of-00003.safetensors", "model.safetensors.index.json"} {
				a, _ := os.ReadFile(filepath.Join(dir, n))
				b, _ := os.ReadFile(filepath.Join(out, n))
				if !bytes.Equal(a, b) {
					t.Errorf("%s differs from the source checkpoint's", n)
				}
			}
		}
		if c, _ := os.ReadFile(filepath.Join(out, "config.json")); string(c) != files["config.json"] {
			t.Errorf("config.json = %q", c)
		}
		s2, err := Open(out, ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b := toAPR(t, s2); !bytes.Equal(stripProv(t, b), stripProv(t, a)) {
			t.Errorf("shard %d: re-import differs", shard)
		}
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// stripProv returns the tensors of an APR file as name:dtype:shape:bytes.
func stripProv(t *testing.T, b []byte) []byte {
	s, err := stream.Open(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for {
		info, r, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		d, _ := io.ReadAll(r)
		out.WriteString(info.Name + info.DType.String())
		out.Write(d)
	}
	return out.Bytes()
}

// TestImportErrors: broken and hostile inputs fail with the crate's error kinds on
// every import path, naming the file.
func TestImportErrors(t *testing.T) {
	good, _ := os.ReadFile(filepath.Join(validDir, "big_f32.safetensors"))
	huge := binary.LittleEndian.AppendUint64(nil, 1<<40)
	cases := []struct {
		name string
		b    []byte
		kind safetensors.Kind
	}{
		{"truncated", good[:len(good)-7], safetensors.MetadataIncompleteBuffer},
		{"header only", good[:100], safetensors.InvalidHeaderLength},
		{"huge header", append(huge, '{', '}'), safetensors.HeaderTooLarge},
		{"seven bytes", good[:7], safetensors.HeaderTooSmall},
		{"trailing", append(bytes.Clone(good), 0), safetensors.MetadataIncompleteBuffer},
	}
	for _, c := range cases {
		p := writeTemp(t, "x.safetensors", c.b)
		if _, err := Open(p, ImportOptions{}); !errors.Is(err, c.kind) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: Open: %v, want %v naming the file", c.name, err, c.kind)
		}
		s, err := NewStream(bytes.NewReader(c.b), ImportOptions{})
		if err == nil {
			err = drain(s)
		}
		if !errors.Is(err, c.kind) {
			t.Errorf("%s: stream: %v, want %v", c.name, err, c.kind)
		}
	}
	// A shard named with a path in the weight map is refused.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, safetensors.IndexFileName), []byte(`{"weight_map":{"w":"../x.safetensors"}}`), 0o644)
	if _, err := Open(dir, ImportOptions{}); !errors.Is(err, safetensors.InvalidIndex) {
		t.Errorf("hostile index: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.safetensors"), ImportOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func drain(s stream.Stream) error {
	for {
		_, r, err := s.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return err
		}
	}
}

// TestHostileFilesMetadata: an APR whose hf_files name escapes the directory or is not
// a plain file name (control characters, invalid UTF-8) is refused.
func TestHostileFilesMetadata(t *testing.T) {
	for _, name := range []string{"../evil.json", "evil\n.json", "evil\x1b[2J.json", "evil\xff.json"} {
		md := container.Metadata{Extra: map[string]any{KeyFiles: map[string]any{name: []byte("x")}}}
		b := toAPR(t, stream.FromTensors(modeltype.Custom, md, []tensor.Tensor{tensor.F32("w", []float32{1})}))
		src, err := OpenSource(writeTemp(t, "h.apr", b))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "out")
		if err := ExportDir(out, src, ExportOptions{}); err == nil || !strings.Contains(err.Error(), "refusing file name") {
			t.Errorf("%q: got %v", name, err)
		}
		src.Close()
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%q: a failed export left its directory", name)
		}
	}
	md := container.Metadata{Extra: map[string]any{KeyMetadata: []any{"not a pair"}}}
	b := toAPR(t, stream.FromTensors(modeltype.Custom, md, nil))
	if s, err := stream.Open(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	} else if err := Export(io.Discard, StreamSource(s), ExportOptions{}); err == nil || !strings.Contains(err.Error(), KeyMetadata) {
		t.Errorf("bad %s: %v", KeyMetadata, err)
	}
}

// TestCrateValidRefused: SafeTensors files the crate accepts that apr refuses, each with
// the reason docs/SAFETENSORS.md gives ("Files the crate accepts and apr refuses"),
// from a stream and from a file (a program leaves no output: its -o is atomic).
func TestCrateValidRefused(t *testing.T) {
	st := func(hdr string, data int) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
		return append(append(b, hdr...), make([]byte, data)...)
	}
	f32 := func(name string) string {
		return `{"` + name + `":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	}
	withMeta := func(k, v string) string {
		return `{"__metadata__":{"` + k + `":"` + v + `"},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	}
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"tensor named \"\"", st(f32(""), 4), "tensor name must be 1 to 4096 bytes, got 0"},
		{"tensor name of 4097 bytes", st(f32(strings.Repeat("n", 4097)), 4), "tensor name must be 1 to 4096 bytes, got 4097"},
		{"unknown apr.model_type", st(withMeta(MetaModelType, "Nope"), 4), `unknown model type "Nope"`},
		{"apr.model_config not an object", st(withMeta(MetaModelConfig, "[1]"), 4), "not a JSON object"},
		{"apr.model_config with NaN", st(withMeta(MetaModelConfig, `{\"x\": NaN}`), 4), "not a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := safetensors.Decode(c.file); err != nil {
				t.Fatalf("not a crate-valid file: %v", err)
			}
			var out bytes.Buffer
			err := func() error {
				s, err := NewStream(bytes.NewReader(c.file), ImportOptions{})
				if err != nil {
					return err
				}
				return stream.Reencode(&out, s, nil, false)
			}()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("stream: %v, want %q", err, c.want)
			}
			p := writeTemp(t, "f.safetensors", c.file)
			out.Reset()
			err = ImportFile(&out, p, ImportOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("file: %v, want %q", err, c.want)
			}
		})
	}
}

// TestExportStreamedFromTable: a piped stream whose tensor table is in the output's
// order is exported without a spool, dequantized tensors included (the table's dtype
// and shape give the output's size before the data), and gives the bytes of the
// export of the same file; a stream whose tensors disagree with its table is refused
// with the tensor named.
func TestExportStreamedFromTable(t *testing.T) {
	vals := make([]float32, 4*32)
	for i := range vals {
		vals[i] = float32(math.Cos(float64(i)))
	}
	q := make([]byte, 4*34)
	if err := kernels.Quantize(dtype.Q8_0, q, vals); err != nil {
		t.Fatal(err)
	}
	// SafeTensors' order: wider dtypes first, then by name; the BF16 output of "a"
	// comes after the F32 "b".
	tensors := []tensor.Tensor{tensor.F32("b", []float32{1, 2}), {Name: "a", DType: dtype.Q8_0, Shape: []int64{4, 32}, Data: q}}
	md := container.Metadata{Provenance: map[string]any{ProvDTypes: map[string]any{"a": "BF16"}}}
	b := toAPR(t, stream.FromTensors(modeltype.Custom, md, tensors))
	piped, why := exportStream(t, b, ExportOptions{})
	if why != "" {
		t.Fatalf("spooled: %s", why)
	}
	if file := exportFile(t, writeTemp(t, "q.apr", b), ExportOptions{}); !bytes.Equal(piped, file) {
		t.Error("the streamed export differs from the file's")
	}
	h, err := safetensors.Decode(piped)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Tensors) != 2 || h.Tensors[1].Name != "a" || h.Tensors[1].DType != dtype.BF16 {
		t.Errorf("tensors %+v, want a as BF16 after b", h.Tensors)
	}
	s, err := stream.Open(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	lie := slices.Clone(s.Header().Table)
	lie[1].Shape = []int64{2, 64}
	err = Export(io.Discard, StreamSource(liar{s, lie}), ExportOptions{TempDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "tensor table says") {
		t.Errorf("stream disagreeing with its table: %v", err)
	}
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

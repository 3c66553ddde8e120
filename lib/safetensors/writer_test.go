package safetensors

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

type specFile struct {
	Metadata map[string]string `json:"metadata"`
	Tensors  map[string]struct {
		DType   string  `json:"dtype"`
		Shape   []int64 `json:"shape"`
		DataHex string  `json:"data_hex"`
	} `json:"tensors"`
}

func validFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testdata, "valid", "*.safetensors"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid fixtures: %v", err)
	}
	return files
}

// TestWriteSpecs writes every valid/NAME.spec.json (the crate's input) and compares
// with the file the crate wrote from it.
func TestWriteSpecs(t *testing.T) {
	for _, path := range validFiles(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".safetensors")
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sb, err := os.ReadFile(strings.TrimSuffix(path, ".safetensors") + ".spec.json")
			if err != nil {
				t.Fatal(err)
			}
			var spec specFile
			if err := json.Unmarshal(sb, &spec); err != nil {
				t.Fatal(err)
			}
			var meta Metadata
			if spec.Metadata != nil {
				meta = Metadata{}
				for k, v := range spec.Metadata {
					meta = append(meta, MetadataEntry{k, v})
				}
			}
			var tensors []Tensor
			for n, ts := range spec.Tensors {
				d, ok := dtype.FromSafeTensors(ts.DType)
				if !ok {
					t.Fatalf("spec dtype %q unknown to lib/dtype", ts.DType)
				}
				data, err := hex.DecodeString(ts.DataHex)
				if err != nil {
					t.Fatal(err)
				}
				tensors = append(tensors, Tensor{TensorSpec{n, d, ts.Shape}, data})
			}
			var got bytes.Buffer
			if err := Encode(&got, meta, tensors); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("written bytes differ from the crate's\n got %q\nwant %q", got.Bytes(), want)
			}
		})
	}
}

// TestRewriteValid reads every crate-written file and writes it again, through the
// file API and through the streaming reader and writer: byte-identical.
func TestRewriteValid(t *testing.T) {
	for _, path := range validFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h := f.Header()
			// Specs in reverse order: the writer must sort them itself.
			specs := make([]TensorSpec, len(h.Tensors))
			for i, ti := range h.Tensors {
				specs[len(specs)-1-i] = ti.Spec()
			}
			var got bytes.Buffer
			w, err := NewWriter(&got, h.Metadata, specs)
			if err != nil {
				t.Fatal(err)
			}
			if w.Header().HeaderSize != h.HeaderSize {
				t.Errorf("planned N=%d, file has %d", w.Header().HeaderSize, h.HeaderSize)
			}
			for _, ti := range w.Header().Tensors {
				d, err := f.Data(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.WriteTensor(ti.Name, d); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("file API rewrite differs\n got %q\nwant %q", got.Bytes(), want)
			}

			// Stream to stream: crate files are already in writer order, so the data
			// can be copied straight through.
			r, err := NewReader(oneByteReader{bytes.NewReader(want)})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			sw, err := NewWriterHeader(&out, r.Header())
			if err != nil {
				t.Fatal(err)
			}
			if err := r.ReadAll(func(_ TensorInfo, tr io.Reader) error {
				_, err := io.Copy(sw, tr)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := sw.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("stream rewrite differs\n got %q\nwant %q", out.Bytes(), want)
			}
		})
	}
}

// TestRewriteAccepted writes every accepted crafted case again and reads it back:
// same tensors, same data, in canonical form (a second rewrite changes nothing).
func TestRewriteAccepted(t *testing.T) {
	for _, v := range loadVerdicts(t) {
		if !v.Accepted {
			continue
		}
		b, err := os.ReadFile(filepath.Join(testdata, v.File))
		if err != nil {
			t.Fatal(err)
		}
		h, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", v.File, err)
		}
		rewrite := func(h *Header, b []byte) []byte {
			var ts []Tensor
			for _, ti := range h.Tensors {
				ts = append(ts, Tensor{ti.Spec(), b[h.DataStart()+ti.Begin : h.DataStart()+ti.End]})
			}
			var out bytes.Buffer
			if err := Encode(&out, h.Metadata, ts); err != nil {
				t.Fatalf("%s: %v", v.File, err)
			}
			return out.Bytes()
		}
		once := rewrite(h, b)
		h2, err := Decode(once)
		if err != nil {
			t.Fatalf("%s: rewritten file rejected: %v", v.File, err)
		}
		if len(h2.Tensors) != len(h.Tensors) {
			t.Errorf("%s: %d tensors after rewrite, %d before", v.File, len(h2.Tensors), len(h.Tensors))
		}
		for _, ti := range h.Tensors {
			t2, ok := h2.Lookup(ti.Name)
			if !ok || t2.DType != ti.DType || len(t2.Shape) != len(ti.Shape) ||
				!bytes.Equal(once[h2.DataStart()+t2.Begin:h2.DataStart()+t2.End], b[h.DataStart()+ti.Begin:h.DataStart()+ti.End]) {
				t.Errorf("%s: tensor %q changed in the rewrite", v.File, ti.Name)
			}
		}
		if twice := rewrite(h2, once); !bytes.Equal(once, twice) {
			t.Errorf("%s: second rewrite differs from the first", v.File)
		}
	}
}

func TestJSONEscaping(t *testing.T) {
	for in, want := range map[string]string{
		"plain":            `"plain"`,
		"q\"b\\":           `"q\"b\\"`,
		"\b\t\n\f\r":       `"\b\t\n\f\r"`,
		"\x00\x01\x1f\x7f": `"\u0000\u0001\u001f` + "\x7f\"",
		"<>&\u2028\u2029é": "\"<>&\u2028\u2029é\"",
		"/":                `"/"`,
	} {
		if got := string(appendJSONString(nil, in)); got != want {
			t.Errorf("escape %q = %s, want %s", in, got, want)
		}
		// And our reader decodes it back.
		p := &jsonParser{b: []byte(want), kind: InvalidHeaderDeserialization}
		if s, err := p.str(); err != nil || s != in {
			t.Errorf("parse %s = %q, %v; want %q", want, s, err, in)
		}
	}
}

func TestEmptyFile(t *testing.T) {
	var b bytes.Buffer
	if err := Encode(&b, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := "\x08\x00\x00\x00\x00\x00\x00\x00{}      "
	if b.String() != want {
		t.Errorf("empty file %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := Encode(&b, Metadata{}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `{"__metadata__":{}}`) {
		t.Errorf("empty non-nil metadata not written: %q", b.String())
	}
	h, err := Decode(b.Bytes())
	if err != nil || h.Metadata == nil || len(h.Metadata) != 0 {
		t.Errorf("empty metadata read back as %#v, %v", h, err)
	}
}

func TestWriterErrors(t *testing.T) {
	f32 := func(name string, shape ...int64) TensorSpec { return TensorSpec{name, dtype.F32, shape} }
	for _, c := range []struct {
		name  string
		meta  Metadata
		specs []TensorSpec
	}{
		{"duplicate name", nil, []TensorSpec{f32("a", 1), f32("a", 2)}},
		{"reserved name", nil, []TensorSpec{f32(MetadataKey, 1)}},
		{"invalid UTF-8 name", nil, []TensorSpec{f32("a\xff", 1)}},
		{"quantized dtype", nil, []TensorSpec{{"q", dtype.Q4_0, []int64{32}}}},
		{"unknown dtype", nil, []TensorSpec{{"q", dtype.DType(0x7777), []int64{1}}}},
		{"negative dim", nil, []TensorSpec{f32("a", -1)}},
		{"overflow", nil, []TensorSpec{f32("a", math.MaxInt64, 2)}},
		{"total overflow", nil, []TensorSpec{f32("a", 1<<60), f32("b", 1<<60)}},
		{"sub-byte remainder", nil, []TensorSpec{{"f", dtype.F4, []int64{3}}}},
		{"duplicate metadata key", Metadata{{"k", "1"}, {"k", "2"}}, nil},
		{"invalid UTF-8 metadata", Metadata{{"k", "\xff"}}, nil},
	} {
		_, err := NewWriter(io.Discard, c.meta, c.specs)
		if !errors.Is(err, InvalidTensor) {
			t.Errorf("%s: got %v, want InvalidTensor", c.name, err)
		}
	}

	var b bytes.Buffer
	w, err := NewWriter(&b, nil, []TensorSpec{f32("a", 2), {"b", dtype.U8, []int64{1}}, {"z", dtype.F16, []int64{0}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensor("b", []byte{1}); !errors.Is(err, InvalidTensor) {
		t.Errorf("out of order: %v", err)
	}
	if err := w.WriteTensor("a", make([]byte, 4)); !errors.Is(err, InvalidTensor) {
		t.Errorf("short data: %v", err)
	}
	if err := w.WriteTensor("a", make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, InvalidTensor) {
		t.Errorf("Close with data missing: %v", err)
	}
	if err := w.WriteTensor("z", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte{1, 2}); !errors.Is(err, InvalidTensor) {
		t.Errorf("write past the end: %v", err)
	}
	if err := w.WriteTensor("b", []byte{7}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := Decode(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{h.Tensors[0].Name, h.Tensors[1].Name, h.Tensors[2].Name}; strings.Join(got, ",") != "a,z,b" {
		t.Errorf("order %v, want a (F32), z (F16), b (U8)", got)
	}
}

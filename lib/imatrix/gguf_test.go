package imatrix

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
)

// The GGUF fixtures (testdata/imatrix/README.md): today's llama-imatrix's GGUF of the
// tiny Llama and the .dat it wrote in the same run, and a GGUF with expert entries.
const (
	ggufFixture = "../../testdata/hf/ref/tiny-llama.imatrix.gguf"
	twinFixture = "../../testdata/hf/ref/tiny-llama.imatrix-twin.dat"
	expertsFile = "../../testdata/imatrix/experts.gguf"
)

// TestGGUFFixture reads llama-imatrix's GGUF: its keys, its entries in name order,
// each value its sum over its count as llama-quantize divides them.
func TestGGUFFixture(t *testing.T) {
	m, err := Load(ggufFixture)
	if err != nil {
		t.Fatal(err)
	}
	if !m.GGUF || len(m.Entries) != 14 || m.Chunks != 20 || m.ChunkSize != 128 || m.Dataset != "calib.txt" ||
		len(m.Datasets) != 1 || m.Names[0] != "blk.0.attn_k.weight" {
		t.Fatalf("gguf %v, %d entries, chunks %d of %d, datasets %q, first %q", m.GGUF, len(m.Entries), m.Chunks, m.ChunkSize, m.Datasets, m.Names[0])
	}
	f, err := gguf.Open(ggufFixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	read := func(name string) []float32 {
		b, err := f.TensorData(f.Header.Tensor(name))
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
		}
		return v
	}
	sums, counts := read("blk.1.ffn_down.weight.in_sum2"), read("blk.1.ffn_down.weight.counts")
	got := m.Entries["blk.1.ffn_down.weight"]
	if len(got) != 512 || len(counts) != 1 || counts[0] != 2560 {
		t.Fatalf("%d values, counts %v", len(got), counts)
	}
	for i, s := range sums {
		if want := s / counts[0]; math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("value %d: %v, want %v / %v", i, got[i], s, counts[0])
		}
	}
}

// TestExperts: 3-D entries, one row per expert, each divided by its own count; an
// expert no token reached gets 1s, as llama-quantize gives it.
func TestExperts(t *testing.T) {
	m, err := Load(expertsFile)
	if err != nil {
		t.Fatal(err)
	}
	e := m.Entries["blk.0.ffn_down_exps.weight"]
	r := m.raw["blk.0.ffn_down_exps.weight"]
	if len(e) != 4*64 || len(r.counts) != 4 || r.counts[1] != 0 || m.Names[0] != "blk.0.attn_q.weight" ||
		len(m.Datasets) != 2 || m.Dataset != "calib-a.txt" || m.ChunkSize != 64 || m.Chunks != 7 {
		t.Fatalf("%d values, counts %v, names %q, datasets %q", len(e), r.counts, m.Names, m.Datasets)
	}
	for i := range 64 {
		if e[64+i] != 1 {
			t.Fatalf("expert 1 (no tokens), value %d: %v, want 1", i, e[64+i])
		}
		if want := r.sums[3*64+i] / 448; e[3*64+i] != want {
			t.Fatalf("expert 3, value %d: %v, want %v", i, e[3*64+i], want)
		}
	}
}

// TestConvert: apr's conversions between the formats are llama-imatrix's byte for
// byte (`llama-imatrix --in-file IN [-c CHUNK] [--output-format dat] -o OUT`; the
// sums are of its outputs, testdata/imatrix/README.md).
func TestConvert(t *testing.T) {
	for _, c := range []struct {
		in    string
		gguf  bool
		chunk int32
		want  string
	}{
		{ggufFixture, true, 512, "5b552e778888f0fa55eba1cdbb3a3af2502582425e076f72e8f93727f3dcdb1e"},
		{ggufFixture, false, 512, "ce8c4bf52a18beda0fcd744b2145d394a54be0c5b4ee6c2755467276453d3bf0"},
		{ggufFixture, false, 128, "0c46190619cb9c6054aafbc38b84558e884da3ca199b95599180564a7bd932a8"}, // = the twin
		{twinFixture, true, 512, "61b84e477e7cd48733781a2b7a457a0e9f91196e96209d72959ae209b7e6d78d"},
		{fixture, true, 512, "d7cd971a7ce924e71332913ccb57f2874bb5ddac19f43633310a047714e9bf7a"}, // b4747's .dat
		{expertsFile, true, 512, "13948af81c90c0c0bc93926aa613d873b9a8b160805d88af21e64d2d8dd1535b"},
		{expertsFile, false, 512, "8dcc45a7a2577026b92756a24ee0c1b71da8b0b413bcc18002b1051a580092a2"},
		{expertsFile, false, 64, "1c919ac6973c4a09ac210fb413a045c509b7d2f7b2e2109215654a648a0144bf"},
	} {
		m, err := Load(c.in)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if c.gguf {
			err = m.WriteGGUF(&b, c.chunk)
		} else {
			err = m.WriteDat(&b, c.chunk)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := hexSum(b.Bytes()); got != c.want {
			t.Errorf("%s to GGUF %v, chunk %d: SHA-256 %s, llama-imatrix wrote %s", c.in, c.gguf, c.chunk, got, c.want)
		}
		if c.in == expertsFile && !c.gguf && c.chunk == 512 { // and back, from apr's own .dat
			back, err := Parse("experts.dat", b.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			var g bytes.Buffer
			if err := back.WriteGGUF(&g, 512); err != nil {
				t.Fatal(err)
			}
			if got, want := hexSum(g.Bytes()), "4689b98a55c65e26f76c48ff395b62a3906c6f010459b7ec26209fdee45ba88a"; got != want {
				t.Errorf("experts .dat to GGUF: SHA-256 %s, llama-imatrix wrote %s", got, want)
			}
		}
	}
	if err := (&Matrix{}).WriteGGUF(&bytes.Buffer{}, 0); err == nil {
		t.Error("chunk size 0 accepted")
	}
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestGGUFErrors: a GGUF that is not llama-imatrix's, or is damaged, is refused naming
// the file and where, from a file and from a pipe.
func TestGGUFErrors(t *testing.T) {
	good, err := os.ReadFile(expertsFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse("e.gguf", good)
	if err != nil {
		t.Fatal(err)
	}
	build := func(edit func(h *gguf.Header, data [][]byte) [][]byte) []byte {
		var b bytes.Buffer
		if err := m.WriteGGUF(&b, 64); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.NewFile(bytes.NewReader(b.Bytes()), int64(b.Len()))
		if err != nil {
			t.Fatal(err)
		}
		h := &f.Header
		var data [][]byte
		for i := range h.Tensors {
			d, _ := f.TensorData(i)
			data = append(data, d)
		}
		data = edit(h, data)
		for i := range h.Tensors {
			h.Tensors[i].Offset = 0
		}
		h.Alignment, h.InfoEnd, h.DataOffset = 0, 0, 0
		if err := h.Layout(); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		w, err := gguf.NewWriter(&out, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range data {
			if err := w.WriteTensor(d); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	dropKey := func(key string) func(h *gguf.Header, d [][]byte) [][]byte {
		return func(h *gguf.Header, d [][]byte) [][]byte {
			for i, kv := range h.KVs {
				if kv.Key == key {
					h.KVs = append(h.KVs[:i], h.KVs[i+1:]...)
				}
			}
			return d
		}
	}
	nan := math.Float32bits(float32(math.NaN()))
	// llama-imatrix's file ends with the last tensor's padding, which llama-quantize
	// reads (gguf_init_from_file loads the whole data section): cut, it refuses the file
	fixture, err := os.ReadFile(ggufFixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated header", good[:20], "e.gguf: gguf: offset "},
		{"truncated data", good[:len(good)-40], `"blk.0.attn_q.weight.in_sum2": 32 values`},
		{"last byte cut", fixture[:len(fixture)-1], fmt.Sprintf("e.gguf: offset %d: malformed importance matrix: the file ends inside its data section, which runs to offset %d", len(fixture)-1, len(fixture))},
		{"no chunk size", build(dropKey(KeyChunkSize)), "e.gguf: GGUF header: malformed importance matrix: no key imatrix.chunk_size"},
		{"no datasets", build(dropKey(KeyDatasets)), "no key imatrix.datasets"},
		{"counts alone", build(func(h *gguf.Header, d [][]byte) [][]byte {
			h.Tensors[0].Name = "other"
			return d
		}), `entry "blk.0.attn_q.weight" has only one of`},
		{"F16 sums", build(func(h *gguf.Header, d [][]byte) [][]byte {
			h.Tensors[0].Type = 1
			d[0] = d[0][:len(d[0])/2]
			return d
		}), `tensor "blk.0.attn_q.weight.in_sum2" is F16`},
		{"NaN sum", build(func(h *gguf.Header, d [][]byte) [][]byte {
			d[0] = bytes.Clone(d[0])
			d[0][0], d[0][1], d[0][2], d[0][3] = byte(nan), byte(nan>>8), byte(nan>>16), byte(nan>>24)
			return d
		}), "value 0 is NaN"},
		{"negative count", build(func(h *gguf.Header, d [][]byte) [][]byte {
			d[1] = []byte{0, 0, 0x80, 0xbf} // -1
			return d
		}), `entry "blk.0.attn_q.weight": count 0 is -1`},
		{"rows do not divide", build(func(h *gguf.Header, d [][]byte) [][]byte {
			h.Tensors[3].Dims = []int64{1, 3}
			d[3] = d[3][:12]
			return d
		}), "256 sums are not a whole number of rows for its 3 counts"},
		{"no entries", build(func(h *gguf.Header, d [][]byte) [][]byte {
			h.Tensors = h.Tensors[:0]
			return nil
		}), "no entries"},
	} {
		for _, pipe := range []bool{false, true} {
			var err error
			if pipe {
				_, err = Read("e.gguf", bytes.NewReader(c.b), -1)
			} else {
				_, err = Parse("e.gguf", c.b)
			}
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "e.gguf: ") {
				t.Errorf("%s (pipe %v): %v; want %q", c.name, pipe, err, c.want)
			}
		}
	}
}

// FuzzParseGGUF: any input that starts as a GGUF is read or refused naming the file,
// never a panic, and what is read converts both ways.
func FuzzParseGGUF(f *testing.F) {
	for _, p := range []string{expertsFile, ggufFixture} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse("fuzz.gguf", b)
		if err != nil {
			if !errors.Is(err, ErrFormat) || !strings.HasPrefix(err.Error(), "fuzz.gguf: ") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if len(m.Names) != len(m.Entries) {
			t.Fatalf("%d names, %d entries", len(m.Names), len(m.Entries))
		}
		var g, d bytes.Buffer
		if err := m.WriteDat(&d, 512); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteGGUF(&g, 512); err != nil && !strings.Contains(err.Error(), "tensor names") {
			t.Fatal(err)
		}
	})
}

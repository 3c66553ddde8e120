package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
)

// The sums recorded in testdata/quant/README.md: a changed golden fails first.
var goldenSHA = map[string]string{
	"rows.f32":          "6b942ed1aa6f16685667cc787117c38a5e3ea5d5803550340f910008904a7eeb",
	"nvfp4.bin":         "c822b101babaa220532197ad368c5d028455fc65c276230f46005f183a030dd0",
	"q1_0.bin":          "9fd0744227d22cf9f5452c956d76df4edd973020cca03a5d41f42c3498d125ad",
	"q2_0.bin":          "dd5085c1364e009763a8e3d56b73a62e17562a9a846d861acf07e28bb572e0bb",
	"nvfp4.dequant.f32": "f4ea2cfb16d148be001b4c2687e731b9a73b4cc867190a99d82495b7f0b4c2b6",
	"q1_0.dequant.f32":  "bf99e2205cc2cbf195f86d5b8c8c0adad73cd15bd45817678f9bfa2bd96a0080",
	"q2_0.dequant.f32":  "51a899eab6be2ec7c2f82c9c9a9d15a2b68e3bf8ad9fced28e51dbd7759a9f89",
}

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "quant", name))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != goldenSHA[name] {
		t.Fatalf("%s: sha256 %x, testdata/quant/README.md records %s", name, sum, goldenSHA[name])
	}
	return b
}

func f32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// tensorBytes reads one tensor of a model, verifying every checksum.
func tensorBytes(t *testing.T, b []byte, name string) (dtype.DType, []byte) {
	t.Helper()
	r, err := container.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var d dtype.DType
	var data []byte
	for {
		tt, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(tt)
		if err != nil {
			t.Fatal(err)
		}
		if tt.Name == name {
			d, data = tt.DType, got
		}
	}
	return d, data
}

// apr-quant nvfp4, q1_0 and q2_0 write ggml's bytes (the goldens made by libggml from
// rows.f32), from a file (mapped) and from stdin; --stats reports their size and
// ggml's error; apr-quant f32 gives back ggml's decoded values. NVFP4 skips the two
// golden rows with values beyond 2688, which apr refuses (lib/quant tests that).
func TestNewTypesGolden(t *testing.T) {
	const cols = 256
	rows := f32s(golden(t, "rows.f32"))
	for _, g := range []struct {
		typ, file, deq string
		d              dtype.DType
		bpw            float64
		skip           map[int]bool
	}{
		{"nvfp4", "nvfp4.bin", "nvfp4.dequant.f32", dtype.NVFP4, 4.5, map[int]bool{83: true, 86: true}},
		{"q1_0", "q1_0.bin", "q1_0.dequant.f32", dtype.Q1_0, 1.125, nil},
		{"Q2_0", "q2_0.bin", "q2_0.dequant.f32", dtype.Q2_0, 2.25, nil},
	} {
		q, deq := golden(t, g.file), f32s(golden(t, g.deq))
		rowBytes := len(q) / (len(rows) / cols)
		var x, back []float32
		var want []byte
		for r := range len(rows) / cols {
			if !g.skip[r] {
				x = append(x, rows[r*cols:(r+1)*cols]...)
				back = append(back, deq[r*cols:(r+1)*cols]...)
				want = append(want, q[r*rowBytes:(r+1)*rowBytes]...)
			}
		}
		n := int64(len(x) / cols)
		model := writeModel(t, tensor{"blk.0.ffn_up.weight", []int64{n, cols}, x}, tensor{"blk.0.ffn_norm.weight", []int64{cols}, normal(12, cols)})
		dir := t.TempDir()
		in, out, js := filepath.Join(dir, "in.apr"), filepath.Join(dir, "out.apr"), filepath.Join(dir, "stats.json")
		if err := os.WriteFile(in, model, 0o644); err != nil {
			t.Fatal(err)
		}
		r := runCLI(nil, g.typ, in, "-o", out, "--json", "--stats-file", js)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("%s: exit %d: %s", g.typ, r.code, r.stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if d, data := tensorBytes(t, b, "blk.0.ffn_up.weight"); d != g.d || !bytes.Equal(data, want) {
			t.Fatalf("%s: %v, bytes differ from ggml's (%s)", g.typ, d, g.file)
		}
		if d, _ := tensorBytes(t, b, "blk.0.ffn_norm.weight"); d != dtype.F32 {
			t.Fatalf("%s: the norm became %v", g.typ, d)
		}
		if p := runCLI(model, g.typ, "-j", "1"); p.code != 0 || !bytes.Equal(tensorOf(t, p.stdout), want) {
			t.Fatalf("%s through a pipe: exit %d %s", g.typ, p.code, p.stderr)
		}

		// --stats: ggml's error, the type's size.
		var rep struct {
			Type    string
			Tensors []struct {
				Name          string
				To            string
				BitsPerWeight float64  `json:"bits_per_weight"`
				BytesAfter    int64    `json:"bytes_after"`
				RMSError      *float64 `json:"rms_error"`
				MaxError      *float64 `json:"max_error"`
			}
			Totals struct {
				Converted int
				Types     map[string]int
			}
		}
		sj, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(sj, &rep); err != nil {
			t.Fatal(err)
		}
		var ss, m float64
		for i, v := range x {
			e := float64(back[i]) - float64(v)
			ss += e * e
			m = max(m, math.Abs(e))
		}
		rms := math.Sqrt(ss / float64(len(x)))
		e := rep.Tensors[0]
		if rep.Type != g.d.String() || e.Name != "blk.0.ffn_up.weight" || e.To != g.d.String() || e.BitsPerWeight != g.bpw ||
			e.BytesAfter != int64(len(want)) || e.RMSError == nil || math.Abs(*e.RMSError-rms) > 1e-12*rms || *e.MaxError != m ||
			rep.Totals.Converted != 1 || rep.Totals.Types[g.d.String()] != 1 {
			t.Fatalf("%s: report %s; ggml's values give rms %v, max %v", g.typ, sj, rms, m)
		}
		tab := runCLI(model, g.typ, "--stats")
		for _, s := range []string{"blk.0.ffn_up.weight", fmt.Sprintf("%dx256", n), g.d.String(), fmt.Sprintf("%.2f", g.bpw), "2 tensors, 1 converted"} {
			if tab.code != 0 || !strings.Contains(tab.stderr, s) {
				t.Fatalf("%s --stats: exit %d, table lacks %q:\n%s", g.typ, tab.code, s, tab.stderr)
			}
		}

		// Dequantize: ggml's decoded values, bit for bit; the quantized flag goes.
		f := runCLI(b, "f32")
		if f.code != 0 {
			t.Fatalf("%s -> f32: %s", g.typ, f.stderr)
		}
		d, data := tensorBytes(t, []byte(f.stdout), "blk.0.ffn_up.weight")
		if _, h := dtypes(t, []byte(f.stdout)); d != dtype.F32 || !bytes.Equal(data, f32Bytes(back)) || h.Flags&container.FlagQuantized != 0 {
			t.Fatalf("%s -> f32: %v, values differ from ggml's (%s), flags %v", g.typ, d, g.deq, h.Flags)
		}
	}
}

func tensorOf(t *testing.T, model string) []byte {
	_, data := tensorBytes(t, []byte(model), "blk.0.ffn_up.weight")
	return data
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

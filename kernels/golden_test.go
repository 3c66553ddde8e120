package kernels

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

const goldenDir = "../testdata/quant"

// goldenSHA are the sha256 sums recorded in testdata/quant/README.md; a test
// that reads a changed file would prove nothing, so it fails first.
var goldenSHA = map[string]string{
	"rows.f32":              "6b942ed1aa6f16685667cc787117c38a5e3ea5d5803550340f910008904a7eeb",
	"rows_index.json":       "ff8aa9c6032e99c42254f86c8da70dc82d4ff731fae8cad2cbd68de80fd42686",
	"q8_0.bin":              "dee395fc576eef03c1685d603ff580d05bd1a12392cacbbee2abdd9df3a0246d",
	"q4_0.bin":              "2eff966f2212f1d948e78f6454cd91d1b7d2da42d9ef85643ba0e6370785172c",
	"q4_1.bin":              "9ed538b3c70a163c64775321a2ef95f0333a6d93c9f8046bbd6de68efaf99884",
	"q5_0.bin":              "d942cca18299deb2d6b78f58b77be96770218ba44bfe1dc6a116b611c6ed1d85",
	"q5_1.bin":              "98daf28f321757cf738825cf01b536ab481a129d85a00b1257be9c80e5601525",
	"q2_K.bin":              "58e112dc203303d96c71051c13f8dabdbb2dd6b47116766eac32689fc6836c1a",
	"q3_K.bin":              "11b6f12af185b5a5dedcf965d5a0d71cecb0d6b5d056807719930b2a8a2c5bf1",
	"q4_K.bin":              "6c2521c9ca000c495ec8f8e3bb81be0697184bd9b5225969f45ca7e8076d99a8",
	"q5_K.bin":              "ed185a07e19303a77c0c816129d7b5c95b7fcc7f3797aa191d850357d449e31b",
	"q6_K.bin":              "e402dacdb61672ae670d09cab004fbf6a1964b7506ea27ac2a5ec4d715c5979b",
	"f16.bin":               "48a96219f92e341b978f06fc2aea931bfff5d5de0751e1d427125d61408b2d50",
	"bf16.bin":              "90cfd0195ce146b28de36df19054be184cb9658e8f3cd0840dc2a3f3f2a1c5a2",
	"convert_edge.f32":      "644d11fbab3a074d7ff0ec1359a19f91a61207edb5c8eebbdbe302ec5ca77841",
	"convert_edge.f16.bin":  "9a5f737afac449a41c1ff0d251229f6353b41fe750f5886302cb4a389971107b",
	"convert_edge.bf16.bin": "b9fcdefb423afe3a4626c46bfe79db230bec7f0c16484098012d3a1f9382dae0",
	"nvfp4.bin":             "c822b101babaa220532197ad368c5d028455fc65c276230f46005f183a030dd0",
	"q1_0.bin":              "9fd0744227d22cf9f5452c956d76df4edd973020cca03a5d41f42c3498d125ad",
	"q2_0.bin":              "dd5085c1364e009763a8e3d56b73a62e17562a9a846d861acf07e28bb572e0bb",
	"nvfp4.dequant.f32":     "f4ea2cfb16d148be001b4c2687e731b9a73b4cc867190a99d82495b7f0b4c2b6",
	"q1_0.dequant.f32":      "bf99e2205cc2cbf195f86d5b8c8c0adad73cd15bd45817678f9bfa2bd96a0080",
	"q2_0.dequant.f32":      "51a899eab6be2ec7c2f82c9c9a9d15a2b68e3bf8ad9fced28e51dbd7759a9f89",
	"mxfp4.bin":             "ef5074b53ecba352c113d6efe8c62430b7f55f5b9e4f3e707cf55413dd5e33a8",
	"mxfp4_edge.f32":        "fb44d8ef018dae75c079a45d8010bf79c45355da326fbdb466b5093f8bbc074e",
	"mxfp4_edge.bin":        "afb79b43a941eec6b757362e3db5d280c8c0ecbe748151b6adb9c8d8fc91d10f",
	"mxfp4.dequant.f32":     "f651bd0fb70f21658d135850e3adb6b0a3ca4207b94d403575ec6754190197e1",
}

const (
	goldenRows = 106
	goldenCols = 256
)

func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatalf("golden file: %v", err)
	}
	sum := sha256.Sum256(b)
	if want := goldenSHA[name]; hex.EncodeToString(sum[:]) != want {
		t.Fatalf("%s: sha256 %x, README records %s", name, sum, want)
	}
	return b
}

func floatsLE(b []byte) []float32 {
	f := make([]float32, len(b)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return f
}

func goldenInput(t testing.TB) ([]float32, []string) {
	t.Helper()
	x := floatsLE(readGolden(t, "rows.f32"))
	if len(x) != goldenRows*goldenCols {
		t.Fatalf("rows.f32 has %d values, want %d", len(x), goldenRows*goldenCols)
	}
	var desc []string
	if err := json.Unmarshal(readGolden(t, "rows_index.json"), &desc); err != nil || len(desc) != goldenRows {
		t.Fatalf("rows_index.json: %v (%d rows)", err, len(desc))
	}
	return x, desc
}

var goldenTypes = []struct {
	file string
	t    dtype.DType
}{
	{"q8_0.bin", dtype.Q8_0},
	{"q4_0.bin", dtype.Q4_0},
	{"q4_1.bin", dtype.Q4_1},
	{"q5_0.bin", dtype.Q5_0},
	{"q5_1.bin", dtype.Q5_1},
	{"q2_K.bin", dtype.Q2_K},
	{"q3_K.bin", dtype.Q3_K},
	{"q4_K.bin", dtype.Q4_K},
	{"q5_K.bin", dtype.Q5_K},
	{"q6_K.bin", dtype.Q6_K},
	{"f16.bin", dtype.F16},
	{"bf16.bin", dtype.BF16},
}

// ggmlDequantGoldens are the types whose goldens hold ggml's dequantization too
// (testdata/quant/README.md, "The newest types"): their quantized bytes are checked
// with the others, their decoding against ggml's values.
var ggmlDequantGoldens = []struct {
	file, deq string
	t         dtype.DType
}{
	{"nvfp4.bin", "nvfp4.dequant.f32", dtype.NVFP4},
	{"q1_0.bin", "q1_0.dequant.f32", dtype.Q1_0},
	{"q2_0.bin", "q2_0.dequant.f32", dtype.Q2_0},
	{"mxfp4.bin", "mxfp4.dequant.f32", dtype.MXFP4},
}

// TestGoldenDequantizeGGML checks our decoding of ggml's bytes against ggml's own,
// value by value, bit for bit.
func TestGoldenDequantizeGGML(t *testing.T) {
	for _, g := range ggmlDequantGoldens {
		want := floatsLE(readGolden(t, g.deq))
		got := make([]float32, len(want))
		if err := Dequantize(g.t, got, readGolden(t, g.file)); err != nil {
			t.Fatalf("%v: %v", g.t, err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v: value %d (row %d): %v, ggml gives %v", g.t, i, i/goldenCols, got[i], want[i])
			}
		}
	}
}

// TestGoldenQuantize checks our bytes against ggml's for every golden type,
// row by row (so a failure names the crafted row), and for the whole file in
// one call.
func TestGoldenQuantize(t *testing.T) {
	x, desc := goldenInput(t)
	types := goldenTypes
	for _, g := range ggmlDequantGoldens {
		types = append(types, struct {
			file string
			t    dtype.DType
		}{g.file, g.t})
	}
	for _, g := range types {
		t.Run(g.t.String(), func(t *testing.T) {
			want := readGolden(t, g.file)
			rowBytes := goldenCols / g.t.Info().BlockElems * g.t.Info().BlockBytes
			if len(want) != goldenRows*rowBytes {
				t.Fatalf("%s has %d bytes, want %d", g.file, len(want), goldenRows*rowBytes)
			}
			got := make([]byte, rowBytes)
			bad := 0
			for r := range goldenRows {
				if err := Quantize(g.t, got, x[r*goldenCols:(r+1)*goldenCols]); err != nil {
					t.Fatal(err)
				}
				w := want[r*rowBytes : (r+1)*rowBytes]
				if !bytes.Equal(got, w) {
					bad++
					if bad <= 5 {
						i := firstDiff(got, w)
						t.Errorf("row %d (%s): first difference at byte %d (block %d): got %#02x want %#02x",
							r, desc[r], i, i/g.t.Info().BlockBytes, got[i], w[i])
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d rows differ", bad, goldenRows)
			}
			all := make([]byte, len(want))
			if err := Quantize(g.t, all, x); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(all, want) {
				t.Fatalf("whole-file quantization differs at byte %d", firstDiff(all, want))
			}
		})
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

func u16sLE(b []byte) []uint16 {
	h := make([]uint16, len(b)/2)
	for i := range h {
		h[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return h
}

// TestConvertEdge checks the f16 and bf16 conversions on the 64 edge values
// (NaNs, infinities, ties, subnormals, overflow) against ggml's row converters.
func TestConvertEdge(t *testing.T) {
	raw := readGolden(t, "convert_edge.f32")
	src := floatsLE(raw)
	for _, c := range []struct {
		file string
		conv func([]uint16, []float32)
	}{
		{"convert_edge.f16.bin", F32ToF16},
		{"convert_edge.bf16.bin", F32ToBF16},
	} {
		want := u16sLE(readGolden(t, c.file))
		got := make([]uint16, len(src))
		c.conv(got, src)
		for i := range src {
			if got[i] != want[i] {
				t.Errorf("%s #%d: f32 %#08x -> %#04x, want %#04x", c.file, i, math.Float32bits(src[i]), got[i], want[i])
			}
		}
	}
}

// TestHalfRoundTrip checks that f16 -> f32 -> f16 and bf16 -> f32 -> bf16 are
// the identity for every one of the 65536 codes (NaNs: a NaN with the same
// sign), and that f16 -> f32 is exact against math/big-free arithmetic.
func TestHalfRoundTrip(t *testing.T) {
	for c := range 1 << 16 {
		h := uint16(c)
		f := F16BitsToF32(h)
		exp, man := int(h>>10&0x1f), float64(h&0x3ff)
		var want float64
		switch {
		case exp == 0x1f && man == 0:
			want = math.Inf(1)
		case exp == 0x1f:
			want = math.NaN()
		case exp == 0:
			want = man * math.Ldexp(1, -24)
		default:
			want = (1 + man/1024) * math.Ldexp(1, exp-15)
		}
		if h&0x8000 != 0 {
			want = -want
		}
		if math.IsNaN(want) {
			if !math.IsNaN(float64(f)) || math.Signbit(float64(f)) != (h&0x8000 != 0) {
				t.Fatalf("f16 %#04x -> %v, want NaN with the same sign", h, f)
			}
			if back := F32ToF16Bits(f); back != h&0x8000|0x7e00 {
				t.Fatalf("f16 NaN %#04x -> %#04x, want %#04x", h, back, h&0x8000|0x7e00)
			}
		} else {
			if float64(f) != want || math.Signbit(float64(f)) != math.Signbit(want) {
				t.Fatalf("f16 %#04x -> %v, want %v", h, f, want)
			}
			if back := F32ToF16Bits(f); back != h {
				t.Fatalf("f16 %#04x -> %v -> %#04x", h, f, back)
			}
		}
		bf := BF16BitsToF32(h)
		back := F32ToBF16Bits(bf)
		if bf != bf { // NaN: quiet bit forced
			if back != h|0x40 {
				t.Fatalf("bf16 NaN %#04x -> %#04x", h, back)
			}
		} else if back != h {
			t.Fatalf("bf16 %#04x -> %v -> %#04x", h, bf, back)
		}
	}
}

// TestGoldenDequantize checks that decoding ggml's golden bytes reproduces
// ggml's dequantization formula for every golden type, and stays within the
// type's error bound of the source rows. The fixtures carry no dequantized
// data, so the formula is checked independently here (a slow per-element
// decode written from the block layout in the README).
func TestGoldenDequantize(t *testing.T) {
	x, desc := goldenInput(t)
	for _, g := range goldenTypes {
		t.Run(g.t.String(), func(t *testing.T) {
			q := readGolden(t, g.file)
			got := make([]float32, len(x))
			if err := Dequantize(g.t, got, q); err != nil {
				t.Fatal(err)
			}
			info := g.t.Info()
			for i := range x {
				blk := q[i/info.BlockElems*info.BlockBytes:][:info.BlockBytes]
				want, ok := slowDecode(g.t, blk, i%info.BlockElems)
				if !ok {
					t.Fatalf("no slow decoder for %v", g.t)
				}
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("element %d (row %d): got %v want %v", i, i/goldenCols, got[i], want)
				}
			}
			// Error bound: within the rounding step of its block (per row
			// relative to the row's max), and exact for f16 round trips.
			for r := range goldenRows {
				row, dq := x[r*goldenCols:(r+1)*goldenCols], got[r*goldenCols:(r+1)*goldenCols]
				var amax, emax float64
				for i := range row {
					amax = math.Max(amax, math.Abs(float64(row[i])))
					emax = math.Max(emax, math.Abs(float64(row[i]-dq[i])))
				}
				if amax > 65504 && g.t != dtype.BF16 {
					continue // scales beyond f16 range are out of the quantizers' domain
				}
				// The f16 scale itself is rounded to a multiple of 2^-24
				// when it is tiny (rows 87, 88), which costs up to that
				// step times the largest scale·quant product.
				if lim := errorBound(g.t)*amax + scaleSlack(g.t)*0x1p-24; emax > lim {
					t.Errorf("row %d (%s): max error %g > %g (max |x| %g)", r, desc[r], emax, lim, amax)
				}
			}
		})
	}
}

// scaleSlack bounds |q|·sub-scale, the factor by which an f16 scale's
// rounding error can grow in a dequantized value.
func scaleSlack(t dtype.DType) float64 {
	switch t {
	case dtype.F16:
		return 0.5 // half-subnormal spacing
	case dtype.BF16:
		return 0
	case dtype.Q8_0:
		return 128
	case dtype.Q6_K:
		return 128 * 32
	case dtype.Q4_K, dtype.Q5_K:
		return 64 * 32 * 2
	}
	return 64 * 16
}

// errorBound is a loose per-row bound of max|x - deq(q(x))| / max|x|.
func errorBound(t dtype.DType) float64 {
	switch t {
	case dtype.F16:
		return 1.0 / 1024
	case dtype.BF16:
		return 1.0 / 128
	case dtype.Q8_0:
		return 1.0 / 127
	case dtype.Q6_K:
		return 0.08
	case dtype.Q5_0, dtype.Q5_1, dtype.Q5_K:
		return 0.1
	case dtype.Q4_0, dtype.Q4_1, dtype.Q4_K:
		return 0.2
	case dtype.Q3_K:
		return 0.4
	}
	return 0.7
}

// TestGoldenMXFP4Edges checks ggml's MXFP4 quantizer on the block maxima where
// its exponent is delicate: a few ulps around every power of two from 2^-149 to
// 2^127 (log2f's rounding, the undefined negative conversion below 2^-125).
func TestGoldenMXFP4Edges(t *testing.T) {
	x := floatsLE(readGolden(t, "mxfp4_edge.f32"))
	want := readGolden(t, "mxfp4_edge.bin")
	got := make([]byte, len(want))
	if err := Quantize(dtype.MXFP4, got, x); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < len(want); b += 17 {
		if !bytes.Equal(got[b:b+17], want[b:b+17]) {
			t.Fatalf("block %d (max %g): % x, ggml writes % x", b/17, maxAbs(x[b/17*32:b/17*32+32]), got[b:b+17], want[b:b+17])
		}
	}
}

func maxAbs(x []float32) float32 {
	var m float32
	for _, v := range x {
		m = max(m, abs32(v))
	}
	return m
}

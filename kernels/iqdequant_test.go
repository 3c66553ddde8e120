package kernels

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

var iqTypes = []dtype.DType{dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ2_S, dtype.IQ3_XXS, dtype.IQ3_S, dtype.IQ1_S, dtype.IQ1_M}

// TestIQGrids checks the codebooks derived from the bitmaps against ggml's
// tables: the SHA-256 of each table as ggml holds it in memory (uint64 or
// uint32 entries, little-endian), computed from ggml-common.h
// (ggml-org/ggml d99724f), and a few entries quoted from it.
func TestIQGrids(t *testing.T) {
	grids := []struct {
		name   string
		bytes  []byte
		sha256 string
		spot   map[int]uint64
	}{
		{"iq2xxs_grid", gridBytes8(iq2xxsGrid), "05826b5d3e472a3a78f196be62ac78acf81df0f909626e12ab9fa2a5d490dd54",
			map[int]uint64{0: 0x0808080808080808, 1: 0x080808080808082b, 85: 0x0819081919192b2b, 200: 0x192b081908080808, 255: 0x2b2b2b1908081908}},
		{"iq2xs_grid", gridBytes8(iq2xsGrid), "06e47aaca60b4dc1d9b5a3f34540437058a6b142b4d7a59d5ded769b4d1bf1de",
			map[int]uint64{170: 0x0819082b08190808, 300: 0x1908190808191908, 511: 0x2b2b2b2b2b2b2b2b}},
		{"iq2s_grid", gridBytes8(iq2sGrid), "e1aa1473412b0552c2174c30ef22ab4073f6a181b85a17056e8249bd2932fd88",
			map[int]uint64{5: 0x0808080808190819, 341: 0x08192b080808192b, 600: 0x1908192b08190819, 1023: 0x2b2b2b2b2b2b2b2b}},
		{"iq1s_grid", gridBytes8(iq1sGrid), "07540ffc1aeaf6ad4d97e96b0fcc765aae39671d4ae4a27bbd0e796fde167c6a",
			map[int]uint64{0: 0xffffffffffffffff, 5: 0xffffffffff00ff00, 682: 0x00ffff01ff000001, 1234: 0x0001ff00ff01ff01, 2047: 0x0101010101010101}},
		{"iq3xxs_grid", gridBytes4(iq3xxsGrid), "46e35f5a997efdee6c99ce57854c8a0d4f0ff8ca57e5e8a60c0793ea580acf5d",
			map[int]uint64{0: 0x04040404, 85: 0x0c1c2434, 255: 0x3e341c04}},
		{"iq3s_grid", gridBytes4(iq3sGrid), "bd1af4945a1717c65610b0284e4628b9a1ba3b306fae3a06f6e5f597356e349f",
			map[int]uint64{7: 0x01010305, 170: 0x03090707, 300: 0x07030503, 511: 0x0f0f0101}},
	}
	for _, g := range grids {
		sum := sha256.Sum256(g.bytes)
		if got := hex.EncodeToString(sum[:]); got != g.sha256 {
			t.Errorf("%s: sha256 %s, ggml's table has %s", g.name, got, g.sha256)
		}
		width := 8
		if g.name[:3] == "iq3" {
			width = 4
		}
		for i, want := range g.spot {
			var b [8]byte
			copy(b[:], g.bytes[i*width:(i+1)*width])
			if got := binary.LittleEndian.Uint64(b[:]); got != want {
				t.Errorf("%s[%d] = %#x, ggml has %#x", g.name, i, got, want)
			}
		}
	}
}

func gridBytes8(g [][8]int8) []byte {
	var b []byte
	for _, p := range g {
		for _, v := range p {
			b = append(b, byte(v))
		}
	}
	return b
}

func gridBytes4(g [][4]int8) []byte {
	var b []byte
	for _, p := range g {
		for _, v := range p {
			b = append(b, byte(v))
		}
	}
	return b
}

// TestIQEvenSigns checks the implied eighth sign against values quoted from
// ggml's ksigns_iq2xs, and the rule for every entry.
func TestIQEvenSigns(t *testing.T) {
	for i, want := range map[int]uint8{0: 0, 1: 129, 3: 3, 7: 135, 42: 170, 64: 192, 126: 126, 127: 255} {
		if evenSigns[i] != want {
			t.Errorf("evenSigns[%d] = %d, ggml has %d", i, evenSigns[i], want)
		}
	}
	for i, s := range evenSigns {
		if int(s&127) != i {
			t.Errorf("evenSigns[%d] = %#x: low bits changed", i, s)
		}
		if n := popcount8(s); n%2 != 0 {
			t.Errorf("evenSigns[%d] = %#x has %d sign bits, want an even number", i, s, n)
		}
	}
}

func popcount8(b uint8) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// group is the expected content of 8 consecutive values: scale·(point+delta),
// negated where signs has a bit set. point holds ggml's grid entries as the
// format stores them (one uint64, or two uint32 for the IQ3 types).
type group struct {
	off   int
	scale float32
	point uint64
	signs uint8
	delta float32
}

func checkGroups(t *testing.T, typ dtype.DType, block []byte, groups []group) {
	t.Helper()
	y := make([]float32, qkK)
	if err := Dequantize(typ, y, block); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for j := range 8 {
			want := g.scale * (float32(int8(g.point>>(8*j))) + g.delta)
			if g.signs>>j&1 != 0 {
				want = -want
			}
			if got := y[g.off+j]; got != want {
				t.Errorf("%v: value %d = %v, want %v", typ, g.off+j, got, want)
			}
		}
	}
}

// iq3 joins two 4-value IQ3 grid entries into one group of 8.
func iq3(lo, hi uint64) uint64 { return lo | hi<<32 }

// The block tests build one block field by field as the format defines it and
// check the values, with grid entries quoted from ggml-common.h. The fields
// exercise the bit positions: high index bits, both scale nibbles, sign bits
// and the implied eighth sign.

func TestIQ2_XXSBlock(t *testing.T) {
	b := make([]byte, iq2xxsBytes)
	binary.LittleEndian.PutUint16(b, 0x4000) // d = 2
	// Sub-block 1: grid indices 1, 85, 200, 255; sign groups 0x01, 0, 0x7f,
	// 0x40; scale 5: db = 2·5.5/4.
	copy(b[2+8:], []byte{1, 85, 200, 255})
	binary.LittleEndian.PutUint32(b[2+8+4:], 5<<28|0x01|0x00<<7|0x7f<<14|0x40<<21)
	// Sub-block 7: index 0, scale 15, signs 0x03.
	binary.LittleEndian.PutUint32(b[2+56+4:], 15<<28|0x03)
	checkGroups(t, dtype.IQ2_XXS, b, []group{
		{32, 2.75, 0x080808080808082b, 0x81, 0},
		{40, 2.75, 0x0819081919192b2b, 0x00, 0},
		{48, 2.75, 0x192b081908080808, 0xff, 0},
		{56, 2.75, 0x2b2b2b1908081908, 0xc0, 0},
		{224, 7.75, 0x0808080808080808, 0x03, 0},
		{0, 0.25, 0x0808080808080808, 0, 0}, // all fields zero: db = 2·0.5/4
	})
}

func TestIQ2_XSBlock(t *testing.T) {
	b := make([]byte, iq2xsBytes)
	binary.LittleEndian.PutUint16(b, 0x3800) // d = 0.5
	// Sub-block 2: 9-bit index and 7 sign bits per group; scales 3 (first
	// two groups) and 9 (last two).
	for l, q := range []uint16{170 | 0x01<<9, 300, 511 | 0x7f<<9, 300 | 0x2a<<9} {
		binary.LittleEndian.PutUint16(b[2+16+2*l:], q)
	}
	b[66+2] = 0x93
	checkGroups(t, dtype.IQ2_XS, b, []group{
		{64, 0.4375, 0x0819082b08190808, 0x81, 0},
		{72, 0.4375, 0x1908190808191908, 0x00, 0},
		{80, 1.1875, 0x2b2b2b2b2b2b2b2b, 0xff, 0},
		{88, 1.1875, 0x1908190808191908, 0xaa, 0},
	})
}

func TestIQ2_SBlock(t *testing.T) {
	b := make([]byte, iq2sBytes)
	binary.LittleEndian.PutUint16(b, 0x3c00) // d = 1
	// Sub-block 3: indices 5, 341, 600, 1023 (high bits 0, 1, 2, 3 in qh),
	// explicit sign bytes, scales 1 and 7.
	copy(b[2+12:], []byte{5, 341 & 255, 600 & 255, 1023 & 255})
	copy(b[34+12:], []byte{0x01, 0x80, 0xff, 0x5a})
	b[66+3] = 0<<0 | 1<<2 | 2<<4 | 3<<6
	b[74+3] = 0x71
	checkGroups(t, dtype.IQ2_S, b, []group{
		{96, 0.375, 0x0808080808190819, 0x01, 0},
		{104, 0.375, 0x08192b080808192b, 0x80, 0},
		{112, 1.875, 0x1908192b08190819, 0xff, 0},
		{120, 1.875, 0x2b2b2b2b2b2b2b2b, 0x5a, 0},
	})
}

func TestIQ3_XXSBlock(t *testing.T) {
	b := make([]byte, iq3xxsBytes)
	binary.LittleEndian.PutUint16(b, 0x3c00) // d = 1
	// Sub-block 4: pairs of 8-bit indices, sign groups 0x01, 0x10, 0x7f, 0;
	// scale 6: db = 6.5/2.
	copy(b[2+32:], []byte{0, 85, 255, 0, 85, 255, 0, 0})
	binary.LittleEndian.PutUint32(b[66+16:], 6<<28|0x01|0x10<<7|0x7f<<14)
	checkGroups(t, dtype.IQ3_XXS, b, []group{
		{128, 3.25, iq3(0x04040404, 0x0c1c2434), 0x81, 0},
		{136, 3.25, iq3(0x3e341c04, 0x04040404), 0x90, 0},
		{144, 3.25, iq3(0x0c1c2434, 0x3e341c04), 0xff, 0},
		{152, 3.25, iq3(0x04040404, 0x04040404), 0x00, 0},
	})
}

func TestIQ3_SBlock(t *testing.T) {
	b := make([]byte, iq3sBytes)
	binary.LittleEndian.PutUint16(b, 0x3400) // d = 0.25
	// Sub-block 5: 9-bit indices (bit 8 of the k-th index in bit k of qh[5]),
	// explicit sign bytes, scale 4 (high nibble of scales[2]): db = 0.25·9.
	idx := []int{7, 170, 300, 511, 0, 300, 511, 7}
	var qh byte
	for k, i := range idx {
		b[2+40+k] = byte(i)
		qh |= byte(i>>8) << k
	}
	b[66+5] = qh
	copy(b[74+20:], []byte{0x0f, 0xf0, 0x00, 0x81})
	b[106+2] = 0x4a // sub-block 4 has scale 10: db = 0.25·21
	checkGroups(t, dtype.IQ3_S, b, []group{
		{160, 2.25, iq3(0x01010305, 0x03090707), 0x0f, 0},
		{168, 2.25, iq3(0x07030503, 0x0f0f0101), 0xf0, 0},
		{176, 2.25, iq3(0x01010101, 0x07030503), 0x00, 0},
		{184, 2.25, iq3(0x0f0f0101, 0x01010305), 0x81, 0},
		{128, 5.25, iq3(0x01010101, 0x01010101), 0x00, 0},
	})
}

func TestIQ1_SBlock(t *testing.T) {
	b := make([]byte, iq1sBytes)
	binary.LittleEndian.PutUint16(b, 0x3800) // d = 0.5
	// Sub-block 6: 11-bit indices 0, 5, 682, 1234 (high bits 0, 0, 2, 4),
	// scale 3 (dl = 0.5·7), delta negative.
	copy(b[2+24:], []byte{0, 5, 682 & 255, 1234 & 255})
	binary.LittleEndian.PutUint16(b[34+12:], 0<<0|0<<3|2<<6|4<<9|3<<12|1<<15)
	// Sub-block 7: index 2047 first, scale 0, delta positive.
	b[2+28] = 0xff
	binary.LittleEndian.PutUint16(b[34+14:], 7)
	checkGroups(t, dtype.IQ1_S, b, []group{
		{192, 3.5, 0xffffffffffffffff, 0, -0.125},
		{200, 3.5, 0xffffffffff00ff00, 0, -0.125},
		{208, 3.5, 0x00ffff01ff000001, 0, -0.125},
		{216, 3.5, 0x0001ff00ff01ff01, 0, -0.125},
		{224, 0.5, 0x0101010101010101, 0, 0.125},
		{232, 0.5, 0xffffffffffffffff, 0, 0.125},
	})
}

func TestIQ1_MBlock(t *testing.T) {
	b := make([]byte, iq1mBytes)
	// d = 0.5 = f16 0x3800, one nibble in the top of each scale word, lowest
	// first: 0, 0, 8, 3. Sub-block 2 has scales 2 and 5 (bits 0..5 of word 1),
	// sub-block 3 has 7 and 0 (bits 6..11).
	sc := []uint16{0x0000, 0x0000 | 2 | 5<<3 | 7<<6 | 0<<9, 0x8000, 0x3000}
	for i, s := range sc {
		binary.LittleEndian.PutUint16(b[48+2*i:], s)
	}
	// Sub-block 2: indices 682, 1234, 2047, 5; deltas +, -, -, +.
	copy(b[8:], []byte{682 & 255, 1234 & 255, 2047 & 255, 5})
	b[32+4] = 2 | 0<<3 | 4<<4 | 1<<7
	b[32+5] = 7 | 1<<3 | 0<<4 | 0<<7
	// Sub-block 3: all indices 0, first delta negative.
	b[32+6] = 1 << 3
	checkGroups(t, dtype.IQ1_M, b, []group{
		{64, 2.5, 0x00ffff01ff000001, 0, 0.125},
		{72, 2.5, 0x0001ff00ff01ff01, 0, -0.125},
		{80, 5.5, 0x0101010101010101, 0, -0.125},
		{88, 5.5, 0xffffffffff00ff00, 0, 0.125},
		{96, 7.5, 0xffffffffffffffff, 0, -0.125},
		{104, 7.5, 0xffffffffffffffff, 0, 0.125},
		{112, 0.5, 0xffffffffffffffff, 0, 0.125},
	})
}

// randomIQBlocks returns n random blocks of typ whose f16 scale is d.
func randomIQBlocks(r *rand.Rand, typ dtype.DType, n int, d uint16) []byte {
	size := typ.Info().BlockBytes
	b := make([]byte, n*size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for k := 0; k < len(b); k += size {
		setIQScale(typ, b[k:k+size], d)
	}
	return b
}

// setIQScale sets a block's f16 super-block scale.
func setIQScale(typ dtype.DType, b []byte, d uint16) {
	if typ != dtype.IQ1_M {
		binary.LittleEndian.PutUint16(b, d)
		return
	}
	for i := range 4 {
		w := binary.LittleEndian.Uint16(b[48+2*i:])&0x0fff | (d>>(4*i)&0xf)<<12
		binary.LittleEndian.PutUint16(b[48+2*i:], w)
	}
}

func TestIQBlockSizes(t *testing.T) {
	sizes := map[dtype.DType]int{dtype.IQ2_XXS: iq2xxsBytes, dtype.IQ2_XS: iq2xsBytes, dtype.IQ2_S: iq2sBytes,
		dtype.IQ3_XXS: iq3xxsBytes, dtype.IQ3_S: iq3sBytes, dtype.IQ1_S: iq1sBytes, dtype.IQ1_M: iq1mBytes}
	for _, typ := range iqTypes {
		info := typ.Info()
		if info.BlockElems != qkK || info.BlockBytes != sizes[typ] {
			t.Errorf("%v: dtype has %d values in %d bytes, kernels %d in %d", typ, info.BlockElems, info.BlockBytes, qkK, sizes[typ])
		}
		needsWeights := typ == dtype.IQ2_XXS || typ == dtype.IQ2_XS || typ == dtype.IQ1_S
		if !CanDequantize(typ) || CanQuantize(typ) == needsWeights {
			t.Errorf("%v: CanDequantize %v, CanQuantize %v", typ, CanDequantize(typ), CanQuantize(typ))
		}
	}
}

// TestIQProperties: a zero scale gives zeros whatever the other bits; random
// blocks give finite values within the format's range; blocks decode
// independently; lengths that are not whole blocks are refused.
func TestIQProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	// The largest |value| per unit of d: the biggest sub-block scale times the
	// biggest grid level (plus delta for IQ1).
	maxPerD := map[dtype.DType]float64{
		dtype.IQ2_XXS: 15.5 / 4 * 43, dtype.IQ2_XS: 15.5 / 4 * 43, dtype.IQ2_S: 15.5 / 4 * 43,
		dtype.IQ3_XXS: 15.5 / 2 * 62, dtype.IQ3_S: 31 * 15, dtype.IQ1_S: 15 * 1.125, dtype.IQ1_M: 15 * 1.125,
	}
	for _, typ := range iqTypes {
		size := typ.Info().BlockBytes

		zero := randomIQBlocks(r, typ, 4, 0x0000)
		setIQScale(typ, zero[size:], 0x8000) // -0
		y := make([]float32, 4*qkK)
		if err := Dequantize(typ, y, zero); err != nil {
			t.Fatal(err)
		}
		for i, v := range y {
			if v != 0 {
				t.Errorf("%v: zero scale gives value %d = %v", typ, i, v)
				break
			}
		}

		const d = 0x3c00 // 1.0
		blocks := randomIQBlocks(r, typ, 8, d)
		all := make([]float32, 8*qkK)
		if err := Dequantize(typ, all, blocks); err != nil {
			t.Fatal(err)
		}
		var nonzero int
		for i, v := range all {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) > maxPerD[typ] {
				t.Errorf("%v: value %d = %v outside ±%v", typ, i, v, maxPerD[typ])
				break
			}
			if v != 0 {
				nonzero++
			}
		}
		if nonzero < len(all)/2 {
			t.Errorf("%v: only %d of %d random values are non-zero", typ, nonzero, len(all))
		}
		one := make([]float32, qkK)
		for k := range 8 {
			if err := Dequantize(typ, one, blocks[k*size:(k+1)*size]); err != nil {
				t.Fatal(err)
			}
			for i := range one {
				if math.Float32bits(one[i]) != math.Float32bits(all[k*qkK+i]) {
					t.Fatalf("%v: block %d alone decodes value %d as %v, in a row as %v", typ, k, i, one[i], all[k*qkK+i])
				}
			}
		}

		if err := Dequantize(typ, make([]float32, qkK), blocks[:size-1]); !errors.Is(err, ErrLength) {
			t.Errorf("%v short block: %v", typ, err)
		}
		if err := Dequantize(typ, make([]float32, qkK+32), blocks[:2*size]); !errors.Is(err, ErrLength) {
			t.Errorf("%v partial block: %v", typ, err)
		}
		if err := Dequantize(typ, nil, nil); err != nil {
			t.Errorf("%v empty: %v", typ, err)
		}
	}
}

// TestIQSignBits flips each explicit sign bit of an IQ2_S and an IQ3_S block
// and checks that exactly the value it governs changes sign.
func TestIQSignBits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		typ   dtype.DType
		signs int // offset of the 32 sign bytes
	}{{dtype.IQ2_S, 34}, {dtype.IQ3_S, 74}} {
		b := randomIQBlocks(r, c.typ, 1, 0x3c00)
		base := make([]float32, qkK)
		if err := Dequantize(c.typ, base, b); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, qkK)
		for k := range qkK {
			b[c.signs+k/8] ^= 1 << (k % 8)
			if err := Dequantize(c.typ, y, b); err != nil {
				t.Fatal(err)
			}
			b[c.signs+k/8] ^= 1 << (k % 8)
			for i := range y {
				want := base[i]
				if i == k {
					want = -want
				}
				if math.Float32bits(y[i]) != math.Float32bits(want) {
					t.Fatalf("%v: flipping sign bit %d changes value %d from %v to %v", c.typ, k, i, base[i], y[i])
				}
			}
		}
	}
}

func BenchmarkIQDequantize(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range iqTypes {
		b.Run(typ.String(), func(b *testing.B) {
			src := randomIQBlocks(r, typ, benchRow/qkK, 0x3c00)
			dst := make([]float32, benchRow)
			b.SetBytes(int64(4 * benchRow))
			for b.Loop() {
				if err := Dequantize(typ, dst, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

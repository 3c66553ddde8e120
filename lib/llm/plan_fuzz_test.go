package llm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/safetensors"
)

// zeroSource serves every tensor of a checkpoint as zeros of its declared size.
type zeroSource map[string]int64

func (z zeroSource) Open(name string) (io.ReaderAt, error) {
	n, ok := z[name]
	if !ok {
		return nil, fmt.Errorf("no tensor %q", name)
	}
	return bytes.NewReader(make([]byte, n)), nil
}

// FuzzPlanned: the planned checkpoints (gpt-oss with MXFP4 or BF16 experts, FP8 weights
// with block scales) with any tensor's dims and dtype changed give a plan or an error,
// never a panic, and each planned tensor's reader gives exactly its declared size from
// sources of the sizes the checkpoint declares. Seeded with the test checkpoints.
func FuzzPlanned(f *testing.F) {
	type ckpt struct {
		files  map[string][]byte
		shapes []TensorShape
	}
	var ckpts []ckpt
	for _, name := range []string{"tiny-gptoss", "tiny-gptoss-mxfp4", "tiny-qwen3-fp8", "tiny-deepseek3-fp8"} {
		dir := "../../testdata/hf/" + name
		files := map[string][]byte{}
		for _, n := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
			b, err := os.ReadFile(dir + "/" + n)
			if err != nil {
				f.Fatal(err)
			}
			files[n] = b
		}
		st, err := safetensors.Open(dir + "/model.safetensors")
		if err != nil {
			f.Fatal(err)
		}
		var shapes []TensorShape
		for _, t := range st.Header().Tensors {
			shapes = append(shapes, TensorShape{Name: t.Name, DType: t.DType, Shape: t.Shape})
		}
		st.Close()
		ckpts = append(ckpts, ckpt{files, shapes})
	}
	for i := range ckpts {
		f.Add(uint8(i), uint16(0), []byte{})
		f.Add(uint8(i), uint16(7), []byte{1, 0})
		f.Add(uint8(i), uint16(30), []byte{2, 3, 4, 0})
	}
	types := []dtype.DType{dtype.U8, dtype.BF16, dtype.F32, dtype.F8E4M3, dtype.F16, dtype.I32}
	f.Fuzz(func(t *testing.T, which uint8, at uint16, dims []byte) {
		c := ckpts[int(which)%len(ckpts)]
		shapes := make([]TensorShape, len(c.shapes))
		copy(shapes, c.shapes)
		i := int(at) % len(shapes)
		if len(dims) > 0 { // tensor i gets the dims given (0: drop it) and maybe another dtype
			if dims[0] == 0 {
				shapes = append(shapes[:i:i], shapes[i+1:]...)
			} else {
				s := shapes[i]
				s.DType = types[int(dims[0])%len(types)]
				s.Shape = nil
				for _, d := range dims[1:min(len(dims), 5)] {
					s.Shape = append(s.Shape, int64(d))
				}
				shapes[i] = s
			}
		}
		sizes := zeroSource{}
		for _, s := range shapes {
			n, err := dtype.Size(s.DType, s.Shape)
			if err != nil || n > 1<<24 {
				return
			}
			sizes[s.Name] = n
		}
		cp, ok, err := FromCheckpoint(c.files, "x", shapes)
		if err != nil || !ok {
			return
		}
		plan, _ := cp.Plan()
		for _, p := range plan {
			want, err := dtype.Size(p.Info.DType, p.Info.Shape)
			if err != nil {
				t.Fatalf("%s: planned shape %v: %v", p.Info.Name, p.Info.Shape, err)
			}
			r, err := p.Make(sizes)
			if err != nil {
				continue
			}
			n, err := io.Copy(io.Discard, r)
			if err == nil && n != want {
				t.Fatalf("%s: %d bytes, declared %v %v (%d bytes)", p.Info.Name, n, p.Info.DType, p.Info.Shape, want)
			}
		}
	})
}

type bytesSource map[string][]byte

func (b bytesSource) Open(name string) (io.ReaderAt, error) { return bytes.NewReader(b[name]), nil }

// e4m3 decodes an E4M3 byte from its definition (no NaN among the test's bytes).
func e4m3(b byte) float32 {
	e, m := int(b>>3&15), float64(b&7)
	v := math.Ldexp(1+m/8, e-7)
	if e == 0 {
		v = math.Ldexp(m/8, -6)
	}
	if b&0x80 != 0 {
		v = -v
	}
	return float32(v)
}

// TestFP8ScaleForms: without weight_block_size a scale is one value for the tensor or
// one a row ([rows] or [rows, 1]); with it one a block, the last partial blocks too.
// Every value is the E4M3 value times its scale, rounded once to float32.
func TestFP8ScaleForms(t *testing.T) {
	const rows, cols = 5, 7
	w := make([]byte, rows*cols)
	for i := range w {
		w[i] = byte(i*37+11)&^0x78 | byte(1+i%13)<<3 // exponents 1..13: no NaN
	}
	f32 := func(v ...float32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	cases := []struct {
		shape []int64
		block []int64
		vals  []float32
		at    func(r, c int) int
	}{
		{[]int64{1}, nil, []float32{0.3}, func(r, c int) int { return 0 }},
		{[]int64{rows}, nil, []float32{0.1, 0.2, 0.3, 0.7, 1.1}, func(r, c int) int { return r }},
		{[]int64{rows, 1}, nil, []float32{0.1, 0.2, 0.3, 0.7, 1.1}, func(r, c int) int { return r }},
		{[]int64{3, 2}, []int64{2, 4}, []float32{0.1, 0.2, 0.3, 0.7, 1.1, 1.3}, func(r, c int) int { return r/2*2 + c/4 }},
	}
	for _, c := range cases {
		fw := fp8Weight{weight: TensorShape{"w", dtype.F8E4M3, []int64{rows, cols}}, scale: TensorShape{"s", dtype.F32, c.shape}, block: c.block}
		if err := fw.check(); err != nil {
			t.Fatalf("%v: %v", c.shape, err)
		}
		r, err := fw.reader(bytesSource{"w": w, "s": f32(c.vals...)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || len(got) != 4*rows*cols {
			t.Fatalf("%v: %d bytes, %v", c.shape, len(got), err)
		}
		for i := range rows * cols {
			want := e4m3(w[i]) * c.vals[c.at(i/cols, i%cols)]
			if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); v != want {
				t.Fatalf("scale %v, value %d: %v, want %v", c.shape, i, v, want)
			}
		}
	}
	for _, bad := range [][]int64{{rows + 1}, {2, 2}, {rows, 2}} {
		fw := fp8Weight{weight: TensorShape{"w", dtype.F8E4M3, []int64{rows, cols}}, scale: TensorShape{"s", dtype.F32, bad}}
		if err := fw.check(); err == nil {
			t.Errorf("scale %v of a [5 7] weight accepted", bad)
		}
	}
}

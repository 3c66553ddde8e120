package stream

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"testing"
	"testing/iotest"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/tensor"
)

// TestDecodeMatchesToF32: the streaming decoder and the whole-tensor one give the
// same F32 bytes for every dtype kernels can decode, F64 included, whatever the
// reads; F64 values round to the nearest F32.
func TestDecodeMatchesToF32(t *testing.T) {
	const n = 4096
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(math.Sin(float64(i))) * 3
	}
	for _, d := range dtype.All() {
		info := d.Info()
		if !info.Float || d == dtype.F32 || !kernels.CanDequantize(d) || n%info.BlockElems != 0 {
			continue
		}
		data := make([]byte, n/info.BlockElems*info.BlockBytes)
		switch {
		case d == dtype.F64:
			for i, v := range vals {
				binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(float64(v)*(1+1e-12)))
			}
		case kernels.CanQuantize(d):
			if err := kernels.Quantize(d, data, vals); err != nil {
				t.Fatal(err)
			}
		default:
			for i := range data {
				data[i] = byte(i * 7)
			}
		}
		whole, err := ToF32(tensor.Tensor{Name: "w", DType: d, Shape: []int64{n}, Data: data})
		if err != nil {
			t.Fatalf("%v: %v", d, err)
		}
		got, err := io.ReadAll(iotest.OneByteReader(Decode("w", d, dtype.F32, n, bytes.NewReader(data))))
		if err != nil || !bytes.Equal(got, whole.Data) {
			t.Fatalf("%v: Decode and ToF32 differ (%v)", d, err)
		}
		if d == dtype.F64 {
			for i, v := range vals {
				if g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); g != v {
					t.Fatalf("F64 value %d: %v, want %v", i, g, v)
				}
			}
		}
	}
	if _, err := io.ReadAll(Decode("w", dtype.Q8_0, dtype.F32, 64, bytes.NewReader(make([]byte, 3*34)))); err == nil {
		t.Fatal("Decode of a source longer than its shape succeeded")
	}
}

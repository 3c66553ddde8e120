package stream

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/tensor"
)

// ToF32 returns a float tensor as F32, converting F64, F16, BF16 and F8 values and
// dequantizing GGML block types with kernels.Dequantize (the library's one decoder);
// other tensors (integers, bools) come back unchanged.
func ToF32(t tensor.Tensor) (tensor.Tensor, error) {
	info := t.DType.Info()
	if !info.Float || t.DType == dtype.F32 {
		return t, nil
	}
	n, err := dtype.Elems(t.Shape)
	if err != nil {
		return t, tensor.Wrap(t.Name, err)
	}
	if want, err := dtype.Size(t.DType, t.Shape); err != nil || want != int64(len(t.Data)) {
		return t, fmt.Errorf("tensor %q: %d bytes for %v of %v", t.Name, len(t.Data), t.Shape, t.DType)
	}
	out := make([]float32, n)
	if err := kernels.Dequantize(t.DType, out, t.Data); err != nil {
		return t, tensor.Wrap(t.Name, err)
	}
	b := make([]byte, 4*n)
	for i, v := range out {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return tensor.Tensor{Name: t.Name, DType: dtype.F32, Shape: t.Shape, Data: b}, nil
}

// Decode returns a reader of the n values of a tensor named name, of dtype from, read
// from r, encoded as to (F32, F16, BF16 or F64, little-endian): the streaming form of
// ToF32, which converts batch by batch (256 KiB of values) with kernels.Dequantize, so
// a tensor of any size converts in bounded memory. With from == to it returns r. At
// the end it checks that r ends too, returning r's verdict (a verifying source reports
// a bad checksum there). n must be a whole number of from's blocks.
func Decode(name string, from, to dtype.DType, n int64, r io.Reader) io.Reader {
	if from == to {
		return r
	}
	info := from.Info()
	batch := max(1, (256<<10)/info.BlockElems)
	return &decodeReader{name: name, src: r, from: from, to: to,
		left: n / int64(info.BlockElems), blockElems: info.BlockElems, blockBytes: info.BlockBytes, batch: batch}
}

// decodeReader dequantizes blocks batch by batch and encodes the values as a
// float dtype, so a tensor of any size converts in bounded memory.
type decodeReader struct {
	name                   string
	src                    io.Reader
	from, to               dtype.DType
	left                   int64 // blocks still to read
	blockElems, blockBytes int
	batch                  int // blocks per batch
	in                     []byte
	f32                    []float32
	u16                    []uint16
	out                    []byte
	pos                    int
	err                    error
}

func (d *decodeReader) Read(p []byte) (int, error) {
	for d.pos == len(d.out) {
		if d.err != nil {
			return 0, d.err
		}
		d.err = d.fill()
	}
	n := copy(p, d.out[d.pos:])
	d.pos += n
	return n, nil
}

// fill converts the next batch of blocks into out; at the end it checks that the
// source ends too (a verifying source reports a bad checksum there) and returns io.EOF.
func (d *decodeReader) fill() error {
	if d.left == 0 {
		var one [1]byte
		for {
			n, err := d.src.Read(one[:])
			if n > 0 {
				return fmt.Errorf("tensor %q: more source data than its shape holds", d.name)
			}
			if err != nil {
				return err // io.EOF, or the source's verdict on the tensor (checksum)
			}
		}
	}
	nb := int(min(int64(d.batch), d.left))
	if d.in == nil {
		d.in = make([]byte, d.batch*d.blockBytes)
		d.f32 = make([]float32, d.batch*d.blockElems)
		d.out = make([]byte, 0, d.batch*d.blockElems*8)
		if d.to == dtype.F16 || d.to == dtype.BF16 {
			d.u16 = make([]uint16, d.batch*d.blockElems)
		}
	}
	in := d.in[:nb*d.blockBytes]
	if _, err := io.ReadFull(d.src, in); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return tensor.Wrap(d.name, err)
	}
	d.left -= int64(nb)
	vals := d.f32[:nb*d.blockElems]
	if err := kernels.Dequantize(d.from, vals, in); err != nil {
		return tensor.Wrap(d.name, err)
	}
	d.out, d.pos = appendFloats(d.out[:0], d.to, vals, d.u16), 0
	return nil
}

// appendFloats appends vals encoded as dtype to (F32, F16, BF16 or F64), little-endian.
func appendFloats(b []byte, to dtype.DType, vals []float32, u16 []uint16) []byte {
	switch to {
	case dtype.F16, dtype.BF16:
		h := u16[:len(vals)]
		if to == dtype.F16 {
			kernels.F32ToF16(h, vals)
		} else {
			kernels.F32ToBF16(h, vals)
		}
		for _, x := range h {
			b = binary.LittleEndian.AppendUint16(b, x)
		}
	case dtype.F64:
		for _, v := range vals {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(v)))
		}
	default:
		for _, v := range vals {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return b
}

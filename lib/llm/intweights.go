package llm

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/tensor"
)

// Integer tensors. The converter casts every tensor that is not F16 or F32 to float32
// as it reads it (data_torch.to(torch.float32) in ModelBase.prepare_tensors,
// conversion/base.py), integers and bools too, before modify_tensors and the output
// type: an I32 weight is written as the output type's floats of its values. apr kept
// the integer type, and llama.cpp crashed on such a GGUF. The converter reads I8, I16,
// I32, I64, U8 and BOOL (LazyTorchTensor._dtype_str_map); U16, U32 and U64 it cannot
// read (a KeyError), so apr refuses them, naming the tensor.

// intToF32 reports a tensor of integers (or bools) that is read as F32, and an error
// for one the converter cannot read.
func intToF32(info container.TensorInfo) (bool, error) {
	switch info.DType {
	case dtype.I8, dtype.I16, dtype.I32, dtype.I64, dtype.U8, dtype.Bool:
		return true, nil
	case dtype.U16, dtype.U32, dtype.U64:
		return false, fmt.Errorf("tensor %q is %v, which llama.cpp's converter cannot read (it reads I8, I16, I32, I64, U8 and BOOL, cast to float32)", info.Name, info.DType)
	}
	return false, nil
}

// castInts returns a reader of the values of an integer tensor (info, its data read
// from r) as little-endian F32, converted in batches, each value rounded to the
// nearest float32 as torch's cast rounds it (16777217 becomes 16777216).
func castInts(info container.TensorInfo, r io.Reader) (io.Reader, error) {
	n, err := dtype.Elems(info.Shape)
	if err != nil {
		return nil, tensor.Wrap(info.Name, err)
	}
	return &intReader{name: info.Name, src: r, from: info.DType, size: info.DType.Info().BlockBytes, left: n}, nil
}

type intReader struct {
	name    string
	src     io.Reader
	from    dtype.DType
	size    int   // bytes a value
	left    int64 // values still to read
	in, out []byte
	pos     int
	err     error
}

func (c *intReader) Read(p []byte) (int, error) {
	for c.pos == len(c.out) {
		if c.err != nil {
			return 0, c.err
		}
		c.err = c.fill()
	}
	n := copy(p, c.out[c.pos:])
	c.pos += n
	return n, nil
}

// fill converts the next batch; after the last it returns the source's own verdict
// at its end (io.EOF, or a checksum error of a verifying source).
func (c *intReader) fill() error {
	if c.left == 0 {
		if n, err := io.ReadFull(c.src, make([]byte, 1)); n > 0 {
			return fmt.Errorf("tensor %q: more source data than its shape holds", c.name)
		} else {
			return err // io.EOF, or the source's verdict
		}
	}
	k := int(min(c.left, 64<<10))
	if c.in == nil {
		c.in, c.out = make([]byte, k*c.size), make([]byte, 0, 4*k)
	}
	in := c.in[:k*c.size]
	if _, err := io.ReadFull(c.src, in); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return tensor.Wrap(c.name, err)
	}
	c.left -= int64(k)
	c.out, c.pos = c.out[:0], 0
	for i := 0; i < len(in); i += c.size {
		var v float32
		switch c.from {
		case dtype.I8:
			v = float32(int8(in[i]))
		case dtype.U8:
			v = float32(in[i])
		case dtype.Bool:
			if in[i] != 0 {
				v = 1
			}
		case dtype.I16:
			v = float32(int16(binary.LittleEndian.Uint16(in[i:])))
		case dtype.I32:
			v = float32(int32(binary.LittleEndian.Uint32(in[i:])))
		case dtype.I64:
			v = float32(int64(binary.LittleEndian.Uint64(in[i:])))
		}
		c.out = binary.LittleEndian.AppendUint32(c.out, math.Float32bits(v))
	}
	return nil
}

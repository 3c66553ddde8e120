package gguf

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/apr-go/apr/lib/dtype"
)

// Format constants.
const (
	// Magic is the first four bytes of every GGUF file.
	Magic = "GGUF"
	// Version is the version this package writes by default.
	Version = 3
	// DefaultAlignment applies when general.alignment is absent.
	DefaultAlignment = 32
	// AlignmentKey is the KV that sets the alignment (a u32 power of two).
	AlignmentKey = "general.alignment"
	// MaxNameLen is the longest tensor name llama.cpp accepts (GGML_MAX_NAME - 1).
	MaxNameLen = 63
	// MaxDims is the most dimensions a tensor may have (GGML_MAX_DIMS).
	MaxDims = 4
)

// TensorType is a ggml tensor type code (ggml_type), as stored in tensor infos.
type TensorType uint32

// DType returns the apr dtype for t, false for a code ggml does not define (or that
// it removed, such as 4 and 5).
func (t TensorType) DType() (dtype.DType, bool) {
	if t > math.MaxInt32 {
		return dtype.Invalid, false
	}
	return dtype.FromGGML(int(t))
}

// Known reports whether t is a ggml type this package can size.
func (t TensorType) Known() bool { _, ok := t.DType(); return ok }

// String returns ggml's name for the type ("F32", "Q4_K"), or "ggml_type(N)".
func (t TensorType) String() string {
	if d, ok := t.DType(); ok {
		return d.String()
	}
	return fmt.Sprintf("ggml_type(%d)", uint32(t))
}

// TensorTypeOf returns the ggml type code of an apr dtype, false if ggml has none.
func TensorTypeOf(d dtype.DType) (TensorType, bool) {
	i, ok := dtype.Lookup(d)
	if !ok || i.GGML < 0 {
		return 0, false
	}
	return TensorType(i.GGML), true
}

// KV is one metadata key and its value.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor.
type TensorInfo struct {
	Name string
	// Dims are ggml's ne, innermost (ne0, the row length) first; len(Dims) is the
	// stored n_dims, kept as stored (a file may store [3, 1] with n_dims 2).
	// APR and NumPy shapes are these reversed.
	Dims   []int64
	Type   TensorType
	Offset int64 // relative to the data section; a multiple of the alignment
}

// Elems returns the number of elements (1 for n_dims 0), checking overflow.
func (t *TensorInfo) Elems() (int64, error) {
	n := uint64(1)
	for i, d := range t.Dims {
		if d < 0 {
			return 0, fmt.Errorf("dimension %d is negative (%d)", i, d)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > dtype.MaxElems {
			return 0, fmt.Errorf("dims %v have more than 2^56 elements", t.Dims)
		}
		n = lo
	}
	return int64(n), nil
}

// Size returns the tensor's data size in bytes (without padding), checking the type,
// the dims, overflow and that ne0 is a whole number of the type's blocks.
func (t *TensorInfo) Size() (int64, error) {
	d, ok := t.Type.DType()
	if !ok {
		return 0, fmt.Errorf("unknown ggml type %d", uint32(t.Type))
	}
	n, err := t.Elems()
	if err != nil {
		return 0, err
	}
	info := d.Info()
	ne0 := int64(1)
	if len(t.Dims) > 0 {
		ne0 = t.Dims[0]
	}
	if ne0%int64(info.BlockElems) != 0 {
		return 0, fmt.Errorf("%s needs ne0 (the row length) to be a multiple of %d, got %d", d, info.BlockElems, ne0)
	}
	blocks := uint64(n) / uint64(info.BlockElems)
	hi, lo := bits.Mul64(blocks, uint64(info.BlockBytes))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, fmt.Errorf("%v of %s overflows", t.Dims, d)
	}
	return int64(lo), nil
}

// Shape returns the dims outermost first (APR, NumPy and SafeTensors order): Dims
// reversed. Data is never transposed: ggml's ne0 is the fastest-varying dimension,
// which is the last one of a row-major shape.
func (t *TensorInfo) Shape() []int64 {
	s := make([]int64, len(t.Dims))
	for i, d := range t.Dims {
		s[len(s)-1-i] = d
	}
	return s
}

// Header is everything in a GGUF file before the data section.
type Header struct {
	Version uint32 // 2 or 3; the writer treats 0 as 3
	KVs     []KV   // in file order
	Tensors []TensorInfo

	// Set by the reader and by Layout; the writer checks them when non-zero.
	Alignment  int64 // the effective alignment: general.alignment or 32
	InfoEnd    int64 // file offset where the tensor infos end (before padding)
	DataOffset int64 // file offset of the data section (InfoEnd rounded up to Alignment)
}

// Get returns the value of key, false if absent.
func (h *Header) Get(key string) (Value, bool) {
	for i := range h.KVs {
		if h.KVs[i].Key == key {
			return h.KVs[i].Value, true
		}
	}
	return Value{}, false
}

// Tensor returns the index of the tensor named name, -1 if absent.
func (h *Header) Tensor(name string) int {
	for i := range h.Tensors {
		if h.Tensors[i].Name == name {
			return i
		}
	}
	return -1
}

// DataSize returns the size of the data section: the end of the furthest tensor,
// padded to the alignment. It assumes a header that was read or validated.
func (h *Header) DataSize() int64 {
	var end int64
	align := h.Alignment
	if align <= 0 {
		align = DefaultAlignment
	}
	for i := range h.Tensors {
		sz, err := h.Tensors[i].Size()
		if err != nil {
			continue
		}
		if e := alignUp(h.Tensors[i].Offset+sz, align); e > end {
			end = e
		}
	}
	return end
}

// alignmentOf returns the alignment the KVs set; err describes a bad general.alignment.
func alignmentOf(kvs []KV) (int64, *Error) {
	for i := range kvs {
		if kvs[i].Key != AlignmentKey {
			continue
		}
		v := kvs[i].Value
		if v.Type() != TypeUint32 {
			return 0, &Error{Kind: ErrFormat, Offset: -1, Key: AlignmentKey,
				Msg: fmt.Sprintf("must be a u32, got %s", v.TypeName())}
		}
		a, _ := v.AsUint64()
		if a == 0 || a&(a-1) != 0 {
			return 0, &Error{Kind: ErrFormat, Offset: -1, Key: AlignmentKey,
				Msg: fmt.Sprintf("must be a power of two, got %d", a)}
		}
		return int64(a), nil
	}
	return DefaultAlignment, nil
}

// alignUp rounds n up to a multiple of align (a power of two); callers keep n and
// align far below 2^62.
func alignUp(n, align int64) int64 { return (n + align - 1) &^ (align - 1) }

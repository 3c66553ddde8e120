// Package dtype is the one table of element types shared by every format apr reads
// and writes: the APR v2 code stored in files, the names SafeTensors, GGUF (ggml) and
// NumPy use for the same type, and the block geometry that turns a shape into a
// byte count.
//
// Every type is described as blocks: BlockElems elements stored in BlockBytes bytes.
// Plain types have one element per block (F32: 1 element, 4 bytes); GGML's quantized
// types have 32 or 256 (Q4_0: 32 elements, 18 bytes); sub-byte floats pack several
// (F4: 2 elements, 1 byte). A tensor's innermost dimension must be a whole number of
// blocks.
package dtype

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// DType is the APR v2 dtype code, as stored in tensor records and the index.
// Codes below 0x100 are plain (element-addressable) types; 0x100|n is GGML's block
// type n, stored with exactly ggml's block bytes.
type DType uint16

// Plain types.
const (
	Invalid DType = 0
	F64     DType = 1
	F32     DType = 2
	F16     DType = 3
	BF16    DType = 4
	F8E4M3  DType = 5
	F8E5M2  DType = 6
	I8      DType = 7
	I16     DType = 8
	I32     DType = 9
	I64     DType = 10
	U8      DType = 11
	U16     DType = 12
	U32     DType = 13
	U64     DType = 14
	Bool    DType = 15
	F8E8M0  DType = 16 // SafeTensors F8_E8M0 (scale type of MX formats)
	F4      DType = 17 // SafeTensors F4 (E2M1), two per byte
	F6E2M3  DType = 18 // SafeTensors F6_E2M3, four per three bytes
	F6E3M2  DType = 19 // SafeTensors F6_E3M2, four per three bytes
)

// GGML block types: 0x100 | ggml_type.
const (
	Q4_0    DType = 0x100 | 2
	Q4_1    DType = 0x100 | 3
	Q5_0    DType = 0x100 | 6
	Q5_1    DType = 0x100 | 7
	Q8_0    DType = 0x100 | 8
	Q8_1    DType = 0x100 | 9
	Q2_K    DType = 0x100 | 10
	Q3_K    DType = 0x100 | 11
	Q4_K    DType = 0x100 | 12
	Q5_K    DType = 0x100 | 13
	Q6_K    DType = 0x100 | 14
	Q8_K    DType = 0x100 | 15
	IQ2_XXS DType = 0x100 | 16
	IQ2_XS  DType = 0x100 | 17
	IQ3_XXS DType = 0x100 | 18
	IQ1_S   DType = 0x100 | 19
	IQ4_NL  DType = 0x100 | 20
	IQ3_S   DType = 0x100 | 21
	IQ2_S   DType = 0x100 | 22
	IQ4_XS  DType = 0x100 | 23
	IQ1_M   DType = 0x100 | 29
	TQ1_0   DType = 0x100 | 34
	TQ2_0   DType = 0x100 | 35
	MXFP4   DType = 0x100 | 39
	NVFP4   DType = 0x100 | 40
	Q1_0    DType = 0x100 | 41
	Q2_0    DType = 0x100 | 42
)

// Info describes one dtype.
type Info struct {
	Name        string // canonical apr name, upper case ("F32", "Q4_K")
	BlockElems  int    // elements per block
	BlockBytes  int    // bytes per block
	GGML        int    // ggml_type code, or -1 when ggml has none
	SafeTensors string // SafeTensors dtype string, or "" when it has none
	NumPy       string // NumPy little-endian descr ("<f4"), or "" when it has none
	Float       bool   // a floating-point type (plain or quantized)
}

// Quantized reports whether the type is a GGML block type.
func (i Info) Quantized() bool { return i.BlockElems > 1 && i.GGML >= 0 }

var table = map[DType]Info{
	F64:     {"F64", 1, 8, 28, "F64", "<f8", true},
	F32:     {"F32", 1, 4, 0, "F32", "<f4", true},
	F16:     {"F16", 1, 2, 1, "F16", "<f2", true},
	BF16:    {"BF16", 1, 2, 30, "BF16", "", true},
	F8E4M3:  {"F8_E4M3", 1, 1, -1, "F8_E4M3", "", true},
	F8E5M2:  {"F8_E5M2", 1, 1, -1, "F8_E5M2", "", true},
	I8:      {"I8", 1, 1, 24, "I8", "|i1", false},
	I16:     {"I16", 1, 2, 25, "I16", "<i2", false},
	I32:     {"I32", 1, 4, 26, "I32", "<i4", false},
	I64:     {"I64", 1, 8, 27, "I64", "<i8", false},
	U8:      {"U8", 1, 1, -1, "U8", "|u1", false},
	U16:     {"U16", 1, 2, -1, "U16", "<u2", false},
	U32:     {"U32", 1, 4, -1, "U32", "<u4", false},
	U64:     {"U64", 1, 8, -1, "U64", "<u8", false},
	Bool:    {"BOOL", 1, 1, -1, "BOOL", "|b1", false},
	F8E8M0:  {"F8_E8M0", 1, 1, -1, "F8_E8M0", "", true},
	F4:      {"F4", 2, 1, -1, "F4", "", true},
	F6E2M3:  {"F6_E2M3", 4, 3, -1, "F6_E2M3", "", true},
	F6E3M2:  {"F6_E3M2", 4, 3, -1, "F6_E3M2", "", true},
	Q4_0:    {"Q4_0", 32, 18, 2, "", "", true},
	Q4_1:    {"Q4_1", 32, 20, 3, "", "", true},
	Q5_0:    {"Q5_0", 32, 22, 6, "", "", true},
	Q5_1:    {"Q5_1", 32, 24, 7, "", "", true},
	Q8_0:    {"Q8_0", 32, 34, 8, "", "", true},
	Q8_1:    {"Q8_1", 32, 36, 9, "", "", true},
	Q2_K:    {"Q2_K", 256, 84, 10, "", "", true},
	Q3_K:    {"Q3_K", 256, 110, 11, "", "", true},
	Q4_K:    {"Q4_K", 256, 144, 12, "", "", true},
	Q5_K:    {"Q5_K", 256, 176, 13, "", "", true},
	Q6_K:    {"Q6_K", 256, 210, 14, "", "", true},
	Q8_K:    {"Q8_K", 256, 292, 15, "", "", true},
	IQ2_XXS: {"IQ2_XXS", 256, 66, 16, "", "", true},
	IQ2_XS:  {"IQ2_XS", 256, 74, 17, "", "", true},
	IQ3_XXS: {"IQ3_XXS", 256, 98, 18, "", "", true},
	IQ1_S:   {"IQ1_S", 256, 50, 19, "", "", true},
	IQ4_NL:  {"IQ4_NL", 32, 18, 20, "", "", true},
	IQ3_S:   {"IQ3_S", 256, 110, 21, "", "", true},
	IQ2_S:   {"IQ2_S", 256, 82, 22, "", "", true},
	IQ4_XS:  {"IQ4_XS", 256, 136, 23, "", "", true},
	IQ1_M:   {"IQ1_M", 256, 56, 29, "", "", true},
	TQ1_0:   {"TQ1_0", 256, 54, 34, "", "", true},
	TQ2_0:   {"TQ2_0", 256, 66, 35, "", "", true},
	MXFP4:   {"MXFP4", 32, 17, 39, "", "", true},
	NVFP4:   {"NVFP4", 64, 36, 40, "", "", true},
	Q1_0:    {"Q1_0", 128, 18, 41, "", "", true},
	Q2_0:    {"Q2_0", 64, 18, 42, "", "", true},
}

var (
	byName        = map[string]DType{}
	bySafeTensors = map[string]DType{}
	byGGML        = map[int]DType{}
)

func init() {
	for d, i := range table {
		byName[i.Name] = d
		if i.SafeTensors != "" {
			bySafeTensors[i.SafeTensors] = d
		}
		if i.GGML >= 0 {
			byGGML[i.GGML] = d
		}
	}
}

// Errors.
var (
	// ErrUnknown is returned for a dtype code or name that is not in the table.
	ErrUnknown = errors.New("unknown dtype")
	// ErrShape is returned when a shape does not fit the dtype or overflows.
	ErrShape = errors.New("invalid shape")
)

// Lookup returns the description of d, or false for an unknown code.
func Lookup(d DType) (Info, bool) {
	i, ok := table[d]
	return i, ok
}

// Valid reports whether d is a known code.
func (d DType) Valid() bool { _, ok := table[d]; return ok }

// Info returns d's description; the zero Info for an unknown code.
func (d DType) Info() Info { return table[d] }

// String returns the canonical name, or "DType(0x...)" for an unknown code.
func (d DType) String() string {
	if i, ok := table[d]; ok {
		return i.Name
	}
	return fmt.Sprintf("DType(0x%04x)", uint16(d))
}

// Parse returns the dtype with the canonical name s (case-sensitive, upper case:
// "F32", "Q4_K", "F8_E4M3").
func Parse(s string) (DType, error) {
	if d, ok := byName[s]; ok {
		return d, nil
	}
	return Invalid, fmt.Errorf("%w %q", ErrUnknown, s)
}

// FromSafeTensors maps a SafeTensors dtype string to a dtype.
func FromSafeTensors(s string) (DType, bool) { d, ok := bySafeTensors[s]; return d, ok }

// FromGGML maps a ggml_type code to a dtype.
func FromGGML(code int) (DType, bool) { d, ok := byGGML[code]; return d, ok }

// All returns every known dtype in code order.
func All() []DType {
	out := make([]DType, 0, len(table))
	for d := DType(0); d < 0x200; d++ {
		if _, ok := table[d]; ok {
			out = append(out, d)
		}
	}
	return out
}

// MaxElems caps the element count of one tensor (2^56): far beyond any real model and
// small enough that byte counts never overflow an int64.
const MaxElems = 1 << 56

// Elems returns the number of elements of shape, checking every multiplication for
// overflow and every dimension for sign. The empty shape is a scalar (1 element).
func Elems(shape []int64) (int64, error) {
	n := uint64(1)
	for _, s := range shape {
		if s < 0 {
			return 0, fmt.Errorf("%w: negative dimension %d", ErrShape, s)
		}
		hi, lo := bits.Mul64(n, uint64(s))
		if hi != 0 || lo > MaxElems {
			return 0, fmt.Errorf("%w: %v has more than 2^56 elements", ErrShape, shape)
		}
		n = lo
	}
	return int64(n), nil
}

// Size returns the number of bytes a tensor of this dtype and shape occupies, checking
// overflow and that the innermost dimension is a whole number of blocks.
func Size(d DType, shape []int64) (int64, error) {
	i, ok := table[d]
	if !ok {
		return 0, fmt.Errorf("%w: code 0x%04x", ErrUnknown, uint16(d))
	}
	n, err := Elems(shape)
	if err != nil {
		return 0, err
	}
	if i.BlockElems > 1 {
		inner := int64(1)
		if len(shape) > 0 {
			inner = shape[len(shape)-1]
		}
		if inner%int64(i.BlockElems) != 0 {
			return 0, fmt.Errorf("%w: %s needs a row length that is a multiple of %d, got %d",
				ErrShape, i.Name, i.BlockElems, inner)
		}
	}
	blocks := n / int64(i.BlockElems)
	if blocks > math.MaxInt64/int64(i.BlockBytes) {
		return 0, fmt.Errorf("%w: %v of %s overflows", ErrShape, shape, i.Name)
	}
	return blocks * int64(i.BlockBytes), nil
}

package aprender

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"sort"
	"unicode/utf8"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// APR\0 header layout (64 bytes, little-endian).
const (
	apr0HeaderSize = 64
	apr0Align      = 64

	apr0FlagLZ4           = 0x0001
	apr0FlagZstd          = 0x0002
	apr0FlagEncrypted     = 0x0004
	apr0FlagSigned        = 0x0008
	apr0FlagSharded       = 0x0010
	apr0FlagQuantized     = 0x0020
	apr0FlagFilterbank    = 0x0040
	apr0FlagModelCard     = 0x0080
	apr0FlagStreaming     = 0x0100
	apr0FlagVocab         = 0x0200
	apr0FlagRowMajor      = 0x0400
	apr0FlagColumnMajor   = 0x0800
	apr0KnownFlags        = 0x0FFF
	apr0MinIndexEntrySize = 2 + 1 + 1 + 8 + 8 // empty name, no dims
)

// aprender's APR\0 dtype codes.
const (
	apr0F32      = 0
	apr0F16      = 1
	apr0BF16Old  = 2
	apr0F64      = 3
	apr0I32      = 4
	apr0I64      = 5
	apr0I8       = 6
	apr0U8       = 7
	apr0Q4Old    = 8
	apr0Q8Old    = 9
	apr0Q4K      = 12
	apr0Q6K      = 14
	apr0BF16     = 30
	apr0Q4       = 128 // aprender's own 4-bit blocks
	apr0Q8       = 129 // aprender's own 8-bit format
	apr0Q4Block  = 32  // values per own 4-bit block
	apr0Q4BBytes = 18  // bytes per own 4-bit block
)

var apr0Plain = map[byte]dtype.DType{
	apr0F32: dtype.F32, apr0F16: dtype.F16, apr0BF16Old: dtype.BF16, apr0BF16: dtype.BF16,
	apr0F64: dtype.F64, apr0I32: dtype.I32, apr0I64: dtype.I64, apr0I8: dtype.I8, apr0U8: dtype.U8,
	apr0Q4K: dtype.Q4_K, apr0Q6K: dtype.Q6_K,
}

func apr0Err(off int64, field, format string, args ...any) error {
	return &FormatError{Layout: LayoutAPR0, Offset: off, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func align64(n uint64) uint64 { return (n + apr0Align - 1) &^ (apr0Align - 1) }

// checkAPR0HeaderCRC checks the CRC32 at offset 40 of a 64-byte APR\0 header, which
// covers the bytes before and after it.
func checkAPR0HeaderCRC(h []byte) error {
	hc := crc32.NewIEEE()
	hc.Write(h[:40])
	hc.Write(h[44:apr0HeaderSize])
	if want, got := binary.LittleEndian.Uint32(h[40:]), hc.Sum32(); want != got {
		return &ChecksumError{Layout: LayoutAPR0, Offset: 40, What: "header CRC32 over bytes 0-39 and 44-63", Expected: want, Actual: got}
	}
	return nil
}

func readAPR0(data []byte) (*File, error) {
	if len(data) < apr0HeaderSize+4 {
		return nil, &FormatError{Layout: LayoutAPR0, Offset: 0, Field: "header",
			Msg: fmt.Sprintf("needs %d bytes (header and footer), file has %d", apr0HeaderSize+4, len(data)), Err: ErrTruncated}
	}
	h := data[:apr0HeaderSize]
	if h[4] != 2 {
		return nil, &UnsupportedError{Layout: LayoutAPR0, Feature: fmt.Sprintf("major version %d at offset 4, expected 2", h[4])}
	}
	if err := checkAPR0HeaderCRC(h); err != nil {
		return nil, err
	}
	flags := binary.LittleEndian.Uint16(h[6:])
	count := uint64(binary.LittleEndian.Uint32(h[8:]))
	metaOff := binary.LittleEndian.Uint64(h[12:])
	metaSize := uint64(binary.LittleEndian.Uint32(h[20:]))
	indexOff := binary.LittleEndian.Uint64(h[24:])
	dataOff := binary.LittleEndian.Uint64(h[32:])
	size := uint64(len(data))

	// Structure, checked against the bytes present before anything else.
	if metaOff != apr0HeaderSize {
		return nil, apr0Err(12, "header.metadata_offset", "%d, expected 64", metaOff)
	}
	if want := apr0HeaderSize + align64(metaSize); indexOff != want {
		return nil, apr0Err(24, "header.index_offset", "%d, expected 64 + align64(metadata size %d) = %d", indexOff, metaSize, want)
	}
	if indexOff > size-4 {
		return nil, &FormatError{Layout: LayoutAPR0, Offset: 24, Field: "header.index_offset",
			Msg: fmt.Sprintf("%d is past the end of the %d-byte file", indexOff, size), Err: ErrTruncated}
	}
	if dataOff < indexOff || dataOff%apr0Align != 0 || dataOff > size-4 {
		f := &FormatError{Layout: LayoutAPR0, Offset: 32, Field: "header.data_offset",
			Msg: fmt.Sprintf("%d, expected a multiple of 64 in [index offset %d, file size %d - 4]", dataOff, indexOff, size)}
		if dataOff > size-4 {
			f.Err = ErrTruncated
		}
		return nil, f
	}
	// Footer CRC over every preceding byte.
	crcAt := len(data) - 4
	if want, got := binary.LittleEndian.Uint32(data[crcAt:]), crc32.ChecksumIEEE(data[:crcAt]); want != got {
		return nil, &ChecksumError{Layout: LayoutAPR0, Offset: int64(crcAt), What: "footer CRC32 of all preceding bytes", Expected: want, Actual: got}
	}
	if h[5] != 0 {
		return nil, &UnsupportedError{Layout: LayoutAPR0, Feature: fmt.Sprintf("version 2.%d at offset 5, expected 2.0", h[5])}
	}
	if flags&^apr0KnownFlags != 0 {
		return nil, apr0Err(6, "header.flags", "unknown flag bits 0x%04x set", flags&^apr0KnownFlags)
	}
	for _, u := range []struct {
		bit  uint16
		what string
	}{
		{apr0FlagLZ4, "LZ4-compressed tensors (flag 0x0001)"},
		{apr0FlagZstd, "zstd-compressed tensors (flag 0x0002)"},
		{apr0FlagEncrypted, "encrypted file (flag 0x0004)"},
		{apr0FlagSigned, "signed file (flag 0x0008): its signature block layout is not supported"},
		{apr0FlagSharded, "sharded model (flag 0x0010): import each shard"},
		{apr0FlagColumnMajor, "column-major layout (flag 0x0800)"},
	} {
		if flags&u.bit != 0 {
			return nil, &UnsupportedError{Layout: LayoutAPR0, Feature: u.what + " at offset 6"}
		}
	}
	_ = apr0FlagQuantized | apr0FlagFilterbank | apr0FlagModelCard | apr0FlagStreaming | apr0FlagVocab | apr0FlagRowMajor
	if count > MaxTensors {
		return nil, apr0Err(8, "header.tensor_count", "%d, more than the cap of %d", count, MaxTensors)
	}
	if count > (dataOff-indexOff)/apr0MinIndexEntrySize {
		return nil, apr0Err(8, "header.tensor_count", "%d entries cannot fit in a %d-byte index", count, dataOff-indexOff)
	}

	// Metadata: exactly metaSize bytes of one JSON object, then zero padding.
	meta, err := decodeJSONObject(data[metaOff:metaOff+metaSize], int64(metaOff))
	if err != nil {
		return nil, err
	}
	if i := bytes.IndexFunc(data[metaOff+metaSize:indexOff], func(r rune) bool { return r != 0 }); i >= 0 {
		return nil, apr0Err(int64(metaOff+metaSize)+int64(i), "metadata.padding", "non-zero byte, expected zero padding to a multiple of 64")
	}

	f := &File{Layout: LayoutAPR0, Version: "2.0", ModelType: modeltype.Custom, Metadata: meta, Flags: flags}
	if s, ok := meta["model_type"].(string); ok {
		if t, err := modeltype.ParseType(s); err == nil {
			f.ModelType = t
		}
	}
	if c, ok := meta["model_config"].(map[string]any); ok {
		f.Config = c
	}

	// Index.
	ix := &fields{b: data[:dataOff], pos: int(indexOff), layout: LayoutAPR0, left: "before the data offset"}
	type span struct {
		off, end uint64
		i        int
	}
	spans := make([]span, 0, count)
	dataLen := size - 4 - dataOff
	var prev string
	for i := uint64(0); i < count; i++ {
		field := fmt.Sprintf("index[%d]", i)
		entryAt := ix.pos
		nameLen, err := ix.u16(field + ".name_len")
		if err != nil {
			return nil, err
		}
		nameAt := ix.pos
		nb, err := ix.take(field+".name", uint64(nameLen))
		if err != nil {
			return nil, err
		}
		name := string(nb)
		if !utf8.ValidString(name) || name == "" {
			return nil, apr0Err(int64(nameAt), field+".name", "%q, expected a non-empty UTF-8 name", name)
		}
		if i > 0 && name <= prev {
			return nil, apr0Err(int64(entryAt), field+".name", "%q after %q, expected names sorted in strictly increasing byte order", name, prev)
		}
		prev = name
		field = fmt.Sprintf("index[%d] %q", i, name)
		codeAt := ix.pos
		code, err := ix.u8(field + ".dtype")
		if err != nil {
			return nil, err
		}
		ndimAt := ix.pos
		ndim, err := ix.u8(field + ".ndim")
		if err != nil {
			return nil, err
		}
		if ndim > MaxDims {
			return nil, apr0Err(int64(ndimAt), field+".ndim", "%d dimensions, more than the cap of %d", ndim, MaxDims)
		}
		shape := make([]int64, ndim)
		for d := range shape {
			at := ix.pos
			v, err := ix.u64(field + ".dims")
			if err != nil {
				return nil, err
			}
			if v > math.MaxInt64 {
				return nil, apr0Err(int64(at), field+".dims", "dimension %d is too large", v)
			}
			shape[d] = int64(v)
		}
		elems, err := dtype.Elems(shape)
		if err != nil {
			return nil, apr0Err(int64(ndimAt), field+".dims", "%v", err)
		}
		offAt := ix.pos
		off, err := ix.u64(field + ".offset")
		if err != nil {
			return nil, err
		}
		sz, err := ix.u64(field + ".size")
		if err != nil {
			return nil, err
		}
		// Expected byte size for the dtype and shape.
		var want uint64
		var dt dtype.DType
		switch {
		case code == apr0Q4 || code == apr0Q4Old:
			blocks := (uint64(elems) + apr0Q4Block - 1) / apr0Q4Block
			want = blocks * apr0Q4BBytes
			dt = dtype.F32
		case code == apr0Q8 || code == apr0Q8Old:
			want = 4 + uint64(elems)
			dt = dtype.F32
		default:
			var ok bool
			dt, ok = apr0Plain[code]
			if !ok {
				return nil, apr0Err(int64(codeAt), field+".dtype", "unknown dtype code %d, expected one of 0-9, 12, 14, 30, 128, 129", code)
			}
			s, err := dtype.Size(dt, shape)
			if err != nil {
				return nil, apr0Err(int64(ndimAt), field+".dims", "%v", err)
			}
			want = uint64(s)
		}
		if sz != want {
			return nil, apr0Err(int64(offAt+8), field+".size", "%d bytes, expected %d for %v of dtype code %d", sz, want, shape, code)
		}
		if off%apr0Align != 0 {
			return nil, apr0Err(int64(offAt), field+".offset", "%d, expected a multiple of 64", off)
		}
		if off > dataLen || sz > dataLen-off {
			return nil, &FormatError{Layout: LayoutAPR0, Offset: int64(offAt), Field: field + ".offset",
				Msg: fmt.Sprintf("data [%d, %d+%d) runs past the %d bytes of tensor data", off, off, sz, dataLen), Err: ErrTruncated}
		}
		raw := data[dataOff+off : dataOff+off+sz]
		t := tensor.Tensor{Name: name, DType: dt, Shape: shape}
		switch code {
		case apr0Q4, apr0Q4Old:
			t.Data = dequantQ4(raw, elems)
		case apr0Q8, apr0Q8Old:
			t.Data = dequantQ8(raw, elems)
		default:
			t.Data = raw
		}
		spans = append(spans, span{off, off + align64(sz), int(i)})
		f.Tensors = append(f.Tensors, t)
	}
	// The index ends with zero padding to the data offset, which is
	// index offset + align64(index length).
	if want := indexOff + align64(uint64(ix.pos)-indexOff); dataOff != want {
		return nil, apr0Err(32, "header.data_offset", "%d, expected index offset %d + align64(index length %d) = %d",
			dataOff, indexOff, uint64(ix.pos)-indexOff, want)
	}
	if i := bytes.IndexFunc(data[ix.pos:dataOff], func(r rune) bool { return r != 0 }); i >= 0 {
		return nil, apr0Err(int64(ix.pos+i), "index.padding", "non-zero byte, expected zero padding to the data offset")
	}
	// Tensor data: no overlaps, and the file is exactly the padded data plus footer.
	sort.Slice(spans, func(a, b int) bool { return spans[a].off < spans[b].off })
	var total uint64
	for k, s := range spans {
		if k > 0 && s.off < spans[k-1].end {
			return nil, apr0Err(int64(dataOff+s.off), fmt.Sprintf("index[%d].offset", s.i), "tensor data overlaps tensor index[%d]", spans[k-1].i)
		}
		total += s.end - s.off
	}
	if dataOff+total+4 != size {
		return nil, apr0Err(int64(size-4), "file size", "%d bytes, expected data offset %d + padded tensor data %d + 4-byte footer = %d",
			size, dataOff, total, dataOff+total+4)
	}
	return f, nil
}

// decodeJSONObject parses b as exactly one JSON object. Integral numbers become
// int64 (or uint64 above MaxInt64), others float64.
func decodeJSONObject(b []byte, off int64) (map[string]any, error) {
	if !utf8.Valid(b) {
		return nil, apr0Err(off, "metadata", "not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, apr0Err(off+dec.InputOffset(), "metadata", "invalid JSON: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, apr0Err(off, "metadata", "JSON %T, expected an object", v)
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) != 0 {
		return nil, apr0Err(off+dec.InputOffset(), "metadata", "%d bytes after the JSON object, expected none", len(rest))
	}
	return fixNumbers(m).(map[string]any), nil
}

func fixNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = fixNumbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = fixNumbers(e)
		}
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		var u uint64
		if _, err := fmt.Sscan(string(x), &u); err == nil && fmt.Sprint(u) == string(x) {
			return u
		}
		f, err := x.Float64()
		if err != nil {
			return string(x) // out of float64 range: kept as its text
		}
		return f
	}
	return v
}

// dequantQ4 expands aprender's own 4-bit blocks (f16 scale, 16 bytes of nibbles:
// value 2i in the low nibble, 2i+1 in the high one, q = nibble - 8) to F32 bytes.
// The caller has checked len(raw) = ceil(n/32)*18.
func dequantQ4(raw []byte, n int64) []byte {
	out := make([]byte, 4*n)
	for i := int64(0); i < n; i++ {
		blk := raw[(i/apr0Q4Block)*apr0Q4BBytes:]
		scale := kernels.F16BitsToF32(binary.LittleEndian.Uint16(blk))
		j := i % apr0Q4Block
		nib := blk[2+j/2]
		if j%2 == 0 {
			nib &= 0x0f
		} else {
			nib >>= 4
		}
		v := float32(int(nib)-8) * scale
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

// dequantQ8 expands aprender's own 8-bit format (one f32 scale, then n int8) to F32
// bytes. The caller has checked len(raw) = 4+n.
func dequantQ8(raw []byte, n int64) []byte {
	scale := math.Float32frombits(binary.LittleEndian.Uint32(raw))
	out := make([]byte, 4*n)
	for i := int64(0); i < n; i++ {
		v := float32(int8(raw[4+i])) * scale
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"unicode/utf8"

	"github.com/apr-go/apr/lib/dtype"
)

// MaxHeaderSize is the crate's cap on the JSON header length N.
const MaxHeaderSize = 100_000_000

// Caps on what a header may hold beyond the crate's own rules. The crate accepts any
// header up to MaxHeaderSize; these bound the memory a hostile one can cost (a header
// of millions of tiny entries costs ten times its size once parsed) and are far above
// what real checkpoints need (a few hundred tensors of a few dimensions a file, a
// __metadata__ of a few keys, at most some kilobytes of training notes). A header over
// one of them is refused as OverLimit; docs/SAFETENSORS.md lists these refusals.
const (
	// MaxMetadataSize is the most bytes of JSON the "__metadata__" value may span.
	MaxMetadataSize = 16 << 20
	// MaxMetadataEntries is the most keys "__metadata__" may hold.
	MaxMetadataEntries = 1 << 16
	// MaxTensors is the most tensor entries a header may hold.
	MaxTensors = 1 << 16
	// MaxDims is the most dimensions a shape may have (an APR tensor's cap too).
	MaxDims = 32
)

// MetadataKey is the reserved header key holding the string-to-string metadata map.
const MetadataKey = "__metadata__"

// MetadataEntry is one key/value pair of the "__metadata__" map.
type MetadataEntry struct {
	Key, Value string
}

// Metadata is the "__metadata__" map as an ordered list, so that a file read and
// written again keeps its key order. A nil Metadata means the header has no
// "__metadata__" key (or has it as null); a non-nil empty one writes
// "__metadata__":{}. Keys are unique.
type Metadata []MetadataEntry

// Get returns the value of key.
func (m Metadata) Get(key string) (string, bool) {
	for _, e := range m {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// TensorInfo describes one tensor of a header.
type TensorInfo struct {
	Name      string
	DType     dtype.DType
	DTypeName string  // the SafeTensors dtype string ("F32", "F8_E4M3", ...)
	Shape     []int64 // outermost dimension first; empty for a scalar
	Begin     int64   // data_offsets[0]: start of the data, relative to the data section
	End       int64   // data_offsets[1]: end of the data (exclusive)
}

// Size returns End-Begin, the tensor's byte count.
func (t TensorInfo) Size() int64 { return t.End - t.Begin }

// Header is a parsed (or planned) SafeTensors header.
type Header struct {
	Metadata Metadata
	// Tensors in data order: ascending offsets; tensors with equal offsets (only
	// zero-size tensors can have them) in the writer's order, dtype then name.
	Tensors []TensorInfo
	// HeaderSize is N, the JSON length including padding; the data starts at byte
	// 8+HeaderSize of the file.
	HeaderSize int64
	// DataSize is the byte length of the data section (the last tensor's End).
	DataSize int64
}

// DataStart returns the file offset of the data section.
func (h *Header) DataStart() int64 { return 8 + h.HeaderSize }

// FileSize returns the size the whole file has: 8 + HeaderSize + DataSize.
func (h *Header) FileSize() int64 { return 8 + h.HeaderSize + h.DataSize }

// Lookup returns the tensor called name.
func (h *Header) Lookup(name string) (TensorInfo, bool) {
	for _, t := range h.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return TensorInfo{}, false
}

// stDType is what this package knows about a SafeTensors dtype: its apr code, its bit
// width and its rank in the crate's Dtype enum, which orders the writer's output.
type stDType struct {
	code dtype.DType
	bits uint64
	rank int
}

// stDTypes is crate v0.6.2's Dtype enum, in declaration order (= its Ord).
var stDTypes = map[string]stDType{
	"BOOL":    {dtype.Bool, 8, 0},
	"F4":      {dtype.F4, 4, 1},
	"F6_E2M3": {dtype.F6E2M3, 6, 2},
	"F6_E3M2": {dtype.F6E3M2, 6, 3},
	"U8":      {dtype.U8, 8, 4},
	"I8":      {dtype.I8, 8, 5},
	"F8_E5M2": {dtype.F8E5M2, 8, 6},
	"F8_E4M3": {dtype.F8E4M3, 8, 7},
	"F8_E8M0": {dtype.F8E8M0, 8, 8},
	"I16":     {dtype.I16, 16, 9},
	"U16":     {dtype.U16, 16, 10},
	"F16":     {dtype.F16, 16, 11},
	"BF16":    {dtype.BF16, 16, 12},
	"I32":     {dtype.I32, 32, 13},
	"U32":     {dtype.U32, 32, 14},
	"F32":     {dtype.F32, 32, 15},
	"F64":     {dtype.F64, 64, 16},
	"I64":     {dtype.I64, 64, 17},
	"U64":     {dtype.U64, 64, 18},
}

// lookupDType maps an apr dtype to its SafeTensors description.
func lookupDType(d dtype.DType) (string, stDType, bool) {
	name := d.Info().SafeTensors
	if name == "" {
		return "", stDType{}, false
	}
	st, ok := stDTypes[name]
	return name, st, ok && st.code == d
}

// byteSize computes the crate's byte count for a shape: the element count and then
// the bit count are overflow-checked in u64, and the bit count must be whole bytes.
// Dimensions are read as u64 bit patterns (the parser stores the crate's usize values
// in int64 slots, so one slice serves both).
func byteSize(shape []int64, bitsPer uint64) (uint64, Kind) {
	n := uint64(1)
	for _, d := range shape {
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 {
			return 0, ValidationOverflow
		}
		n = lo
	}
	hi, nb := bits.Mul64(n, bitsPer)
	if hi != 0 {
		return 0, ValidationOverflow
	}
	if nb%8 != 0 {
		return 0, MisalignedSlice
	}
	return nb / 8, 0
}

// rawTensor is a header entry as parsed, before validation.
type rawTensor struct {
	name       string
	dtypeName  string
	st         stDType
	shape      []int64 // u64 values as bit patterns: see byteSize
	begin, end uint64
	off        int // position of the entry's key in the header, for messages
}

// parseHeaderJSON decodes the header JSON with the crate's (serde's) rules. base is
// the file offset of hdr[0]. Every error is InvalidHeaderDeserialization.
func parseHeaderJSON(hdr []byte, base int64) (Metadata, []*rawTensor, error) {
	p := &jsonParser{b: hdr, base: base, kind: InvalidHeaderDeserialization}
	var meta Metadata
	seenMeta := false
	byName := map[string]int{}
	var tensors []*rawTensor
	c := p.peek()
	if c != '{' {
		if c == 0 {
			return nil, nil, p.errAt(p.i, "EOF while parsing the header: expected a JSON object")
		}
		if bytes.HasPrefix(hdr[p.i:], []byte("\xef\xbb\xbf")) {
			return nil, nil, p.errAt(p.i, "the header starts with a UTF-8 byte order mark, not '{' (the safetensors crate refuses it too)")
		}
		return nil, nil, p.errAt(p.i, "invalid type: %s, expected the header object", p.describe(p.i))
	}
	err := p.object("the header", func(key string, keyOff int) error {
		if key == MetadataKey {
			if seenMeta {
				return p.errAt(keyOff, "duplicate field `__metadata__`")
			}
			seenMeta = true
			m, err := parseMetadata(p)
			meta = m
			return err
		}
		t, err := parseTensorEntry(p, key)
		if err != nil {
			if e, ok := err.(*Error); ok && e.Tensor == "" {
				e.Tensor = key
			}
			return err
		}
		t.off = keyOff
		// The crate collects tensors in a HashMap: a repeated name keeps the last entry.
		if i, ok := byName[key]; ok {
			tensors[i] = t
			return nil
		}
		if len(tensors) >= MaxTensors {
			return errf(OverLimit, p.base+int64(keyOff), "more than %d tensors (apr's cap, MaxTensors)", MaxTensors)
		}
		byName[key] = len(tensors)
		tensors = append(tensors, t)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if err := p.end(); err != nil {
		return nil, nil, err
	}
	return meta, tensors, nil
}

// parseMetadata decodes the value of "__metadata__": null or a string->string object.
func parseMetadata(p *jsonParser) (Metadata, error) {
	if null, err := p.isNull(); null || err != nil {
		return nil, err
	}
	meta := Metadata{}
	pos := map[string]int{}
	start := p.i
	err := p.object("__metadata__", func(key string, keyOff int) error {
		if len(meta) >= MaxMetadataEntries {
			return errf(OverLimit, p.base+int64(keyOff), "__metadata__ has more than %d keys (apr's cap, MaxMetadataEntries)", MaxMetadataEntries)
		}
		if p.peek() != '"' {
			return p.errAt(p.i, "invalid type: %s, expected a string as the value of __metadata__ key %q", p.describe(p.i), key)
		}
		v, err := p.str()
		if err != nil {
			return err
		}
		if p.i-start > MaxMetadataSize {
			return errf(OverLimit, p.base+int64(keyOff), "__metadata__ is over %d bytes of JSON (apr's cap, MaxMetadataSize)", MaxMetadataSize)
		}
		// A HashMap<String, String> in the crate: the last of repeated keys wins.
		if i, ok := pos[key]; ok {
			meta[i].Value = v
			return nil
		}
		pos[key] = len(meta)
		meta = append(meta, MetadataEntry{key, v})
		return nil
	})
	return meta, err
}

// parseTensorEntry decodes one TensorInfo. Like serde's derive it takes an object with
// the exact field names dtype, shape and data_offsets (unknown fields ignored,
// repeated ones refused) or a 3-element array of the same values in that order.
func parseTensorEntry(p *jsonParser, name string) (*rawTensor, error) {
	t := &rawTensor{name: name}
	var have [3]bool
	field := func(i int) error {
		switch i {
		case 0:
			return parseDType(p, t)
		case 1:
			t.shape = []int64{}
			return p.array("shape", func(k int) error {
				if k >= MaxDims {
					return errf(OverLimit, p.base+int64(p.i), "shape of tensor %q has more than %d dimensions (apr's cap, MaxDims)", name, MaxDims)
				}
				v, err := p.uint("a shape dimension")
				t.shape = append(t.shape, int64(v))
				return err
			})
		default:
			n := 0
			start := p.i
			err := p.array("data_offsets", func(k int) error {
				if k >= 2 {
					return p.errAt(p.i, "invalid length: data_offsets of tensor %q has more than 2 elements", name)
				}
				v, err := p.uint("a data offset")
				if k == 0 {
					t.begin = v
				} else {
					t.end = v
				}
				n++
				return err
			})
			if err == nil && n != 2 {
				return p.errAt(start, "invalid length %d: data_offsets of tensor %q needs 2 elements", n, name)
			}
			return err
		}
	}
	fieldNames := [3]string{"dtype", "shape", "data_offsets"}
	switch p.peek() {
	case '{':
		err := p.object("a tensor entry", func(key string, keyOff int) error {
			for i, f := range fieldNames {
				if key == f {
					if have[i] {
						return p.errAt(keyOff, "duplicate field `%s` in tensor %q", f, name)
					}
					have[i] = true
					return field(i)
				}
			}
			return p.skip() // serde ignores unknown fields
		})
		if err != nil {
			return nil, err
		}
		for i, f := range fieldNames {
			if !have[i] {
				return nil, p.errAt(p.i, "missing field `%s` in tensor %q", f, name)
			}
		}
	case '[':
		n := 0
		start := p.i
		err := p.array("a tensor entry", func(k int) error {
			if k >= 3 {
				return p.errAt(p.i, "invalid length: tensor %q as an array has more than 3 elements", name)
			}
			n++
			return field(k)
		})
		if err != nil {
			return nil, err
		}
		if n != 3 {
			return nil, p.errAt(start, "invalid length %d: tensor %q as an array needs 3 elements (dtype, shape, data_offsets)", n, name)
		}
	default:
		return nil, p.errAt(p.i, "invalid type: %s, expected tensor %q to be an object {dtype, shape, data_offsets}", p.describe(p.i), name)
	}
	return t, nil
}

// parseDType reads a dtype: a variant name as a string, or serde's externally tagged
// form {"NAME": null}.
func parseDType(p *jsonParser, t *rawTensor) error {
	var name string
	switch p.peek() {
	case '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		name = s
	case '{':
		n := 0
		start := p.i
		err := p.object("dtype", func(key string, _ int) error {
			if n > 0 {
				return p.errAt(start, "invalid value: dtype of tensor %q is a map with more than one key", t.name)
			}
			n++
			name = key
			if null, err := p.isNull(); err != nil || !null {
				if err == nil {
					err = p.errAt(p.i, "invalid type: %s, expected null as the value of dtype variant %q", p.describe(p.i), key)
				}
				return err
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return p.errAt(start, "invalid value: dtype of tensor %q is an empty map", t.name)
		}
	default:
		return p.errAt(p.i, "invalid type: %s, expected the dtype of tensor %q as a string", p.describe(p.i), t.name)
	}
	st, ok := stDTypes[name]
	if !ok {
		return p.errAt(p.i, "unknown dtype %q for tensor %q (expected one of BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64)", name, t.name)
	}
	t.dtypeName, t.st = name, st
	return nil
}

// validate runs the crate's Metadata::validate over the tensors sorted by offsets:
// each must start where the previous one ended (from 0), and span exactly shape x
// dtype bytes. It returns the header with tensors in data order.
func validate(meta Metadata, raw []*rawTensor, headerSize int64) (*Header, error) {
	sort.SliceStable(raw, func(i, j int) bool {
		a, b := raw[i], raw[j]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		if a.end != b.end {
			return a.end < b.end
		}
		// Ties (zero-size tensors, or overlaps about to be refused) in the crate
		// writer's order, so that a crate-written file reads back in its own order.
		if a.st.rank != b.st.rank {
			return a.st.rank > b.st.rank
		}
		return a.name < b.name
	})
	h := &Header{Metadata: meta, HeaderSize: headerSize, Tensors: make([]TensorInfo, 0, len(raw))}
	dataStart := 8 + headerSize
	var start uint64
	for _, t := range raw {
		if t.begin != start || t.end < t.begin {
			what := fmt.Sprintf("expected it to begin at %d, right after the previous tensor", start)
			if t.end < t.begin {
				what = "end is before begin"
			}
			return nil, tensorErr(InvalidOffset, t.name, 8+int64(t.off),
				"data_offsets [%d, %d]: %s", t.begin, t.end, what)
		}
		start = t.end
		size, k := byteSize(t.shape, t.st.bits)
		switch k {
		case ValidationOverflow:
			return nil, tensorErr(k, t.name, 8+int64(t.off), "shape %v of %s: element or bit count overflows 64 bits", uintShape(t.shape), t.dtypeName)
		case MisalignedSlice:
			return nil, tensorErr(k, t.name, 8+int64(t.off), "shape %v of %s is not a whole number of bytes (%d bits per element)", uintShape(t.shape), t.dtypeName, t.st.bits)
		}
		if t.end-t.begin != size {
			return nil, tensorErr(TensorInvalidInfo, t.name, 8+int64(t.off),
				"data_offsets [%d, %d] span %d bytes, but %s %v needs %d", t.begin, t.end, t.end-t.begin, t.dtypeName, uintShape(t.shape), size)
		}
		for i, d := range t.shape {
			if d < 0 {
				// Only possible for a zero-size tensor with another dimension 0; the crate
				// accepts it, but an int64 shape cannot hold it.
				return nil, tensorErr(ValidationOverflow, t.name, 8+int64(t.off), "dimension %d of shape %v does not fit an int64", i, uintShape(t.shape))
			}
		}
		if t.end > uint64(math.MaxInt64-dataStart) {
			return nil, tensorErr(MetadataIncompleteBuffer, t.name, 8+int64(t.off), "data_offsets end %d is beyond any possible file size", t.end)
		}
		h.Tensors = append(h.Tensors, TensorInfo{
			Name: t.name, DType: t.st.code, DTypeName: t.dtypeName, Shape: t.shape,
			Begin: int64(t.begin), End: int64(t.end),
		})
	}
	h.DataSize = int64(start)
	return h, nil
}

// headerLength decodes and checks the 8-byte prefix (HeaderTooLarge).
func headerLength(prefix []byte) (int64, error) {
	n := binary.LittleEndian.Uint64(prefix)
	if n > MaxHeaderSize {
		return 0, errf(HeaderTooLarge, 0, "header length %d is over the limit of %d bytes", n, MaxHeaderSize)
	}
	return int64(n), nil
}

// parseHeader checks UTF-8 and parses and validates the N header bytes.
func parseHeader(hdr []byte) (*Header, error) {
	if !utf8.Valid(hdr) {
		i := 0
		for i < len(hdr) {
			r, size := utf8.DecodeRune(hdr[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		return nil, errf(InvalidHeader, 8+int64(i), "header is not valid UTF-8 (valid up to header byte %d)", i)
	}
	meta, raw, err := parseHeaderJSON(hdr, 8)
	if err != nil {
		return nil, err
	}
	return validate(meta, raw, int64(len(hdr)))
}

// Decode parses and checks a whole SafeTensors file held in memory, as the crate's
// SafeTensors::deserialize does, and returns its header. The tensor data of t is
// b[h.DataStart()+t.Begin : h.DataStart()+t.End].
func Decode(b []byte) (*Header, error) { return decodeAt(bytes.NewReader(b), int64(len(b))) }

// decodeAt reads and checks the header of the size-byte file r, as Decode does.
func decodeAt(r io.ReaderAt, size int64) (*Header, error) {
	if size < 8 {
		return nil, errf(HeaderTooSmall, 0, "%d bytes: need at least 8 for the header length", size)
	}
	var prefix [8]byte
	if _, err := r.ReadAt(prefix[:], 0); err != nil {
		return nil, err
	}
	n, err := headerLength(prefix[:])
	if err != nil {
		return nil, err
	}
	if n > size-8 {
		return nil, errf(InvalidHeaderLength, 8, "header length %d runs past the end of the file (%d bytes)", n, size)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil && n > 0 { // a bytes.Reader says EOF for nothing read at its end
		return nil, err
	}
	h, err := parseHeader(hdr)
	if err != nil {
		return nil, err
	}
	if h.FileSize() != size {
		return nil, incomplete(h, size)
	}
	return h, nil
}

func incomplete(h *Header, size int64) error {
	return errf(MetadataIncompleteBuffer, h.DataStart()+h.DataSize,
		"tensor data ends at file offset %d but the file has %d bytes", h.FileSize(), size)
}

// uintShape formats a parsed shape with its dimensions as the unsigned values they are.
func uintShape(shape []int64) []uint64 {
	out := make([]uint64, len(shape))
	for i, d := range shape {
		out[i] = uint64(d)
	}
	return out
}

package aprender

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// msgpackDecoder turns one MessagePack value into plain Go values. It is written
// here rather than taken from a library so that a claimed array or map length is
// checked against the bytes left (each element needs at least one) before anything
// is allocated, and nesting is capped.
type msgpackDecoder struct {
	b    []byte
	pos  int
	base int64 // file offset of b[0], for errors
}

const maxMsgpackDepth = 64

func (d *msgpackDecoder) fail(format string, args ...any) error {
	return &FormatError{Layout: LayoutAPRN, Offset: d.base + int64(d.pos), Field: "metadata", Msg: fmt.Sprintf(format, args...)}
}

func (d *msgpackDecoder) need(n uint64) ([]byte, error) {
	if n > uint64(len(d.b)-d.pos) {
		return nil, &FormatError{Layout: LayoutAPRN, Offset: d.base + int64(d.pos), Field: "metadata",
			Msg: fmt.Sprintf("value needs %d bytes, %d left", n, len(d.b)-d.pos), Err: ErrTruncated}
	}
	s := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return s, nil
}

func (d *msgpackDecoder) uint(n int) (uint64, error) {
	s, err := d.need(uint64(n))
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return uint64(s[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(s)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(s)), nil
	default:
		return binary.BigEndian.Uint64(s), nil
	}
}

func (d *msgpackDecoder) value(depth int) (any, error) {
	if depth > maxMsgpackDepth {
		return nil, d.fail("nesting deeper than %d", maxMsgpackDepth)
	}
	start := d.pos
	t, err := d.uint(1)
	if err != nil {
		return nil, err
	}
	c := byte(t)
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case c&0xf0 == 0x80:
		return d.mapBody(uint64(c&0x0f), depth)
	case c&0xf0 == 0x90:
		return d.arrayBody(uint64(c&0x0f), depth)
	case c&0xe0 == 0xa0:
		return d.str(uint64(c & 0x1f))
	}
	switch c {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xc4, 0xc5, 0xc6:
		n, err := d.uint(1 << (c - 0xc4))
		if err != nil {
			return nil, err
		}
		s, err := d.need(n)
		if err != nil {
			return nil, err
		}
		return append([]byte(nil), s...), nil
	case 0xca:
		u, err := d.uint(4)
		return float64(math.Float32frombits(uint32(u))), err
	case 0xcb:
		u, err := d.uint(8)
		return math.Float64frombits(u), err
	case 0xcc, 0xcd, 0xce:
		u, err := d.uint(1 << (c - 0xcc))
		return int64(u), err
	case 0xcf:
		u, err := d.uint(8)
		if u <= math.MaxInt64 {
			return int64(u), err
		}
		return u, err
	case 0xd0, 0xd1, 0xd2, 0xd3:
		n := 1 << (c - 0xd0)
		u, err := d.uint(n)
		shift := 64 - 8*n
		return int64(u<<shift) >> shift, err
	case 0xd9, 0xda, 0xdb:
		n, err := d.uint(1 << (c - 0xd9))
		if err != nil {
			return nil, err
		}
		return d.str(n)
	case 0xdc, 0xdd:
		n, err := d.uint(2 << (c - 0xdc))
		if err != nil {
			return nil, err
		}
		return d.arrayBody(n, depth)
	case 0xde, 0xdf:
		n, err := d.uint(2 << (c - 0xde))
		if err != nil {
			return nil, err
		}
		return d.mapBody(n, depth)
	}
	d.pos = start
	return nil, d.fail("MessagePack type byte 0x%02x (extension or reserved) is not supported in metadata", c)
}

func (d *msgpackDecoder) str(n uint64) (any, error) {
	at := d.pos
	s, err := d.need(n)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(s) {
		d.pos = at
		return nil, d.fail("string is not valid UTF-8")
	}
	return string(s), nil
}

func (d *msgpackDecoder) arrayBody(n uint64, depth int) (any, error) {
	if n > uint64(len(d.b)-d.pos) {
		return nil, &FormatError{Layout: LayoutAPRN, Offset: d.base + int64(d.pos), Field: "metadata",
			Msg: fmt.Sprintf("array of %d elements, only %d bytes left", n, len(d.b)-d.pos), Err: ErrTruncated}
	}
	out := make([]any, 0, n)
	for i := uint64(0); i < n; i++ {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (d *msgpackDecoder) mapBody(n uint64, depth int) (any, error) {
	if n > uint64(len(d.b)-d.pos)/2 {
		return nil, &FormatError{Layout: LayoutAPRN, Offset: d.base + int64(d.pos), Field: "metadata",
			Msg: fmt.Sprintf("map of %d entries, only %d bytes left", n, len(d.b)-d.pos), Err: ErrTruncated}
	}
	out := make(map[string]any, n)
	for i := uint64(0); i < n; i++ {
		at := d.pos
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		ks, ok := k.(string)
		if !ok {
			d.pos = at
			return nil, d.fail("map key is %T, expected a string", k)
		}
		if _, dup := out[ks]; dup {
			d.pos = at
			return nil, d.fail("duplicate map key %q", ks)
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[ks] = v
	}
	return out, nil
}

// decodeMsgpackMap decodes b, which must hold exactly one MessagePack map.
func decodeMsgpackMap(b []byte, base int64) (map[string]any, error) {
	d := &msgpackDecoder{b: b, base: base}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &FormatError{Layout: LayoutAPRN, Offset: base, Field: "metadata", Msg: fmt.Sprintf("%T, expected a MessagePack map", v)}
	}
	if d.pos != len(b) {
		return nil, d.fail("%d bytes after the metadata map, expected none", len(b)-d.pos)
	}
	return m, nil
}

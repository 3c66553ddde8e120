// Package mpwalk is apr's one hostile MessagePack walker: it reads the header of one
// value at a time from bytes that may be hostile, checking every length against the
// bytes that remain before anything is allocated (a string, binary or extension body
// must be present; an array or map claims no more elements than there are bytes left,
// each element taking at least one). On top of it sit the two users: container's
// check of APR v2 metadata before a full decoder builds it (Check), and aprender's
// decoder of APRN v1 metadata into plain Go values (Decode). Nesting is bounded by
// MaxDepth in both.
//
// It is a leaf of layer 0 and imports nothing of ours.
package mpwalk

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of arrays and maps.
const MaxDepth = 64

// Kind is the kind of a value.
type Kind uint8

// Kinds of values.
const (
	Nil Kind = iota
	Bool
	Int   // Head.Int
	Uint  // Head.Uint, above math.MaxInt64
	Float // Head.Float (float32 values widened)
	Str   // Head.N bytes follow
	Bin   // Head.N bytes follow
	Ext   // Head.N bytes follow: the type byte and the data
	Array // Head.N elements follow
	Map   // Head.N entries (key, value) follow
)

// Head is the header of one value.
type Head struct {
	Kind  Kind
	Type  byte // the type byte
	N     uint64
	Bool  bool
	Int   int64
	Uint  uint64
	Float float64
}

// Error is a malformed or truncated value at byte Pos of the input.
type Error struct {
	Pos       int
	Msg       string
	Truncated bool // the input ends before a length it claims
	reserved  bool // a type byte MessagePack does not define
}

func (e *Error) Error() string { return e.Msg }

// Reader walks the values of B from Pos.
type Reader struct {
	B   []byte
	Pos int
}

// Left returns the number of bytes not yet read.
func (r *Reader) Left() int { return len(r.B) - r.Pos }

func (r *Reader) fail(truncated bool, format string, args ...any) error {
	return &Error{Pos: r.Pos, Msg: fmt.Sprintf(format, args...), Truncated: truncated}
}

// Bytes returns the next n bytes (a body whose length a Head gave).
func (r *Reader) Bytes(n uint64) ([]byte, error) {
	if n > uint64(r.Left()) {
		return nil, r.fail(true, "value needs %d bytes, %d left", n, r.Left())
	}
	s := r.B[r.Pos : r.Pos+int(n)]
	r.Pos += int(n)
	return s, nil
}

func (r *Reader) uint(n int) (uint64, error) {
	s, err := r.Bytes(uint64(n))
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

// Next reads the header of the next value. For Str, Bin and Ext the body (N bytes)
// is next; for Array and Map the elements are, and N is checked against the bytes
// left. On an error Pos is that of the value's type byte.
func (r *Reader) Next() (Head, error) {
	start := r.Pos
	h, err := r.next()
	if err != nil {
		if e, ok := err.(*Error); ok && !e.Truncated {
			r.Pos, e.Pos = start, start
		}
		return Head{}, err
	}
	switch {
	case h.Kind == Array && h.N > uint64(r.Left()):
		return Head{}, r.fail(true, "array of %d elements, only %d bytes left", h.N, r.Left())
	case h.Kind == Map && h.N > uint64(r.Left())/2:
		return Head{}, r.fail(true, "map of %d entries, only %d bytes left", h.N, r.Left())
	}
	return h, nil
}

func (r *Reader) next() (Head, error) {
	t, err := r.uint(1)
	if err != nil {
		return Head{}, err
	}
	c := byte(t)
	h := Head{Type: c}
	switch {
	case c <= 0x7f:
		h.Kind, h.Int = Int, int64(c)
		return h, nil
	case c >= 0xe0:
		h.Kind, h.Int = Int, int64(int8(c))
		return h, nil
	case c&0xf0 == 0x80:
		h.Kind, h.N = Map, uint64(c&0x0f)
		return h, nil
	case c&0xf0 == 0x90:
		h.Kind, h.N = Array, uint64(c&0x0f)
		return h, nil
	case c&0xe0 == 0xa0:
		h.Kind, h.N = Str, uint64(c&0x1f)
		return h, nil
	}
	switch c {
	case 0xc0:
		h.Kind = Nil
	case 0xc2, 0xc3:
		h.Kind, h.Bool = Bool, c == 0xc3
	case 0xc4, 0xc5, 0xc6:
		h.Kind = Bin
		h.N, err = r.uint(1 << (c - 0xc4))
	case 0xc7, 0xc8, 0xc9: // ext 8/16/32: length, type, data
		h.Kind = Ext
		h.N, err = r.uint(1 << (c - 0xc7))
		h.N++
	case 0xca:
		var u uint64
		u, err = r.uint(4)
		h.Kind, h.Float = Float, float64(math.Float32frombits(uint32(u)))
	case 0xcb:
		var u uint64
		u, err = r.uint(8)
		h.Kind, h.Float = Float, math.Float64frombits(u)
	case 0xcc, 0xcd, 0xce:
		var u uint64
		u, err = r.uint(1 << (c - 0xcc))
		h.Kind, h.Int = Int, int64(u)
	case 0xcf:
		var u uint64
		u, err = r.uint(8)
		if u <= math.MaxInt64 {
			h.Kind, h.Int = Int, int64(u)
		} else {
			h.Kind, h.Uint = Uint, u
		}
	case 0xd0, 0xd1, 0xd2, 0xd3:
		n := 1 << (c - 0xd0)
		var u uint64
		u, err = r.uint(n)
		shift := 64 - 8*n
		h.Kind, h.Int = Int, int64(u<<shift)>>shift
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16: type, data
		h.Kind, h.N = Ext, 1+1<<(c-0xd4)
	case 0xd9, 0xda, 0xdb:
		h.Kind = Str
		h.N, err = r.uint(1 << (c - 0xd9))
	case 0xdc, 0xdd:
		h.Kind = Array
		h.N, err = r.uint(2 << (c - 0xdc))
	case 0xde, 0xdf:
		h.Kind = Map
		h.N, err = r.uint(2 << (c - 0xde))
	default:
		return Head{}, &Error{Pos: r.Pos, Msg: fmt.Sprintf("0x%02x is not a MessagePack type", c), reserved: true}
	}
	return h, err
}

// Check walks one value that must be a map and fill b, without building it and
// without recursion: every length fits the bytes that remain and nesting stays
// within MaxDepth, and no map holds a key twice (by content: "a" as fixstr and as str8
// is one key). Extension values are skipped, not refused.
func Check(b []byte) error {
	if len(b) == 0 || !(b[0]>>4 == 0x8 || b[0] == 0xde || b[0] == 0xdf) {
		return fmt.Errorf("not a MessagePack map")
	}
	r := Reader{B: b}
	stack := []frame{{left: 1}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.left == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		isKey := top.seen != nil && top.left%2 == 0
		top.left--
		start := r.Pos
		h, err := r.Next()
		if err != nil {
			return err
		}
		switch h.Kind {
		case Str, Bin, Ext:
			body, err := r.Bytes(h.N)
			if err != nil {
				return err
			}
			if isKey {
				// a string key by its content, whatever its encoding (fixstr, str8, ...)
				if err := top.add(fmt.Sprintf("%d:%s", h.Kind, body), start); err != nil {
					return err
				}
			}
			continue
		case Array, Map:
			if isKey {
				return &Error{Pos: start, Msg: "a map key that is an array or a map"}
			}
			items := h.N
			var seen map[string]bool
			if h.Kind == Map {
				items *= 2
				seen = map[string]bool{}
			}
			if items == 0 {
				continue
			}
			if len(stack) >= MaxDepth {
				return fmt.Errorf("nesting deeper than %d", MaxDepth)
			}
			stack = append(stack, frame{left: items, seen: seen})
			continue
		}
		if isKey {
			if err := top.add(fmt.Sprintf("%d:%v:%v:%v:%v", h.Kind, h.Bool, h.Int, h.Uint, h.Float), start); err != nil {
				return err
			}
		}
	}
	if r.Left() != 0 {
		return fmt.Errorf("%d trailing bytes", r.Left())
	}
	return nil
}

// frame is an array or map that Check is reading: the values still to read and, for
// a map, the keys seen, since a key twice would give the map two meanings (a reader
// that keeps the first value and one that keeps the last disagree).
type frame struct {
	left uint64
	seen map[string]bool // nil for an array
}

func (f *frame) add(key string, pos int) error {
	if f.seen[key] {
		return &Error{Pos: pos, Msg: "duplicate map key"}
	}
	f.seen[key] = true
	return nil
}

// Decode decodes one map that must fill b into plain Go values: nil, bool, int64
// (uint64 above math.MaxInt64), float64, string (valid UTF-8), []byte, []any and
// map[string]any (string keys, no key twice). Extension types are refused.
func Decode(b []byte) (map[string]any, error) {
	r := Reader{B: b}
	v, err := r.value(0)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{Msg: fmt.Sprintf("%T, expected a MessagePack map", v)}
	}
	if r.Left() != 0 {
		return nil, r.fail(false, "%d bytes after the metadata map, expected none", r.Left())
	}
	return m, nil
}

func (r *Reader) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, r.fail(false, "nesting deeper than %d", MaxDepth)
	}
	start := r.Pos
	h, err := r.Next()
	if e, ok := err.(*Error); ok && e.reserved {
		h, err = Head{Kind: Ext, Type: r.B[start]}, nil
	}
	if err != nil {
		return nil, err
	}
	switch h.Kind {
	case Nil:
		return nil, nil
	case Bool:
		return h.Bool, nil
	case Int:
		return h.Int, nil
	case Uint:
		return h.Uint, nil
	case Float:
		return h.Float, nil
	case Bin:
		s, err := r.Bytes(h.N)
		if err != nil {
			return nil, err
		}
		return append([]byte(nil), s...), nil
	case Str:
		at := r.Pos
		s, err := r.Bytes(h.N)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(s) {
			r.Pos = at
			return nil, r.fail(false, "string is not valid UTF-8")
		}
		return string(s), nil
	case Array:
		out := make([]any, 0, h.N)
		for i := uint64(0); i < h.N; i++ {
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case Map:
		out := make(map[string]any, h.N)
		for i := uint64(0); i < h.N; i++ {
			at := r.Pos
			k, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				r.Pos = at
				return nil, r.fail(false, "map key is %T, expected a string", k)
			}
			if _, dup := out[ks]; dup {
				r.Pos = at
				return nil, r.fail(false, "duplicate map key %q", ks)
			}
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out[ks] = v
		}
		return out, nil
	}
	r.Pos = start
	return nil, r.fail(false, "MessagePack type byte 0x%02x (extension or reserved) is not supported in metadata", h.Type)
}

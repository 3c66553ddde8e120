package mpwalk

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestDecode: every scalar decodes, hostile lengths fail before allocating, and the
// errors say where.
func TestDecode(t *testing.T) {
	m, err := Decode([]byte{0x84, 0xa1, 'a', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xa1, 'b', 0x92, 0xc3, 0xff, 0xa1, 'c', 0xc4, 0x01, 0x07, 0xa1, 'd', 0xca, 0x3f, 0x80, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if m["a"] != uint64(1<<64-1) || m["b"].([]any)[0] != true || m["b"].([]any)[1] != int64(-1) ||
		!bytes.Equal(m["c"].([]byte), []byte{7}) || m["d"] != 1.0 {
		t.Fatalf("%#v", m)
	}
	for _, c := range []struct {
		b    []byte
		want string
		pos  int
	}{
		{[]byte{0xdf, 0xff, 0xff, 0xff, 0xff}, "map of 4294967295 entries", 5},
		{[]byte{0x81, 0xa1, 'a', 0xc1}, "0xc1 (extension or reserved)", 3},
		{[]byte{0x81, 0xa1, 'a', 0xd4, 0, 0}, "0xd4 (extension or reserved)", 3},
		{[]byte{0x81, 0xa1, 'a', 0xa3, 'x'}, "value needs 3 bytes, 1 left", 4},
	} {
		_, err := Decode(c.b)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, c.want) || e.Pos != c.pos {
			t.Errorf("% x: %v (%+v), want %q at %d", c.b, err, e, c.want, c.pos)
		}
	}
}

// FuzzWalk: neither walker panics, and what Decode accepts Check accepts, but for
// nesting: Check allows 63 levels below the top map, Decode 64 (their users' limits
// before they shared this package).
func FuzzWalk(f *testing.F) {
	for _, s := range [][]byte{{0x80}, {0x81, 0xa1, 'a', 0x91, 0x01}, {0xde, 0, 1, 0xa1, 'k', 0xd4, 1, 2},
		{0x81, 0xa1, 'a', 0xdd, 0x7f, 0xff, 0xff, 0xff}, append(bytes.Repeat([]byte{0x91}, 70), 1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cerr := Check(b)
		if _, err := Decode(b); err == nil && cerr != nil && !strings.Contains(cerr.Error(), "nesting") {
			t.Fatalf("Decode accepts, Check refuses: %v", cerr)
		}
	})
}

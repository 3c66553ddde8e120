package imatrix

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

// fixture is llama-imatrix's output for the test checkpoint (testdata/hf/README.md).
const fixture = "../../testdata/hf/ref/tiny-llama.imatrix.dat"

// TestFixture reads the real llama-imatrix file: 14 entries (every 2-D weight of the
// two blocks; llama-imatrix leaves output.weight out), 20 calls each, the trailer, and
// values that are the file's sums divided by the call count.
func TestFixture(t *testing.T) {
	m, err := Load(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) != 14 || len(m.Names) != 14 || m.Chunks != 20 || m.Dataset != "calib.txt" || m.File != fixture {
		t.Fatalf("%d entries, %d names, %d chunks, dataset %q, file %q", len(m.Entries), len(m.Names), m.Chunks, m.Dataset, m.File)
	}
	if m.Names[0] != "blk.1.ffn_down.weight" || len(m.Entries["blk.1.ffn_down.weight"]) != 512 || len(m.Entries["blk.0.attn_q.weight"]) != 256 {
		t.Errorf("first entry %q, sizes %d %d", m.Names[0], len(m.Entries["blk.1.ffn_down.weight"]), len(m.Entries["blk.0.attn_q.weight"]))
	}
	// The first entry's first value, read by hand: name at 8, ncall and nval after it.
	b, _ := os.ReadFile(fixture)
	off := 8 + len("blk.1.ffn_down.weight")
	ncall := int32(binary.LittleEndian.Uint32(b[off:]))
	raw := math.Float32frombits(binary.LittleEndian.Uint32(b[off+8:]))
	if want := raw / float32(ncall); ncall != 20 || m.Entries[m.Names[0]][0] != want {
		t.Errorf("value 0: %v, want %v / %d", m.Entries[m.Names[0]][0], raw, ncall)
	}
	for name, v := range m.Entries {
		for _, x := range v {
			if !(x >= 0) {
				t.Fatalf("%s: importance %v", name, x)
			}
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	m, err := Load(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Parse("re-encoded", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if back.Chunks != m.Chunks || back.Dataset != m.Dataset || len(back.Names) != len(m.Names) {
		t.Fatalf("trailer or names differ: %+v", back)
	}
	for _, name := range m.Names {
		a, b := m.Entries[name], back.Entries[name]
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s[%d]: %v, want %v", name, i, b[i], a[i])
			}
		}
	}
}

// TestErrors: every malformed file is refused with the file's name, the offset and
// what was expected.
func TestErrors(t *testing.T) {
	good, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	le := func(v ...int32) []byte {
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, v)
		return b.Bytes()
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	nan := le(int32(math.Float32bits(float32(math.NaN()))))
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "offset 0: malformed importance matrix: the file ends inside the entry count"},
		{"no entries", le(0), "offset 0: malformed importance matrix: 0 entries"},
		{"too many entries", le(MaxEntries + 1), "entries (want 1 to"},
		{"negative name length", cat(le(1, -1)), "offset 4: malformed importance matrix: entry 1: name of -1 bytes"},
		{"short name", cat(le(1, 10), []byte("abc")), "offset 8: malformed importance matrix: entry 1: a name of 10 bytes, but only 3 bytes are left"},
		{"NUL in name", cat(le(1, 3), []byte("a\x00b"), le(1, 1, 0)), "offset 8: malformed importance matrix: entry 1: the name \"a\\x00b\" holds a NUL byte"},
		{"zero values", cat(le(1, 1), []byte("w"), le(1, 0)), "offset 13: malformed importance matrix: \"w\": 0 values"},
		{"huge value count", cat(le(1, 1), []byte("w"), le(1, math.MaxInt32)), "\"w\": 2147483647 values of 8589934588 bytes, but only 0 bytes are left"},
		{"NaN", cat(le(1, 1), []byte("w"), le(1, 1), nan), "offset 17: malformed importance matrix: \"w\": value 0 is NaN"},
		{"duplicate", cat(le(2, 1), []byte("w"), le(1, 1, 0), le(1), []byte("w"), le(1, 1, 0)), "offset 25: malformed importance matrix: entry 2: a second entry for \"w\""},
		{"short trailer", cat(good[:len(good)-17], le(20)[:2]), "the file ends inside the chunk count"},
		{"negative dataset length", cat(good[:len(good)-13], le(-5)), "dataset name of -5 bytes"},
		{"trailing bytes", cat(good, []byte{0}), "1 bytes after the dataset name, where the file should end"},
		{"GGUF", []byte("GGUF\x03\x00\x00\x00"), "this is a GGUF file"},
	} {
		_, err := Parse("x.dat", c.b)
		if err == nil || !errors.Is(err, ErrFormat) || !strings.HasPrefix(err.Error(), "x.dat: offset ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want x.dat: offset ... %s", c.name, err, c.want)
		}
	}
	if _, err := Load("no-such-file.dat"); err == nil || !strings.Contains(err.Error(), "no-such-file.dat") {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzParse: arbitrary bytes never panic; whatever parses re-encodes to a file that
// parses to the same matrix.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(fixture); err == nil {
		f.Add(b)
		f.Add(b[:len(b)-13])
	}
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 'w', 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 128, 63})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse("fuzz.dat", b)
		if err != nil {
			if !errors.Is(err, ErrFormat) || !strings.HasPrefix(err.Error(), "fuzz.dat: offset ") {
				t.Fatalf("error without the file and offset: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := m.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := Parse("again", buf.Bytes())
		if err != nil {
			t.Fatalf("re-encoded file refused: %v", err)
		}
		if len(back.Names) != len(m.Names) || back.Chunks != m.Chunks || back.Dataset != m.Dataset {
			t.Fatalf("round trip changed the matrix")
		}
		for _, name := range m.Names {
			a, b := m.Entries[name], back.Entries[name]
			if len(a) != len(b) {
				t.Fatalf("%q: %d values, then %d", name, len(a), len(b))
			}
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("%q[%d] changed", name, i)
				}
			}
		}
	})
}

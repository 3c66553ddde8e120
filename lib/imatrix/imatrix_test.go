package imatrix

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
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
		{"huge value count", cat(le(1, 1), []byte("w"), le(1, math.MaxInt32)), "offset 13: malformed importance matrix: \"w\": 2147483647 values (want 1 to 16777216, MaxValues)"},
		{"values beyond the file", cat(le(1, 1), []byte("w"), le(1, MaxValues), make([]byte, 8)), "offset 17: malformed importance matrix: \"w\": 16777216 values of 67108864 bytes, but only 8 bytes are left"},
		{"NaN", cat(le(1, 1), []byte("w"), le(1, 1), nan), "offset 17: malformed importance matrix: \"w\": value 0 is NaN"},
		{"duplicate", cat(le(2, 1), []byte("w"), le(1, 1, 0), le(1), []byte("w"), le(1, 1, 0)), "offset 25: malformed importance matrix: entry 2: a second entry for \"w\""},
		{"short trailer", cat(good[:len(good)-17], le(20)[:2]), "the file ends inside the chunk count"},
		{"negative dataset length", cat(good[:len(good)-13], le(-5)), "dataset name of -5 bytes"},
		{"huge dataset length", cat(good[:len(good)-13], le(MaxDatasetLen+1)), "dataset name of 65537 bytes (want 0 to 65536, MaxDatasetLen)"},
		{"trailing bytes", cat(good, []byte{0}), "1 bytes after the dataset name, where the file should end"},
	} {
		_, err := Parse("x.dat", c.b)
		if err == nil || !errors.Is(err, ErrFormat) || !strings.HasPrefix(err.Error(), "x.dat: offset ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want x.dat: offset ... %s", c.name, err, c.want)
		}
	}
	// The same files from a pipe (size unknown): refused as clearly, the file and
	// offset named; a truncation is found where the input ends.
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"no entries", le(0), "offset 0: malformed importance matrix: 0 entries"},
		{"short name", cat(le(1, 10), []byte("abc")), "offset 11: malformed importance matrix: the file ends inside entry 1: a name (3 of 10 bytes)"},
		{"huge value count", cat(le(1, 1), []byte("w"), le(1, math.MaxInt32)), "\"w\": 2147483647 values (want 1 to 16777216, MaxValues)"},
		{"values cut short", cat(le(1, 1), []byte("w"), le(1, 1000), make([]byte, 10)), "offset 27: malformed importance matrix: the file ends inside \"w\": 1000 values (10 of 4000 bytes)"},
		{"trailing bytes", cat(good, []byte{0}), "bytes after the dataset name, where the file should end"},
	} {
		_, err := Read("x.dat", pipe{bytes.NewReader(c.b)}, -1)
		if err == nil || !errors.Is(err, ErrFormat) || !strings.HasPrefix(err.Error(), "x.dat: offset ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s, from a pipe: %v; want x.dat: offset ... %s", c.name, err, c.want)
		}
	}
	if _, err := Load("no-such-file.dat"); err == nil || !strings.Contains(err.Error(), "no-such-file.dat") {
		t.Errorf("missing file: %v", err)
	}
}

// pipe hides a reader's other methods (a bytes.Reader's size), as a pipe has none.
type pipe struct{ r io.Reader }

func (p pipe) Read(b []byte) (int, error) { return p.r.Read(b) }

// counter counts the bytes read from r.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// endless is an input that never ends, as /dev/zero: prefix, then zero bytes.
type endless struct{ prefix []byte }

func (e *endless) Read(b []byte) (int, error) {
	n := copy(b, e.prefix)
	e.prefix = e.prefix[n:]
	clear(b[n:])
	return len(b), nil
}

// TestStreamedBounded: the parser reads lengths before allocating and the input no
// further than its lengths go. An endless input of zeros (/dev/zero) is refused
// after its first 4 bytes (one buffer read); an endless input whose first entry
// declares the most values (MaxValues) is refused at the first byte after its
// trailer, having read only that entry; a pipe that declares the most values and
// then ends allocates for what arrived, not for the declared count; a regular
// file's size bounds the lengths before anything is read for them.
func TestStreamedBounded(t *testing.T) {
	le := func(v ...int32) []byte {
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, v)
		return b.Bytes()
	}
	c := &counter{r: &endless{}}
	if _, err := Read("/dev/zero", c, -1); err == nil || !strings.Contains(err.Error(), "/dev/zero: offset 0: malformed importance matrix: 0 entries") {
		t.Errorf("endless zeros: %v", err)
	}
	if c.n > 64<<10 {
		t.Errorf("endless zeros: %d bytes read before the refusal, want one buffer (64 KiB)", c.n)
	}
	c = &counter{r: &endless{prefix: bytes.Join([][]byte{le(1, 1), []byte("w"), le(1, MaxValues)}, nil)}}
	_, err := Read("stdin", c, -1)
	if err == nil || !strings.Contains(err.Error(), "bytes after the dataset name, where the file should end") {
		t.Errorf("endless entry: %v", err)
	}
	if want := int64(17 + 4*MaxValues + 8); c.n < want || c.n > want+64<<10 {
		t.Errorf("endless entry: %d bytes read, want the entry and trailer's %d and at most a buffer more", c.n, want)
	}
	// A declared 64 MiB of values, 1 KiB sent.
	short := bytes.Join([][]byte{le(1, 1), []byte("w"), le(1, MaxValues), make([]byte, 1024)}, nil)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if _, err := Read("stdin", pipe{bytes.NewReader(short)}, -1); err == nil || !strings.Contains(err.Error(), "the file ends inside") {
		t.Errorf("short pipe: %v", err)
	}
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 1<<20 {
		t.Errorf("a pipe that declares %d values and sends 1 KiB: %d bytes allocated, want under 1 MiB", MaxValues, got)
	}
	// Files: the size is checked first; a file past MaxFileLen is not read at all.
	dir := t.TempDir()
	big := filepath.Join(dir, "big.dat")
	if err := os.WriteFile(big, le(1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileLen+1); err != nil {
		t.Skip("no sparse file of 4 GiB here:", err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), big+": offset 0: malformed importance matrix: 4294967297 bytes, more than the 4294967296 this reader takes (MaxFileLen)") {
		t.Errorf("a file past MaxFileLen: %v", err)
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

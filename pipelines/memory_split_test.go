//go:build linux

package pipelines

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
)

// runUnderLimit runs argv in dir under ulimit -v vmLimitKB (the hostile-input tests'
// limit) with GOMAXPROCS=2, env added to the environment and TMPDIR tmp, stdin from in
// (an *os.File is a redirect), and returns its stderr and exit code.
func runUnderLimit(t *testing.T, dir string, env []string, tmp string, in io.Reader, argv ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"-c", fmt.Sprintf(`ulimit -v %d && exec "$@"`, vmLimitKB), "bash"}, argv...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOMAXPROCS=2", "TMPDIR="+tmp), env...)
	cmd.Stdin, cmd.Stdout = in, io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stderr.String(), code
}

// refusedCleanly checks a hostile run: exit 1 with the program's message holding each
// of want, no crash of the Go runtime, and nothing new in dir (no -o output, no
// temporary file beside it) compared with before.
func refusedCleanly(t *testing.T, what, dir string, before []string, stderr string, code int, want ...string) {
	t.Helper()
	for _, crash := range []string{"fatal error", "panic", "goroutine ", "runtime: "} {
		if strings.Contains(stderr, crash) {
			t.Fatalf("%s crashed (exit %d): %.600s", what, code, stderr)
		}
	}
	if code != 1 || !strings.HasPrefix(stderr, "apr-") {
		t.Errorf("%s: exit %d, want 1 and the program's error: %.400s", what, code, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: the error lacks %q: %.600s", what, w, stderr)
		}
	}
	if after := dirNames(t, dir); !slices.Equal(after, before) {
		t.Errorf("%s: left %v behind (the folder held %v)", what, after, before)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// patchGGUFKV rewrites the value of the scalar KV key in the GGUF bytes b (type
// code, then the value's bytes).
func patchGGUFKV(t *testing.T, b []byte, key string, typ uint32, val []byte) {
	t.Helper()
	i := bytes.Index(b, ggufStr(key))
	if i < 0 {
		t.Fatalf("key %s not found", key)
	}
	i += len(ggufStr(key))
	binary.LittleEndian.PutUint32(b[i:], typ)
	copy(b[i+4:], val)
}

// TestHostileSplitAndImatrixUnderUlimit runs apr-gguf import on a hostile split GGUF
// set and apr-quant --imatrix on hostile importance matrices under ulimit -v
// (vmLimitKB), each with -o: a clear error naming the file and the limit, exit 1, no
// crash, nothing left beside the output. Before issue 30 each crashed with Go's
// "fatal error: out of memory" (and left the -o temporary), or took GBs without the
// limit (peak RSS: the 30-part set 7.4 GB, the 1200 MiB matrix 2.9 GB, /dev/zero
// 9.7 GB).
func TestHostileSplitAndImatrixUnderUlimit(t *testing.T) {
	needPrograms(t, "apr-gguf", "apr-quant", "apr-st")
	if testing.Short() {
		t.Skip("writes a 60 MiB split part and sparse files of up to 1.2 GiB (-short)")
	}
	dir := t.TempDir()
	hf, _ := filepath.Abs("../testdata/hf")
	split, _ := filepath.Abs("../testdata/gguf/split")
	if _, stderr, code := sh(t, dir, `
apr-st import '`+hf+`/tiny-llama' -o llama.apr
mkdir ok && cp '`+split+`'/tiny-llama.Q4_K_M-0000?-of-00003.gguf ok/
`); code != 0 {
		t.Fatal(stderr)
	}
	work := t.TempDir() // where the outputs go; it must stay empty
	out := filepath.Join(work, "out.apr")

	// The limit allows the work: the real 3-part set imports, and the real matrix
	// weights a quantization.
	t.Run("normal runs fit the limit", func(t *testing.T) {
		for _, argv := range [][]string{
			{"apr-gguf", "import", "ok/tiny-llama.Q4_K_M-00001-of-00003.gguf", "-o", out},
			{"apr-quant", "q4_k_m", "--imatrix", hf + "/ref/tiny-llama.imatrix.dat", "llama.apr", "-o", out},
		} {
			if stderr, code := runUnderLimit(t, dir, nil, t.TempDir(), strings.NewReader(""), argv...); code != 0 {
				t.Errorf("%s: exit %d: %s", strings.Join(argv, " "), code, stderr)
			}
			os.Remove(out)
		}
	})

	// A set of 30 parts whose later parts each hold a 60 MiB header of tensor infos
	// (1,470,000 tensors, valid one by one, their data sparse): parts 2 to 30 are hard
	// links of one file (its split.no is 1: the parts after the budget is spent are
	// never read). The first part is the Q4_K_M set's with split.count 30, and
	// split.tensors.count the set's total.
	t.Run("30 parts of 60 MiB headers", func(t *testing.T) {
		const n, parts = 1_470_000, 30
		total := uint32(8 + (parts-1)*n)
		first, err := os.ReadFile(filepath.Join(split, "tiny-llama.Q4_K_M-00001-of-00003.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		patchGGUFKV(t, first, "split.count", 2, binary.LittleEndian.AppendUint16(nil, parts))
		patchGGUFKV(t, first, "split.tensors.count", 5, binary.LittleEndian.AppendUint32(nil, total))
		set := t.TempDir()
		name := func(i int) string { return filepath.Join(set, fmt.Sprintf("x-%05d-of-%05d.gguf", i, parts)) }
		if err := os.WriteFile(name(1), first, 0o644); err != nil {
			t.Fatal(err)
		}
		u16 := func(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
		le := binary.LittleEndian
		b := ggufKVs(3,
			ggufStr("split.no"), le.AppendUint32(nil, 2), u16(1),
			ggufStr("split.count"), le.AppendUint32(nil, 2), u16(parts),
			ggufStr("split.tensors.count"), le.AppendUint32(nil, 5), le.AppendUint32(nil, total))
		binary.LittleEndian.PutUint64(b[8:], n) // the tensor count
		b = slices.Grow(b, n*43)
		for i := range n {
			b = append(b, ggufStr(fmt.Sprintf("t.%09d", i))...)
			b = le.AppendUint32(b, 1)            // n_dims
			b = le.AppendUint64(b, 8)            // 8 values
			b = le.AppendUint32(b, 0)            // F32
			b = le.AppendUint64(b, uint64(32*i)) // offset
		}
		if len(b) < 60<<20 {
			t.Fatalf("the later part's header is %d bytes, want at least 60 MiB", len(b))
		}
		b = append(b, make([]byte, (32-len(b)%32)%32)...)
		if err := os.WriteFile(name(2), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(name(2), int64(len(b)+32*n)); err != nil { // the data: sparse zeros
			t.Fatal(err)
		}
		for i := 3; i <= parts; i++ {
			if err := os.Link(name(2), name(i)); err != nil {
				t.Fatal(err)
			}
		}
		before := dirNames(t, work)
		stderr, code := runUnderLimit(t, dir, nil, t.TempDir(), strings.NewReader(""), "apr-gguf", "import", name(1), "-o", out)
		refusedCleanly(t, "apr-gguf import of the 30-part set", work, before, stderr, code,
			name(3)+": part 3 of 30: its header is longer than the", "left of the split set's header budget",
			"together may take 67108864 bytes", "gguf.Limits.MaxHeaderBytes")
	})

	// Importance matrices: a 1200 MiB file whose first 4 bytes are already invalid
	// (sparse), one entry claiming 1 GiB of values with 64 bytes present, the same
	// with its GiB present (sparse), an entry at the value cap with 64 bytes present,
	// /dev/zero, and a pipe that never ends after an entry at the value cap.
	t.Run("importance matrices", func(t *testing.T) {
		le := func(v ...int32) []byte {
			var b bytes.Buffer
			binary.Write(&b, binary.LittleEndian, v)
			return b.Bytes()
		}
		entry := func(nval int32) []byte {
			return bytes.Join([][]byte{le(1, int32(len("blk.0.attn_q.weight"))), []byte("blk.0.attn_q.weight"), le(1, nval)}, nil)
		}
		mats := t.TempDir()
		sparse := func(name string, head []byte, size int64) string {
			p := filepath.Join(mats, name)
			if err := os.WriteFile(p, head, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, size); err != nil {
				t.Fatal(err)
			}
			return p
		}
		bad := sparse("bad.dat", le(-1), 1200<<20)
		claim := sparse("claim.dat", entry(1<<28), int64(len(entry(0)))+64)
		gib := sparse("gib.dat", entry(1<<28), int64(len(entry(0)))+1<<30)
		capped := sparse("cap.dat", entry(1<<24), int64(len(entry(0)))+64)
		// llama-imatrix's GGUF form: a tensor count of 2^40, an entry at the value cap
		// with 64 bytes of its data present, and the same header before an endless pipe
		ggufBad := sparse("bad.gguf", append([]byte("GGUF\x03\x00\x00\x00"), le(0, 1<<8, 0, 0)...), 1200<<20)
		head := imatrixGGUFHeader(t, 1<<24)
		ggufCapped := sparse("cap.gguf", head, int64(len(head))+64)
		for _, c := range []struct {
			what, file string
			in         io.Reader
			want       []string
		}{
			{"1200 MiB, bad first bytes", bad, nil, []string{bad + ": offset 0: malformed importance matrix: -1 entries (want 1 to 65536, MaxEntries)"}},
			{"a 1 GiB entry, 64 bytes present", claim, nil, []string{claim + ": offset 31: malformed importance matrix: \"blk.0.attn_q.weight\": 268435456 values (want 1 to 16777216, MaxValues)"}},
			{"a 1 GiB entry, present", gib, nil, []string{gib + ": offset 31:", "268435456 values (want 1 to 16777216, MaxValues)"}},
			{"an entry at the cap, 64 bytes present", capped, nil, []string{capped + ": offset 35:", "16777216 values of 67108864 bytes, but only 64 bytes are left"}},
			{"/dev/zero", "/dev/zero", nil, []string{"/dev/zero: offset 0: malformed importance matrix: 0 entries (want 1 to 65536, MaxEntries)"}},
			{"GGUF, 2^40 tensors", ggufBad, nil, []string{ggufBad + ": gguf: offset 8: tensor count 1099511627776 exceeds the cap of 131072", "malformed importance matrix"}},
			{"GGUF, an entry at the cap, 64 bytes present", ggufCapped, nil, []string{ggufCapped + ": offset ", "16777216 values of 67108864 bytes, but only 64 bytes are left"}},
			{"GGUF, an endless pipe", "/dev/stdin", io.MultiReader(bytes.NewReader(head), &zeros{1 << 40}),
				[]string{`the importance matrix /dev/stdin has 16777216 values for it, want 256`}},
			{"an endless pipe", "/dev/stdin", io.MultiReader(bytes.NewReader(entry(1<<24)), &zeros{1 << 40}),
				[]string{"/dev/stdin: offset 67108907: malformed importance matrix: bytes after the dataset name, where the file should end"}},
		} {
			in := c.in
			if in == nil {
				in = strings.NewReader("")
			}
			before := dirNames(t, work)
			stderr, code := runUnderLimit(t, dir, nil, t.TempDir(), in, "apr-quant", "q4_k", "--imatrix", c.file, "llama.apr", "-o", out)
			refusedCleanly(t, "apr-quant --imatrix: "+c.what, work, before, stderr, code, c.want...)
		}
	})
}

// imatrixGGUFHeader is the header of an importance matrix in llama-imatrix's GGUF form
// whose one entry, blk.0.attn_q.weight, has n values.
func imatrixGGUFHeader(t *testing.T, n int64) []byte {
	t.Helper()
	h := &gguf.Header{KVs: []gguf.KV{
		{Key: "general.type", Value: gguf.String("imatrix")},
		{Key: "imatrix.datasets", Value: gguf.Array([]string{"calib.txt"})},
		{Key: "imatrix.chunk_count", Value: gguf.Uint32(1)},
		{Key: "imatrix.chunk_size", Value: gguf.Uint32(512)},
	}, Tensors: []gguf.TensorInfo{{Name: "blk.0.attn_q.weight.in_sum2", Dims: []int64{n}}, {Name: "blk.0.attn_q.weight.counts", Dims: []int64{1}}}}
	if err := h.Layout(); err != nil {
		t.Fatal(err)
	}
	b, err := h.EncodeHeader()
	if err != nil {
		t.Fatal(err)
	}
	return append(b, make([]byte, h.DataOffset-int64(len(b)))...)
}

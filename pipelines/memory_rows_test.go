//go:build linux

package pipelines

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// repeated is an io.Reader of n bytes of pattern over and over (a CSV line of any
// length, a JSON array), costing nothing to make.
type repeated struct {
	pattern []byte
	off     int
	n       int64
}

func (r *repeated) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n)]
	for i := range p {
		p[i] = r.pattern[r.off]
		r.off = (r.off + 1) % len(r.pattern)
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// onnxMLP returns an ONNX file of one layer y = x·w, w an initializer of shape dims
// (float32) whose raw_data declares n bytes, as the bytes before the raw data and
// those after it; Gemm (transB) reads w as [out, in], MatMul as [in, out].
func onnxMLP(op string, dims [2]int64, n int64) (head, tail []byte) {
	ld := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	vi := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	str := func(num protowire.Number, s string) []byte { return ld(num, []byte(s)) }
	cat := func(b ...[]byte) []byte { return bytes.Join(b, nil) }
	in := dims[0]
	node := cat(str(1, "x"), str(1, "w"), str(2, "y"), str(3, "layer"), str(4, op))
	if op == "Gemm" {
		node, in = append(node, ld(5, cat(str(1, "transB"), vi(3, 1), vi(20, 2)))...), dims[1]
	}
	input := cat(str(1, "x"), ld(2, ld(1, cat(vi(1, 1), ld(2, cat(ld(1, str(2, "N")), ld(1, vi(1, uint64(in)))))))))
	tensor := cat(vi(1, uint64(dims[0])), vi(1, uint64(dims[1])), vi(2, 1), str(8, "w"))
	tensor = protowire.AppendVarint(protowire.AppendTag(tensor, 9, protowire.BytesType), uint64(n))
	rest := cat(ld(1, node), ld(11, input), ld(12, str(1, "y")))
	init := protowire.AppendVarint(protowire.AppendTag(nil, 5, protowire.BytesType), uint64(int64(len(tensor))+n))
	graphLen := int64(len(init)+len(tensor)+len(rest)) + n
	head = protowire.AppendVarint(protowire.AppendTag(vi(1, 8), 7, protowire.BytesType), uint64(graphLen))
	return cat(head, init, tensor), cat(rest, ld(8, cat(str(1, ""), vi(2, 13))))
}

// TestHostileONNXAndRowsUnderUlimit runs apr-onnx and apr-predict under ulimit -v
// (vmLimitKB), as TestHostileInputsUnderUlimit runs the model readers, on hostile
// ONNX files and feature rows from a pipe and from a file: each ends with an
// "apr-NAME: ..." error and exit 1, leaves nothing beside its -o output or in TMPDIR,
// and a file at the caps still works.
func TestHostileONNXAndRowsUnderUlimit(t *testing.T) {
	needPrograms(t, "apr-onnx", "apr-predict", "apr-encode", "apr-seal")
	if testing.Short() {
		t.Skip("streams about 3 GB of hostile input (-short)")
	}
	dir := t.TempDir()
	writeModel(t, dir) // 784 features
	if _, stderr, code := sh(t, dir, `
apr-seal keygen -o owner.key 2>/dev/null
apr-seal keygen -o user.key 2>/dev/null
apr-encode --inference-recipient owner.key.pub < model.apr > published.apr
mkdir seen
`); code != 0 {
		t.Fatal(stderr)
	}

	// run runs argv under the limit in dir, stdin from in (an *os.File is a redirect);
	// "{out}" in an argument is a fresh directory. It returns stderr, the exit code,
	// and the names left in that directory and in the run's TMPDIR.
	run := func(t *testing.T, in io.Reader, argv ...string) (string, int, []string) {
		t.Helper()
		out, tmp := t.TempDir(), t.TempDir()
		for i, a := range argv {
			argv[i] = strings.ReplaceAll(a, "{out}", out)
		}
		stderr, code := runUnderLimit(t, dir, nil, tmp, in, argv...)
		var left []string
		for _, d := range []string{out, tmp} {
			es, err := os.ReadDir(d)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				left = append(left, e.Name())
			}
		}
		return stderr, code, left
	}
	// check asserts a clean failure: exit 1, the program's message containing want,
	// no crash, nothing left behind.
	check := func(t *testing.T, what, stderr string, code int, left []string, want string) {
		t.Helper()
		for _, crash := range []string{"fatal error", "panic", "goroutine ", "runtime: "} {
			if strings.Contains(stderr, crash) {
				t.Fatalf("%s crashed (exit %d): %.600s", what, code, stderr)
			}
		}
		if code != 1 || !strings.HasPrefix(stderr, "apr-") || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %.400s; want exit 1 and %q", what, code, stderr, want)
		}
		if len(left) > 0 {
			t.Errorf("%s left %v behind", what, left)
		}
	}
	// sparse writes a file of head, n zero bytes (a hole) and tail.
	sparse := func(t *testing.T, name string, head []byte, n int64, tail []byte) *os.File {
		t.Helper()
		f, err := os.Create(filepath.Join(t.TempDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := f.Write(head); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(tail, int64(len(head))+n); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(int64(len(head)+len(tail)) + n); err != nil {
			t.Fatal(err)
		}
		f.Seek(0, 0)
		return f
	}

	t.Run("apr-onnx", func(t *testing.T) {
		// a control: a file just under the 256 MiB cap (one 8190x8190 MatMul layer, its
		// weights a hole of zeros) imports under the limit
		head, tail := onnxMLP("MatMul", [2]int64{8190, 8190}, 4*8190*8190)
		f := sparse(t, "cap.onnx", head, 4*8190*8190, tail)
		stderr, code, left := run(t, f, "apr-onnx", "import", "-o", "{out}/m.apr")
		if code != 0 || len(left) != 1 || left[0] != "m.apr" {
			t.Fatalf("a file at the cap: exit %d, left %v: %s", code, left, stderr)
		}

		type hostile struct {
			name, want string
			head       []byte
			n          int64 // zero bytes after head
			tail       []byte
		}
		h3x4 := func(n int64) hostile {
			head, tail := onnxMLP("Gemm", [2]int64{3, 4}, n)
			return hostile{head: head, n: n, tail: tail}
		}
		cases := []hostile{
			{name: "1200 MiB of zeros", n: 1200 << 20, want: "not an ONNX model (truncated or damaged protobuf): byte 0, ModelProto: field number 0"},
			h3x4(700 << 20),
			h3x4(200 << 20),
		}
		cases[1].name, cases[1].want = "[3,4] with 700 MiB of raw data", "past the cap of 268435456 bytes"
		cases[2].name, cases[2].want = "[3,4] with 200 MiB of raw data", `initializer "w": 209715200 bytes of raw data for shape [3 4], expected 48 (byte 21, graph.initializer[0].raw_data)`
		for _, c := range cases {
			stderr, code, left := run(t, io.MultiReader(bytes.NewReader(c.head), &zeros{c.n}, bytes.NewReader(c.tail)), "apr-onnx", "import", "-o", "{out}/m.apr")
			check(t, "apr-onnx import < pipe of "+c.name, stderr, code, left, c.want)
			f := sparse(t, "h.onnx", c.head, c.n, c.tail)
			if c.n > 256<<20 {
				c.want = "more than the cap of 268435456 for an ONNX file"
			}
			stderr, code, left = run(t, f, "apr-onnx", "import", "-o", "{out}/m.apr")
			check(t, "apr-onnx import < file of "+c.name, stderr, code, left, c.want)
			stderr, code, left = run(t, strings.NewReader(""), "apr-onnx", "import", f.Name(), "-o", "{out}/m.apr")
			check(t, "apr-onnx import FILE of "+c.name, stderr, code, left, c.want)
		}

		// metadata_props of a 200 MiB JSON array (5.3 GB and 79 s to decode), and a
		// million empty nodes, from a pipe
		prop := func(n int64) []byte {
			entry := protowire.AppendTag(nil, 14, protowire.BytesType)
			entry = protowire.AppendVarint(entry, uint64(protowire.SizeTag(2)+protowire.SizeVarint(uint64(n))+int(n)))
			entry = protowire.AppendVarint(protowire.AppendTag(entry, 2, protowire.BytesType), uint64(n))
			return append([]byte{0x08, 0x08}, entry...)
		}
		stderr, code, left = run(t, io.MultiReader(bytes.NewReader(prop(200<<20)), strings.NewReader(`{"a":[`), &repeated{pattern: []byte("0,"), n: 200<<20 - 6}), "apr-onnx", "import", "-o", "{out}/m.apr")
		check(t, "apr-onnx import < 200 MiB of metadata_props", stderr, code, left, "metadata_props of more than 1048576 bytes, the cap of the import")
		nodes := bytes.Repeat([]byte{0x0a, 0}, 1<<20)
		graph := protowire.AppendBytes(protowire.AppendTag([]byte{0x08, 0x08}, 7, protowire.BytesType), nodes)
		stderr, code, left = run(t, bytes.NewReader(graph), "apr-onnx", "import", "-o", "{out}/m.apr")
		check(t, "apr-onnx import < a million empty nodes", stderr, code, left, "more than 262144 entries")

		// export reads an APR model as every reader does (it buffered up to 2 GiB)
		for _, magic := range []string{"APR\x00\x02", "APRN\x01"} {
			stderr, code, left := run(t, io.MultiReader(strings.NewReader(magic), &zeros{300 << 20}), "apr-onnx", "export", "-o", "{out}/m.onnx")
			check(t, fmt.Sprintf("apr-onnx export < %q + 300 MiB of zeros", magic), stderr, code, left, "apr-onnx: stdin: ")
		}
	})

	t.Run("apr-predict", func(t *testing.T) {
		// one line of 64 MiB, gzipped to 64 KiB (4.77 GB and 63 s, the issue measured);
		// a header line of as many names; the same plain from a pipe
		line := func(field string) []byte {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			io.Copy(zw, &repeated{pattern: []byte(field + ","), n: 64<<20 - 1})
			zw.Write([]byte("\n"))
			zw.Close()
			return b.Bytes()
		}
		lineCap := "line 1 is longer than 115712 bytes, the cap for a row of 784 features"
		for name, gz := range map[string][]byte{"64 MiB line of zeros": line("0"), "64 MiB header line": line("a")} {
			p := filepath.Join(t.TempDir(), "rows.csv.gz")
			if err := os.WriteFile(p, gz, 0o644); err != nil {
				t.Fatal(err)
			}
			stderr, code, left := run(t, strings.NewReader(""), "apr-predict", "model.apr", p, "-o", "{out}/y.csv")
			check(t, "apr-predict FILE of a "+name, stderr, code, left, "apr-predict: "+p+": csv: "+lineCap)
			stderr, code, left = run(t, bytes.NewReader(gz), "apr-predict", "model.apr", "-o", "{out}/y.npy")
			check(t, "apr-predict < pipe of a "+name, stderr, code, left, "apr-predict: stdin: csv: "+lineCap)
		}
		stderr, code, left := run(t, &repeated{pattern: []byte("0,"), n: 1 << 30}, "apr-predict", "model.apr", "-o", "{out}/y.csv")
		check(t, "apr-predict < a plain line of 1 GiB", stderr, code, left, "apr-predict: stdin: csv: "+lineCap)
		stderr, code, left = run(t, strings.NewReader(strings.Repeat("0,", 785)+"\n"), "apr-predict", "model.apr", "-o", "{out}/y.csv")
		check(t, "apr-predict < a line of 785 fields", stderr, code, left, "apr-predict: stdin: csv: line 1: more than 784 fields; the model takes 784 features")

		// an .npy declaring 2^40 rows of 784 features, ending after 300 MiB: rows are
		// predicted a batch at a time until the data ends
		hdr := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d, 784), }", int64(1)<<40)
		hdr += strings.Repeat(" ", 63-(10+len(hdr))%64) + "\n"
		npy := append([]byte("\x93NUMPY\x01\x00"), binary.LittleEndian.AppendUint16(nil, uint16(len(hdr)))...)
		npy = append(npy, hdr...)
		stderr, code, left = run(t, io.MultiReader(bytes.NewReader(npy), &zeros{300 << 20}), "apr-predict", "model.apr", "-o", "{out}/y.npy")
		check(t, "apr-predict < .npy of 2^40 rows", stderr, code, left, "apr-predict: stdin: ")

		// private requests: a request carrying the 64 MiB line is refused by the owner
		// with no reply left; a reply of 300 MiB of zeros is not opened
		p := filepath.Join(dir, "rows.csv.gz")
		if err := os.WriteFile(p, line("0"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := sh(t, dir, `apr-predict --request published.apr --reply-to user.key.pub rows.csv.gz -o request`); code != 0 {
			t.Fatal(stderr)
		}
		req, err := os.Open(filepath.Join(dir, "request"))
		if err != nil {
			t.Fatal(err)
		}
		defer req.Close()
		stderr, code, left = run(t, req, "apr-predict", "published.apr", "-i", "owner.key", "--serve-request", "--replay-dir", "seen", "-o", "{out}/reply")
		check(t, "apr-predict --serve-request < a request of a 64 MiB line", stderr, code, left, "apr-predict: stdin: csv: "+lineCap)
		stderr, code, left = run(t, &zeros{300 << 20}, "apr-predict", "--open-reply", "request", "-i", "user.key", "-o", "{out}/y.csv")
		check(t, "apr-predict --open-reply < 300 MiB of zeros", stderr, code, left, "apr-predict: stdin: ")
	})
}

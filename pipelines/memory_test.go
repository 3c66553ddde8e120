//go:build linux

package pipelines

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/safetensors"
)

// vmLimitKB is the address-space limit (ulimit -v, KiB) the programs run under in
// TestHostileInputsUnderUlimit: the figure of issue 14. Measured on linux/amd64 with
// Go 1.26 and GOMAXPROCS=2 (the test sets it, so the figure does not depend on the
// machine's CPUs), by bisecting ulimit -v over a normal run of each program on the
// test's normal inputs: every program built without cgo (as make build and TestMain
// build them) needs 742,539 KiB (the Go runtime reserves most of it at start), apr-seal
// -d 812,675 KiB (Argon2id's 64 MiB). Built with cgo they needed up to 1,716,660 KiB
// (glibc reserves a 64 MiB malloc arena and an 8 MiB stack a thread), and a hostile
// header crashed them with under 300 MB of heap in use. 2,000,000 KiB leaves each
// program at least 1.1 GB beyond its normal need; each normal run is checked under
// it first, so the limit is known to allow the work it must allow.
const vmLimitKB = 2000000

// zeros is an io.Reader of n zero bytes, so a 300 MiB hostile stream costs nothing to
// make or keep.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), z.n)]
	clear(p)
	z.n -= int64(len(p))
	return len(p), nil
}

// stHeader returns a SafeTensors file: the length prefix, then a header that write
// produces, then data.
func stHeader(write func(b *bytes.Buffer), data int) []byte {
	var b bytes.Buffer
	b.Write(make([]byte, 8))
	write(&b)
	binary.LittleEndian.PutUint64(b.Bytes(), uint64(b.Len()-8))
	b.Write(make([]byte, data))
	return b.Bytes()
}

// gguf returns GGUF v3 bytes with no tensors and the given KV bytes.
func ggufKVs(nkv uint64, kvs ...[]byte) []byte {
	b := []byte("GGUF")
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint64(b, nkv)
	for _, kv := range kvs {
		b = append(b, kv...)
	}
	return b
}

func ggufStr(s string) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, uint64(len(s))), s...)
}

// TestHostileInputsUnderUlimit runs every program that reads a model under ulimit -v
// (vmLimitKB) on hostile inputs, from a pipe and from a redirected file: each must end
// with a clear "apr-NAME: ..." error and exit 1 (or, for a file that is only large,
// succeed), never "fatal error: out of memory" or another crash of the Go runtime.
func TestHostileInputsUnderUlimit(t *testing.T) {
	needPrograms(t, "apr-encode", "apr-decode", "apr-quant", "apr-sign", "apr-seal", "apr-st", "apr-gguf", "apr-predict", "apr-distill")
	if testing.Short() {
		t.Skip("writes about 700 MB of hostile files (-short)")
	}
	dir := t.TempDir()
	writeModel(t, dir)
	src, _ := filepath.Abs("../testdata/gguf/tiny-llama.f32.gguf")
	if _, stderr, code := sh(t, dir, `
apr-gguf import '`+src+`' -o llama.apr
apr-st export llama.apr -o llama.safetensors
cp '`+src+`' llama.gguf
apr-sign keygen -o k 2>/dev/null
apr-sign -k k.key -q model.apr -o signed.apr
PW=secret apr-seal --passphrase-env PW model.apr -o sealed.apr
`); code != 0 {
		t.Fatal(stderr)
	}

	// run runs argv under the limit in dir, stdin from in (an *os.File is a redirect).
	run := func(t *testing.T, in io.Reader, argv ...string) (string, int) {
		t.Helper()
		return runUnderLimit(t, dir, []string{"PW=secret"}, t.TempDir(), in, argv...)
	}
	file := func(t *testing.T, name string, b []byte) *os.File {
		t.Helper()
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	open := func(t *testing.T, name string) *os.File {
		t.Helper()
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}

	// Programs that read a model, each with the normal input its control run reads.
	aprReaders := []struct {
		argv   []string
		normal string
	}{
		{[]string{"apr-encode", "-c", "zstd"}, "model.apr"},
		{[]string{"apr-decode", "inspect"}, "model.apr"},
		{[]string{"apr-decode", "verify"}, "model.apr"},
		{[]string{"apr-decode", "plain"}, "model.apr"},
		{[]string{"apr-decode", "extract"}, "model.apr"},
		{[]string{"apr-quant", "q8_0"}, "llama.apr"},
		{[]string{"apr-sign", "-k", "k.key"}, "model.apr"},
		{[]string{"apr-sign", "verify", "-p", "k.pub"}, "signed.apr"},
		{[]string{"apr-seal", "--passphrase-env", "PW"}, "model.apr"},
		{[]string{"apr-seal", "-d", "--passphrase-env", "PW"}, "sealed.apr"},
		{[]string{"apr-st", "export"}, "llama.apr"},
		{[]string{"apr-gguf", "export"}, "llama.apr"},
	}
	t.Run("normal runs fit the limit", func(t *testing.T) {
		for _, p := range aprReaders {
			if stderr, code := run(t, open(t, p.normal), p.argv...); code != 0 {
				t.Errorf("%s < %s under ulimit -v %d: exit %d: %s", strings.Join(p.argv, " "), p.normal, vmLimitKB, code, stderr)
			}
		}
		for _, c := range [][]string{{"apr-st", "import", "llama.safetensors"}, {"apr-gguf", "import", "llama.gguf"}} {
			if stderr, code := run(t, open(t, c[2]), c[:2]...); code != 0 {
				t.Errorf("%s < %s: exit %d: %s", strings.Join(c[:2], " "), c[2], code, stderr)
			}
		}
	})

	// check asserts a clean end: exit want (-1: 0 or 1), a program's message, no crash.
	check := func(t *testing.T, what, stderr string, code, want int) {
		t.Helper()
		for _, crash := range []string{"fatal error", "panic", "goroutine ", "runtime: "} {
			if strings.Contains(stderr, crash) {
				t.Fatalf("%s crashed (exit %d): %.600s", what, code, stderr)
			}
		}
		if want >= 0 && code != want || want < 0 && code > 1 {
			t.Errorf("%s: exit %d, want %d: %.300s", what, code, want, stderr)
		}
		if code != 0 && !strings.HasPrefix(stderr, "apr-") {
			t.Errorf("%s: not a program's error: %.300s", what, stderr)
		}
	}

	// APR readers: 300 MiB of zeros after each aprender magic (a pipe: nothing to
	// measure the stream by), and an APR header announcing 64 MiB - 1 of metadata that
	// 64 MiB of zeros follow (a file: its CRC fails after the cap-sized read).
	model, err := os.ReadFile(filepath.Join(dir, "model.apr"))
	if err != nil {
		t.Fatal(err)
	}
	hdr := bytes.Clone(model[:64])
	binary.LittleEndian.PutUint32(hdr[12:], 64<<20-1)
	binary.LittleEndian.PutUint32(hdr[60:], crc32.ChecksumIEEE(hdr[:60]))
	metaCap := file(t, "metacap.apr", append(hdr, make([]byte, 64<<20)...))
	for _, p := range aprReaders {
		for _, magic := range []string{"APR\x00\x02", "APRN\x01"} {
			name := fmt.Sprintf("%s < %q + 300 MiB of zeros", strings.Join(p.argv, " "), magic)
			stderr, code := run(t, io.MultiReader(strings.NewReader(magic), &zeros{300 << 20}), p.argv...)
			check(t, name, stderr, code, 1)
		}
		metaCap.Seek(0, 0)
		stderr, code := run(t, metaCap, p.argv...)
		check(t, strings.Join(p.argv, " ")+" < metadata of 64 MiB - 1", stderr, code, 1)
	}

	// Programs that take the model as an argument: apr-predict and apr-distill's
	// teachers, on the same hostile files (the zeros written out, as a file).
	zeroFile := filepath.Join(t.TempDir(), "zeros.apr")
	zf, err := os.Create(zeroFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(zf, io.MultiReader(strings.NewReader("APRN\x02"), &zeros{300 << 20})); err != nil {
		t.Fatal(err)
	}
	zf.Close()
	features := filepath.Join(dir, "features.csv")
	if err := os.WriteFile(features, []byte("0,1\n1,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, hostile := range []string{zeroFile, metaCap.Name()} {
		for _, argv := range [][]string{
			{"apr-predict", hostile, features},
			{"apr-distill", "distill", "--data", features, "--label-column", "none", "--student", "2-2", "-o", "student.apr", hostile},
		} {
			stderr, code := run(t, strings.NewReader(""), argv...)
			check(t, strings.Join(argv, " "), stderr, code, 1)
		}
	}

	// A sealed file whose passphrase stanza asks Argon2id t=4, 1 GiB, 16 lanes (the
	// default stanza's 9 parameter bytes, t=3 64 MiB p=4, rewritten): refused by the
	// caps before any hashing, for each program that opens a sealed model.
	sealed, err := os.ReadFile(filepath.Join(dir, "sealed.apr"))
	if err != nil {
		t.Fatal(err)
	}
	params := []byte{0, 0, 0, 3, 0, 1, 0, 0, 4}
	if bytes.Count(sealed, params) != 1 {
		t.Fatal("the sealed file's Argon2id parameters are not where the test expects them")
	}
	kdf := file(t, "kdf.apr", bytes.Replace(sealed, params, []byte{0, 0, 0, 4, 0, 0x10, 0, 0, 16}, 1))
	for _, argv := range [][]string{
		{"apr-seal", "-d", "--passphrase-env", "PW"},
		{"apr-sign", "verify", "-p", "k.pub", "--passphrase-env", "PW"},
	} {
		kdf.Seek(0, 0)
		stderr, code := run(t, kdf, argv...)
		check(t, strings.Join(argv, " ")+" < Argon2id t=4 m=1GiB p=16", stderr, code, 1)
		if code == 1 && !strings.Contains(stderr, "cap") {
			t.Errorf("%s: the refusal does not name the cap: %s", strings.Join(argv, " "), stderr)
		}
	}

	// SafeTensors headers of 67 to 90 MB, under the crate's 100 MB cap.
	st := map[string][]byte{
		"90 MB of __metadata__": stHeader(func(b *bytes.Buffer) {
			b.WriteString(`{"__metadata__":{"k":"` + strings.Repeat("a", 90_000_000) + `"}}`)
		}, 0),
		"4M __metadata__ keys": stHeader(func(b *bytes.Buffer) {
			b.WriteString(`{"__metadata__":{`)
			for i := range 4_000_000 {
				fmt.Fprintf(b, `"k%d":"v",`, i)
			}
			b.WriteString(`"k":"v"}}`)
		}, 0),
		"1.5M empty tensors": stHeader(func(b *bytes.Buffer) {
			b.WriteString("{")
			for i := range 1_500_000 {
				fmt.Fprintf(b, `"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},`, i)
			}
			b.WriteString(`"t":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`)
		}, 0),
		"45M dimensions": stHeader(func(b *bytes.Buffer) {
			b.WriteString(`{"w":{"dtype":"F32","shape":[` + strings.Repeat("0,", 45_000_000) + `0],"data_offsets":[0,0]}}`)
		}, 0),
	}
	for name, b := range st {
		stderr, code := run(t, bytes.NewReader(b), "apr-st", "import")
		check(t, "apr-st import < pipe of "+name, stderr, code, 1)
		stderr, code = run(t, file(t, "h.safetensors", b), "apr-st", "import")
		check(t, "apr-st import < file of "+name, stderr, code, 1)
		if !strings.Contains(stderr, "OverLimit") {
			t.Errorf("apr-st import < %s: %s, want OverLimit", name, stderr)
		}
		// apr-quant takes SafeTensors on stdin too (lib/source): the same importer.
		stderr, code = run(t, bytes.NewReader(b), "apr-quant", "q8_0", "--to", "gguf")
		check(t, "apr-quant < pipe of "+name, stderr, code, 1)
		if !strings.Contains(stderr, "OverLimit") {
			t.Errorf("apr-quant < %s: %s, want OverLimit", name, stderr)
		}
	}

	// GGUF: a string and arrays announced far beyond any cap, and a file of two arrays
	// of 4M - 16 empty strings (64 MB, under every cap), which imports.
	huge := map[string][]byte{
		"a 2^40-byte string": ggufKVs(1, ggufStr("general.name"), []byte{8, 0, 0, 0}, binary.LittleEndian.AppendUint64(nil, 1<<40)),
		"a 2^40-element array": ggufKVs(1, ggufStr("tokenizer.ggml.tokens"), []byte{9, 0, 0, 0, 8, 0, 0, 0},
			binary.LittleEndian.AppendUint64(nil, 1<<40)),
		"2^40 tensors": append([]byte("GGUF\x03\x00\x00\x00"), binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 1<<40), 0)...),
	}
	for name, b := range huge {
		b = append(b, make([]byte, 4096)...)
		stderr, code := run(t, bytes.NewReader(b), "apr-gguf", "import")
		check(t, "apr-gguf import < pipe of "+name, stderr, code, 1)
		stderr, code = run(t, file(t, "h.gguf", b), "apr-gguf", "import")
		check(t, "apr-gguf import < file of "+name, stderr, code, 1)
		stderr, code = run(t, bytes.NewReader(b), "apr-quant", "q8_0", "--to", "gguf")
		check(t, "apr-quant < pipe of "+name, stderr, code, 1)
		stderr, code = run(t, file(t, "h.gguf", b), "apr-quant", "q8_0", "--to", "gguf")
		check(t, "apr-quant < file of "+name, stderr, code, 1)
	}
	var arrays [][]byte
	for i := range 2 {
		const n = 1<<22 - 16
		arrays = append(arrays, ggufStr(fmt.Sprint("tokenizer.array", i)), []byte{9, 0, 0, 0, 8, 0, 0, 0},
			binary.LittleEndian.AppendUint64(nil, n), make([]byte, 8*n))
	}
	big := ggufKVs(2, arrays...)
	big = append(big, make([]byte, (32-len(big)%32)%32)...)
	stderr, code := run(t, file(t, "arrays.gguf", big), "apr-gguf", "import")
	check(t, "apr-gguf import < file of 8M empty strings", stderr, code, -1)
	stderr, code = run(t, bytes.NewReader(big), "apr-gguf", "import")
	check(t, "apr-gguf import < pipe of 8M empty strings", stderr, code, -1)

	// A checkpoint whose config.json gives a vocab_size far beyond its tokenizer, with
	// the embeddings (which would contradict it) removed: the vocabulary was built
	// vocab_size long before anything checked it (10^7 took 1.2 GB, 2^31 - 1 ran out
	// of memory and left the -o file's temporary).
	for _, vocab := range []string{"2147483647", "10000000", "100000000"} {
		ck := hostileVocab(t, vocab)
		out := t.TempDir()
		stderr, code := run(t, strings.NewReader(""), "apr-st", "import", ck, "-o", filepath.Join(out, "out.apr"))
		what := "apr-st import of vocab_size " + vocab + " without embeddings"
		check(t, what, stderr, code, 1)
		if !strings.Contains(stderr, "config.json: vocab_size "+vocab) {
			t.Errorf("%s: %s, want config.json's vocab_size named", what, stderr)
		}
		if left, _ := os.ReadDir(out); len(left) != 0 {
			t.Errorf("%s left %s beside its -o output", what, left[0].Name())
		}
		stderr, code = run(t, strings.NewReader(""), "apr-quant", "q8_0", ck, "-o", filepath.Join(out, "out.gguf"))
		check(t, "apr-quant of vocab_size "+vocab, stderr, code, 1)
		if left, _ := os.ReadDir(out); len(left) != 0 {
			t.Errorf("apr-quant of vocab_size %s left %s beside its -o output", vocab, left[0].Name())
		}
	}
}

// hostileVocab copies testdata/hf/tiny-llama into a new directory with config.json's
// vocab_size set to vocab and the embedding tensors removed.
func hostileVocab(t *testing.T, vocab string) string {
	t.Helper()
	src := "../testdata/hf/tiny-llama"
	dir := filepath.Join(t.TempDir(), "ck")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		switch e.Name() {
		case "config.json":
			if !bytes.Contains(b, []byte(`"vocab_size": 512`)) {
				t.Fatal("config.json has no vocab_size 512")
			}
			b = bytes.Replace(b, []byte(`"vocab_size": 512`), []byte(`"vocab_size": `+vocab), 1)
		case "model.safetensors":
			f, err := safetensors.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			h := f.Header()
			var keep []safetensors.Tensor
			for _, ti := range h.Tensors {
				if ti.Name != "model.embed_tokens.weight" && ti.Name != "lm_head.weight" {
					d := b[h.DataStart()+ti.Begin : h.DataStart()+ti.End]
					keep = append(keep, safetensors.Tensor{TensorSpec: ti.Spec(), Data: d})
				}
			}
			if len(keep) != len(h.Tensors)-2 {
				t.Fatal("tiny-llama's embeddings are not where the test expects them")
			}
			var out bytes.Buffer
			if err := safetensors.Encode(&out, h.Metadata, keep); err != nil {
				t.Fatal(err)
			}
			b = out.Bytes()
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

//go:build linux

package pipelines

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stream"
)

// TestSignalsLeaveNothing stops programs in the middle of a stream (stdin is a pipe
// that has delivered half a model, so each holds its pending -o output or its
// export's spool) with SIGINT, SIGTERM and SIGHUP, each of which must exit 128+signal,
// and with SIGKILL, which no handler sees: in every case the output's directory and
// TMPDIR hold nothing afterwards, as the pending output and the spools have no name.
func TestSignalsLeaveNothing(t *testing.T) {
	needPrograms(t, "apr-quant", "apr-gguf", "apr-st", "apr-encode")
	dir := t.TempDir()
	writeModel(t, dir)
	src, _ := filepath.Abs("../testdata/gguf/tiny-llama.f32.gguf")
	if _, stderr, code := sh(t, dir, `apr-gguf import '`+src+`' -o llama.apr`); code != 0 {
		t.Fatal(stderr)
	}
	writeWithoutTable(t, filepath.Join(dir, "llama.apr"), filepath.Join(dir, "llama-2.0.apr"))
	if _, stderr, code := sh(t, dir, `cp '`+src+`' llama.f32.gguf`); code != 0 {
		t.Fatal(stderr)
	}
	cases := []struct {
		name, input string
		inTmp       bool // the file held open is a spool in TMPDIR, else in the output's directory
		args        []string
	}{
		{"apr-quant -o", "llama.apr", false, []string{"apr-quant", "q8_0", "-o", "out.apr"}},
		{"apr-quant GGUF -o gguf", "llama.f32.gguf", false, []string{"apr-quant", "q8_0", "-o", "out.gguf"}},
		{"apr-quant GGUF -o split", "llama.f32.gguf", false, []string{"apr-quant", "q8_0", "--split-max-tensors", "8", "-o", "split"}},
		{"apr-encode -o", "model.apr", false, []string{"apr-encode", "-c", "zstd", "-o", "out.apr"}},
		{"apr-gguf export spool", "llama-2.0.apr", true, []string{"apr-gguf", "export", "-o", "out.gguf"}},
		{"apr-gguf export streamed", "llama.apr", false, []string{"apr-gguf", "export", "-o", "out.gguf"}},
		{"apr-st export spool", "llama.apr", false, []string{"apr-st", "export", "-o", "out.safetensors"}}, // spooled beside the output
	}
	for _, c := range cases {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL} {
			t.Run(c.name+"/"+sig.String(), func(t *testing.T) {
				work, tmp := t.TempDir(), t.TempDir()
				in, err := os.ReadFile(filepath.Join(dir, c.input))
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(c.args[0], c.args[1:]...)
				cmd.Dir = work
				cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
				stdin, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer stdin.Close()
				stdin.Write(in[:len(in)/2]) // the rest never comes: the program waits mid-stream
				where := work
				if c.inTmp {
					where = tmp
				}
				if !holdsFile(cmd.Process.Pid, where, 0) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("the program never opened a file in %s", where)
				}
				cmd.Process.Signal(sig)
				err = cmd.Wait()
				if sig == syscall.SIGKILL {
					if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != sig {
						t.Errorf("%v, want death by SIGKILL", cmd.ProcessState)
					}
				} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+int(sig) {
					t.Errorf("exit %v, want status %d", err, 128+int(sig))
				}
				assertEmpty(t, work, tmp)
			})
		}
	}
}

// TestSignalKillMidConversion kills apr-quant with SIGKILL while it writes the GGUF of a
// 48 MiB F32 model given as a file (the output has started: its pending file holds
// bytes), and checks that neither the output's directory nor TMPDIR holds anything.
func TestSignalKillMidConversion(t *testing.T) {
	needPrograms(t, "apr-quant")
	src := filepath.Join(t.TempDir(), "big.f32.gguf")
	writeF32GGUF(t, src, 12, 1024)
	work, tmp := t.TempDir(), t.TempDir()
	cmd := exec.Command("apr-quant", "q4_k", src, "-o", "out.gguf")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !holdsFile(cmd.Process.Pid, work, 1) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("apr-quant ended before writing its output could be seen; the model is too small for this machine")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("%v: apr-quant was not killed (it ended first)", cmd.ProcessState)
	}
	assertEmpty(t, work, tmp)
}

// writeF32GGUF writes a llama-shaped GGUF of n F32 matrices of dim x dim, small
// random weights.
func writeF32GGUF(t *testing.T, path string, n, dim int) {
	t.Helper()
	h := &gguf.Header{KVs: []gguf.KV{
		{Key: "general.architecture", Value: gguf.String("llama")},
		{Key: "llama.block_count", Value: gguf.Uint32(uint32(n))},
		{Key: "llama.embedding_length", Value: gguf.Uint32(uint32(dim))},
		{Key: "general.file_type", Value: gguf.Uint32(0)},
	}}
	for i := range n {
		h.Tensors = append(h.Tensors, gguf.TensorInfo{Name: fmt.Sprintf("blk.%d.ffn_up.weight", i), Dims: []int64{int64(dim), int64(dim)}, Type: 0})
	}
	if err := h.Layout(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := gguf.NewWriter(bw, h)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	row := make([]byte, 4*dim)
	for range n * dim {
		for j := range dim {
			binary.LittleEndian.PutUint32(row[4*j:], math.Float32bits(float32(rng.NormFloat64()*0.02)))
		}
		if _, err := w.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
}

// holdsFile waits (up to a minute, polling /proc) until process pid has a file of
// more than minSize bytes in dir open, named or not (an unnamed file's link reads
// "DIR/#INODE (deleted)", a removed one's "DIR/NAME (deleted)").
func holdsFile(pid int, dir string, minSize int64) bool {
	fds := "/proc/" + strconv.Itoa(pid) + "/fd"
	for range 60000 {
		entries, _ := os.ReadDir(fds)
		for _, e := range entries {
			p := filepath.Join(fds, e.Name())
			if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, dir+"/") {
				if st, err := os.Stat(p); err == nil && st.Size() >= minSize {
					return true
				}
			}
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// assertEmpty fails if any of dirs holds a file.
func assertEmpty(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if entries, _ := os.ReadDir(d); len(entries) > 0 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("left behind in %s: %v", d, names)
		}
	}
}

// TestTerminalStdin: with stdin a terminal (a pseudo-terminal that script(1) makes), a
// program that would read its model from stdin says what it expects and exits 2
// instead of waiting silently.
func TestTerminalStdin(t *testing.T) {
	needPrograms(t, "apr-decode", "apr-quant", "apr-st", "apr-gguf", "apr-encode")
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) (util-linux) is not installed")
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []string{"apr-decode inspect", "apr-quant q8_0", "apr-st import", "apr-gguf import", "apr-encode"} {
		name := strings.Fields(c)[0]
		out, _, code := sh(t, dir, `script -qec '`+c+`' typescript < empty`)
		if code != 2 || !strings.Contains(out, "stdin is a terminal: give "+name+" a FILE argument") {
			t.Errorf("%s on a terminal: exit %d, %q", c, code, out)
		}
	}
}

// TestClosedStdoutWarns closes a program's stdout the shell's way (>&-). The Go runtime
// reopens it on the null device, so the model is discarded: the program says so,
// while an explicit > FILE redirection (the null device included, opened write-only
// by the shell) and -q stay silent.
func TestClosedStdoutWarns(t *testing.T) {
	needPrograms(t, "apr-encode")
	dir := t.TempDir()
	writeModel(t, dir)
	_, stderr, code := sh(t, dir, `apr-encode model.apr >&-`)
	if code != 0 || !strings.Contains(stderr, "stdout looks closed") {
		t.Errorf(">&-: exit %d, stderr %q; want 0 and a warning that the output is discarded", code, stderr)
	}
	for _, script := range []string{`apr-encode model.apr > out.apr`, `apr-encode -q model.apr >&-`, `apr-encode model.apr | cat > out.apr`} {
		if _, stderr, code := sh(t, dir, script); code != 0 || stderr != "" {
			t.Errorf("%s: exit %d, stderr %q; want 0 and nothing", script, code, stderr)
		}
	}
}

// noTable is a stream without its tensor table, as a 2.0 writer sends it.
type noTable struct{ stream.Stream }

func (s noTable) Header() container.Header {
	h := s.Stream.Header()
	h.Table = nil
	return h
}

// writeWithoutTable rewrites the APR file in as a format 2.0 file without a tensor
// table (what apr wrote before 2.1), which exporters reading a pipe must spool.
func writeWithoutTable(t *testing.T, in, out string) {
	t.Helper()
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	s, err := stream.Open(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := stream.Write(&buf, noTable{s}); err != nil {
		t.Fatal(err)
	}
	if buf.Bytes()[5] != 0 {
		t.Fatal("the rewrite is not format 2.0")
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReaderGoneIsSIGPIPE: an importer writing into a pipe whose reader goes away (as
// `| head -c N` does) ends as any Unix filter does, killed by SIGPIPE with nothing on
// stderr, also when the tensor bytes go into the pipe by splice(2) from a mapped file.
func TestReaderGoneIsSIGPIPE(t *testing.T) {
	needPrograms(t, "apr-gguf", "apr-st")
	gguf, _ := filepath.Abs("../testdata/gguf/tiny-llama.f32.gguf")
	ckpt, _ := filepath.Abs("../testdata/hf/tiny-llama")
	for _, args := range [][]string{{"apr-gguf", "import", gguf}, {"apr-st", "import", ckpt}} {
		t.Run(args[0], func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Stdout, cmd.Stderr = w, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			buf := make([]byte, 4096)
			if _, err := io.ReadFull(r, buf); err != nil {
				t.Fatal(err)
			}
			r.Close()
			cmd.Wait()
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGPIPE || stderr.Len() > 0 {
				t.Fatalf("%s: %v, stderr %q; want death by SIGPIPE and no message", strings.Join(args[:2], " "), cmd.ProcessState, stderr.String())
			}
		})
	}
}

//go:build linux

package pipelines

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/stream"
)

// TestSignalsLeaveNothing stops programs in the middle of a stream (stdin is a pipe
// that has delivered half a model) with SIGINT, SIGTERM and SIGHUP: each must remove
// the temporary files it created (the pending -o output, an export's spool) and exit
// 128+signal.
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
		name, input, leftover string
		args                  []string
	}{
		{"apr-quant -o", "llama.apr", ".out.apr.tmp-*", []string{"apr-quant", "q8_0", "-o", "out.apr"}},
		{"apr-quant GGUF -o gguf", "llama.f32.gguf", ".out.gguf.tmp-*", []string{"apr-quant", "q8_0", "-o", "out.gguf"}},
		{"apr-quant GGUF -o split", "llama.f32.gguf", ".split-0000?-of-0000?.gguf.tmp-*", []string{"apr-quant", "q8_0", "--split-max-tensors", "8", "-o", "split"}},
		{"apr-encode -o", "model.apr", ".out.apr.tmp-*", []string{"apr-encode", "-c", "zstd", "-o", "out.apr"}},
		{"apr-gguf export spool", "llama-2.0.apr", "apr-gguf-*.spool", []string{"apr-gguf", "export", "-o", "out.gguf"}},
		{"apr-gguf export streamed", "llama.apr", ".out.gguf.tmp-*", []string{"apr-gguf", "export", "-o", "out.gguf"}},
		{"apr-st export spool", "llama.apr", "apr-st-spool-*", []string{"apr-st", "export", "-o", "out.safetensors"}},
	}
	for _, c := range cases {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
			t.Run(c.name+"/"+sig.String(), func(t *testing.T) {
				work := t.TempDir()
				in, err := os.ReadFile(filepath.Join(dir, c.input))
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(c.args[0], c.args[1:]...)
				cmd.Dir = work
				cmd.Env = append(os.Environ(), "TMPDIR="+work)
				stdin, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer stdin.Close()
				stdin.Write(in[:len(in)/2]) // the rest never comes: the program waits mid-stream
				if !appears(work, c.leftover) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("%s never appeared in the work directory", c.leftover)
				}
				cmd.Process.Signal(sig)
				err = cmd.Wait()
				ee, ok := err.(*exec.ExitError)
				if !ok || ee.ExitCode() != 128+int(sig) {
					t.Errorf("exit %v, want status %d", err, 128+int(sig))
				}
				if left, _ := filepath.Glob(filepath.Join(work, c.leftover)); len(left) > 0 {
					t.Errorf("left behind: %v", left)
				}
			})
		}
	}
}

// appears waits (up to a minute, polling) for a file matching pattern in dir: the
// program has reached the point where it holds a temporary file.
func appears(dir, pattern string) bool {
	for range 6000 {
		if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) > 0 {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
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

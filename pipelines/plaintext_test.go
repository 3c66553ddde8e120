//go:build linux

package pipelines

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

// canary is the plaintext pattern of the sealed model in TestNoPlaintextOnDisk.
var canary = []byte("apr-plaintext-canary:0123456789abcdef;")

// findCanary returns the files under dirs (recursively) that hold canary, and with pid
// > 0 the files in dirs that process pid holds open, named or not (a spool removed at
// once, an unnamed pending output: their bytes are on disk all the same), except the
// paths skip accepts.
func findCanary(t *testing.T, skip func(string) bool, pid int, dirs ...string) []string {
	t.Helper()
	var found []string
	check := func(p, name string) {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, canary) {
			found = append(found, name)
		}
	}
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() && !skip(p) {
				check(p, p)
			}
			return nil
		})
	}
	if pid <= 0 {
		return found
	}
	fds := "/proc/" + strconv.Itoa(pid) + "/fd"
	entries, _ := os.ReadDir(fds)
	for _, e := range entries {
		p := filepath.Join(fds, e.Name())
		target, err := os.Readlink(p)
		if err != nil || !strings.HasSuffix(target, " (deleted)") || skip(target) {
			continue // a named file was walked above
		}
		for _, d := range dirs {
			if strings.HasPrefix(target, d+"/") {
				check(p, target)
			}
		}
	}
	return found
}

// TestNoPlaintextOnDisk: a sealed model's decrypted tensor data never reaches the disk
// unless the user names the output. Each program that reads a model gets a sealed one
// whose only tensor is a recognizable pattern, from a pipe that delivers half of it and
// then waits; the program is stopped there (SIGSTOP, after it opened its spool where it
// makes one) and every file in TMPDIR and the working directory, and every unnamed one
// there it holds open (spools and pending outputs have no name), is scanned for the
// pattern, then again after the rest arrived and the program ended. The spool of
// apr-sign verify --pass holds what was read (the ciphertext); the programs that take
// no key (the exports, apr-quant, apr-decode, apr-encode) refuse a sealed tensor at
// its first byte, before they spool anything. Controls show the scan finds the
// pattern: apr-seal -d -o FILE writes it to FILE (named, so allowed), and the spool of
// apr-sign verify --pass holds it when the model is not sealed.
func TestNoPlaintextOnDisk(t *testing.T) {
	needPrograms(t, "apr-seal", "apr-sign", "apr-gguf", "apr-st", "apr-quant", "apr-decode", "apr-encode")
	dir := t.TempDir()
	data := bytes.Repeat(canary, (4<<20)/len(canary)) // half of it is more than a 1 MiB write buffer
	f, err := os.Create(filepath.Join(dir, "plain.apr"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := container.NewWriter(f, container.Header{Type: modeltype.Custom})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensorBytes(container.TensorInfo{Name: "canary", DType: dtype.U8, Shape: []int64{int64(len(data))}}, data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, stderr, code := sh(t, dir, `
export PW=secret
apr-sign keygen -o k 2>/dev/null
apr-sign -q -k k.key plain.apr -o plain-signed.apr
apr-seal --passphrase-env PW plain.apr -o sealed.apr
apr-sign -q -k k.key --passphrase-env PW sealed.apr -o sealed-signed.apr
`); code != 0 {
		t.Fatal(stderr)
	}
	for _, name := range []string{"sealed.apr", "sealed-signed.apr"} {
		if found := findCanary(t, func(string) bool { return false }, 0, filepath.Join(dir, name)); len(found) > 0 {
			t.Fatalf("%s holds the plaintext", name)
		}
	}

	cases := []struct {
		name, input string
		args        []string
		spools      bool   // the program holds a spool in TMPDIR mid-stream
		named       string // the output the user names (allowed to hold the plaintext)
		wantFound   bool   // a control: the scan must find the pattern
	}{
		{"apr-sign verify --pass", "sealed-signed.apr", []string{"apr-sign", "verify", "--pass", "-p", "k.pub", "--passphrase-env", "PW"}, true, "", false},
		{"apr-sign verify -o", "sealed-signed.apr", []string{"apr-sign", "verify", "-p", "k.pub", "--passphrase-env", "PW", "-o", "out.apr"}, false, "out.apr", false},
		{"apr-sign sign", "sealed.apr", []string{"apr-sign", "-k", "k.key", "--passphrase-env", "PW"}, false, "", false},
		{"apr-seal -d", "sealed.apr", []string{"apr-seal", "-d", "--passphrase-env", "PW"}, false, "", false},
		{"apr-gguf export", "sealed.apr", []string{"apr-gguf", "export"}, false, "", false},
		{"apr-st export", "sealed.apr", []string{"apr-st", "export"}, false, "", false},
		{"apr-quant", "sealed.apr", []string{"apr-quant", "q8_0"}, false, "", false},
		{"apr-decode plain", "sealed.apr", []string{"apr-decode", "plain"}, false, "", false},
		{"apr-decode extract", "sealed.apr", []string{"apr-decode", "extract"}, false, "", false},
		{"apr-encode", "sealed.apr", []string{"apr-encode", "-c", "none"}, false, "", false},
		{"control: apr-seal -d -o FILE", "sealed.apr", []string{"apr-seal", "-d", "--passphrase-env", "PW", "-o", "out.apr"}, false, "", true},
		{"control: apr-sign verify --pass, not sealed", "plain-signed.apr", []string{"apr-sign", "verify", "--pass", "-p", "k.pub"}, true, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(dir, c.input))
			if err != nil {
				t.Fatal(err)
			}
			work, tmp := t.TempDir(), t.TempDir()
			for _, k := range []string{"k.pub", "k.key"} {
				b, _ := os.ReadFile(filepath.Join(dir, k))
				os.WriteFile(filepath.Join(work, k), b, 0o600)
			}
			// The named output, pending: .NAME.tmp-N, or unnamed in its directory
			// (where nothing else is unnamed: spools go to TMPDIR).
			skip := func(p string) bool {
				b := filepath.Base(p)
				pending := strings.HasPrefix(b, "."+c.named+".tmp-") || filepath.Dir(p) == work && strings.HasPrefix(b, "#") && strings.HasSuffix(b, " (deleted)")
				return c.named != "" && (b == c.named || pending)
			}
			cmd := exec.Command(c.args[0], c.args[1:]...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "PW=secret")
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stdin.Write(in[:len(in)/2]) // returns once the program has read most of it
			if c.spools && !holdsFile(cmd.Process.Pid, tmp, 0) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("the spool never appeared in TMPDIR")
			}
			cmd.Process.Signal(syscall.SIGSTOP)
			mid := findCanary(t, skip, cmd.Process.Pid, tmp, work)
			cmd.Process.Signal(syscall.SIGCONT)
			stdin.Write(in[len(in)/2:])
			stdin.Close()
			err = cmd.Wait()
			after := findCanary(t, skip, 0, tmp, work)
			// The programs that hold the key succeed; the others refuse the sealed input.
			wantOK := slices.Contains(c.args, "PW") || c.input == "plain-signed.apr"
			if ee, ok := err.(*exec.ExitError); wantOK && err != nil || !wantOK && (!ok || ee.ExitCode() != 1) {
				t.Errorf("exit %v, want success %v", err, wantOK)
			}
			if c.name == "apr-seal -d" && !bytes.Contains(stdout.Bytes(), canary) {
				t.Error("apr-seal -d wrote no plaintext to its stdout")
			}
			if c.wantFound {
				if len(mid)+len(after) == 0 {
					t.Error("the scan found no plaintext where the control puts it")
				}
				return
			}
			if len(mid) > 0 {
				t.Errorf("plaintext on disk mid-stream: %v", mid)
			}
			if len(after) > 0 {
				t.Errorf("plaintext on disk after the run: %v", after)
			}
		})
	}
}

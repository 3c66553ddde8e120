//go:build linux

package pipelines

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// spaces is an io.Reader of n ASCII spaces (JSON whitespace).
type spaces struct{ n int64 }

func (s *spaces) Read(p []byte) (int, error) {
	if s.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), s.n)]
	for i := range p {
		p[i] = ' '
	}
	s.n -= int64(len(p))
	return len(p), nil
}

// TestOMSHugeSignatureUnderUlimit: apr-sign oms verify given a 200 MiB model.sig of
// whitespace, as a file and from a pipe, under ulimit -v (vmLimitKB). It read up to
// 256 MiB and parsed it, and ended in "fatal error: out of memory"; it now reads at
// most oms.MaxBundle (16 MiB) and refuses the file, exit 1.
func TestOMSHugeSignatureUnderUlimit(t *testing.T) {
	needPrograms(t, "apr-sign")
	if testing.Short() {
		t.Skip("writes a 200 MiB signature file (-short)")
	}
	dir := t.TempDir()
	ecKey(t, dir)
	os.Mkdir(filepath.Join(dir, "model"), 0o755)
	os.WriteFile(filepath.Join(dir, "model", "weights.bin"), bytes.Repeat([]byte("weights!"), 1000), 0o644)
	run := func(in io.Reader, argv ...string) (string, int) {
		return runUnderLimit(t, dir, nil, t.TempDir(), in, argv...)
	}
	// The normal run fits the limit.
	if stderr, code := run(nil, "apr-sign", "oms", "sign", "key", "--private-key", "ec.pem", "--signature", "good.sig", "model"); code != 0 {
		t.Fatalf("sign under ulimit -v %d: exit %d: %s", vmLimitKB, code, stderr)
	}
	if stderr, code := run(nil, "apr-sign", "oms", "verify", "key", "--public-key", "ec.pub.pem", "--signature", "good.sig", "model"); code != 0 {
		t.Fatalf("verify under ulimit -v %d: exit %d: %s", vmLimitKB, code, stderr)
	}

	huge := filepath.Join(t.TempDir(), "model.sig")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, &spaces{200 << 20}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := dirNames(t, dir)
	verify := []string{"apr-sign", "oms", "verify", "key", "--public-key", "ec.pub.pem", "--signature"}
	stderr, code := run(nil, append(verify, huge, "model")...)
	refusedCleanly(t, "a 200 MiB signature file", dir, before, stderr, code, "larger than 16777216 bytes")
	stderr, code = run(&spaces{200 << 20}, append(verify, "/dev/stdin", "model")...)
	refusedCleanly(t, "a 200 MiB signature from a pipe", dir, before, stderr, code, "larger than 16777216 bytes")
}

//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOutputModesFollowUmask: every file apr-st writes (a single SafeTensors file, a
// checkpoint directory's shards, index and config/tokenizer files, an APR) is created
// 0666 less the umask, and a new checkpoint directory 0777 less it, as cp and mkdir
// make them: under 022 0644/0755, under 077 (a careful user's) 0600/0700, under 002
// (a user with a group of their own) 0664/0775. Before, the config files followed the
// umask from 0644 and everything else was 0644 whatever it said.
func TestOutputModesFollowUmask(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "tiny.apr")
	if r := runIn(t, nil, "import", "../../testdata/hf/tiny-llama/", "-o", src); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	for _, c := range []struct {
		umask     int
		file, dir os.FileMode
	}{{0o022, 0o644, 0o755}, {0o077, 0o600, 0o700}, {0o002, 0o664, 0o775}} {
		old := syscall.Umask(c.umask)
		out := filepath.Join(dir, "out"+c.file.String())
		os.Mkdir(out, 0o755)
		rs := []result{
			runIn(t, nil, "-q", "export", src, "-o", filepath.Join(out, "one.safetensors")),
			runIn(t, nil, "export", src, "--max-shard-size", "1MB", "-o", filepath.Join(out, "ck")),
			runIn(t, nil, "export", src, "-o", filepath.Join(out, "single")+"/"),
			runIn(t, nil, "import", "../../testdata/hf/tiny-llama/", "-o", filepath.Join(out, "again.apr")),
		}
		syscall.Umask(old)
		for _, r := range rs {
			if r.code != 0 {
				t.Fatalf("umask %03o: %+v", c.umask, r)
			}
		}
		n := 0
		err := filepath.Walk(out, func(p string, st os.FileInfo, err error) error {
			if err != nil || p == out {
				return err
			}
			want := c.file
			if st.IsDir() {
				want = c.dir
			}
			if st.Mode().Perm() != want {
				t.Errorf("umask %03o: %s is %v, want %v", c.umask, p, st.Mode().Perm(), want)
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != 2+2+(4+1+5)+(1+5) { // files, ck/ and single/ with their contents
			t.Errorf("umask %03o: %d outputs checked", c.umask, n)
		}
	}
}

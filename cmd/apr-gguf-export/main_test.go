package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/ggufconv"
)

// TestAlias: apr-gguf-export takes the export flags without a subcommand.
func TestAlias(t *testing.T) {
	src := "../../testdata/gguf/small.Q8_0.gguf"
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ggufconv.OpenFile(src, ggufconv.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var a bytes.Buffer
	if err := ggufconv.Import(&a, s); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var out, errb bytes.Buffer
	if code := run([]string{"--temp-dir", t.TempDir()}, &a, &out, &errb); code != 0 || !bytes.Equal(out.Bytes(), orig) {
		t.Fatalf("exit %d, stderr %q, output equal to the source: %v", code, errb.String(), bytes.Equal(out.Bytes(), orig))
	}
	out.Reset()
	if code := run([]string{"--help"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "--temp-dir") {
		t.Errorf("--help: exit %d\n%s", code, out.String())
	}
	errb.Reset()
	o := filepath.Join(t.TempDir(), "x.gguf")
	if code := run([]string{"-o", o}, strings.NewReader("not apr"), &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), "apr-gguf-export: stdin: ") {
		t.Errorf("garbage: exit %d %q", code, errb.String())
	}
	if _, err := os.Stat(o); !os.IsNotExist(err) {
		t.Errorf("garbage left an output file")
	}
}

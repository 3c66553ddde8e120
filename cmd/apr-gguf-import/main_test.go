package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestAlias: apr-gguf-import takes the import flags without a subcommand.
func TestAlias(t *testing.T) {
	b, err := os.ReadFile("../../testdata/gguf/small.Q8_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(nil, bytes.NewReader(b), &out, &errb); code != 0 || !bytes.HasPrefix(out.Bytes(), []byte("APRN")) {
		t.Fatalf("exit %d, stderr %q, output starts %q", code, errb.String(), out.Bytes()[:min(4, out.Len())])
	}
	out.Reset()
	if code := run([]string{"--help"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "--digest") {
		t.Errorf("--help: exit %d\n%s", code, out.String())
	}
	errb.Reset()
	if code := run([]string{"nothere.gguf"}, nil, &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), "apr-gguf-import: ") {
		t.Errorf("missing file: exit %d %q", code, errb.String())
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestAlias: apr-st-import is apr-st import under its own name.
func TestAlias(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage: apr-st-import") || !strings.Contains(out.String(), "--output") {
		t.Errorf("--help: exit %d, %q", code, out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"--no-such-flag"}, nil, &out, &errb); code != 2 || !strings.HasPrefix(errb.String(), "apr-st-import: ") {
		t.Errorf("bad flag: exit %d, %q", code, errb.String())
	}
}

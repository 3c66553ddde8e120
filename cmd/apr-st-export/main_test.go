package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestAlias: apr-st-export is apr-st export under its own name.
func TestAlias(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage: apr-st-export") || !strings.Contains(out.String(), "--output") {
		t.Errorf("--help: exit %d, %q", code, out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"--no-such-flag"}, nil, &out, &errb); code != 2 || !strings.HasPrefix(errb.String(), "apr-st-export: ") {
		t.Errorf("bad flag: exit %d, %q", code, errb.String())
	}
}

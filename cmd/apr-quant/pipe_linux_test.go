//go:build linux

package main

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWidenPipes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	widenPipes(r, &bytes.Buffer{}) // a reader end; a writer that is no file is left alone
	n, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if max, _ := os.ReadFile("/proc/sys/fs/pipe-max-size"); n != widePipe && string(bytes.TrimSpace(max)) == "1048576" {
		t.Fatalf("pipe size %d, want %d", n, widePipe)
	}
}

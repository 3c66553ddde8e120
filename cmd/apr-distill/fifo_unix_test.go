//go:build unix

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/apr"
)

// TestDataFromFIFO: --data from a FIFO (as <(...) gives) records the SHA-256 of the
// bytes read; the file was read a second time for it, which gave the digest of no
// bytes (e3b0c442...).
func TestDataFromFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "digits.csv.gz")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	b := mustRead(t, digits)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write(b)
		w.Close()
	}()
	out := filepath.Join(dir, "lr.apr")
	done := make(chan string, 1)
	go func() { // a second open of the FIFO waits for a writer that never comes
		code, _, stderr := runCLI(t, "fit-logistic", "--max-iter", "5", "--data", fifo, "--scale", "0.0625", "-o", out)
		if code != 0 {
			stderr = fmt.Sprintf("exit %d: %s", code, stderr)
		} else {
			stderr = ""
		}
		done <- stderr
	}()
	select {
	case msg := <-done:
		if msg != "" {
			t.Fatal(msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("blocked for 30 s")
	}
	info, err := apr.Inspect(out)
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := info.Metadata.Provenance["training"].(map[string]any)
	data, _ := tr["data"].(map[string]any)
	sum := sha256.Sum256(b)
	if got, want := data["sha256"], hex.EncodeToString(sum[:]); got != want {
		t.Errorf("data sha256 %v, want %s", got, want)
	}
}

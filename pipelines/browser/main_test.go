package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSite builds the static site (what -o writes and the server serves) and
// checks its parts: the page with its config, apr.wasm and its gzip twin, Go's
// wasm_exec.js and the model. The page itself runs in Chromium in ./e2e.
func TestSite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds apr.wasm")
	}
	dir := t.TempDir()
	t.Chdir("../..") // the defaults are relative to the repository's root
	c, err := build(dir, "pipelines/embedded/signer.pub", []string{"pipelines/embedded/model.apr"})
	if err != nil {
		t.Fatal(err)
	}
	model, _ := os.ReadFile("pipelines/embedded/model.apr")
	sum := sha256.Sum256(model)
	page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if !strings.Contains(string(page), hex.EncodeToString(sum[:])) || !strings.Contains(string(page), "BEGIN PUBLIC KEY") || strings.Contains(string(page), "{{config}}") {
		t.Errorf("index.html lacks the model's digest or the pinned key:\n%s", page)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "models", "model.apr")); !bytes.Equal(got, model) {
		t.Error("models/model.apr is not the model")
	}
	wasm, _ := os.ReadFile(filepath.Join(dir, "apr.wasm"))
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) || int64(len(wasm)) != c.Wasm.Size {
		t.Errorf("apr.wasm: %d bytes starting %q, config says %d", len(wasm), wasm[:min(4, len(wasm))], c.Wasm.Size)
	}
	f, _ := os.Open(filepath.Join(dir, "apr.wasm.gz"))
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unzipped, wasm) {
		t.Errorf("apr.wasm.gz does not unzip to apr.wasm (%v)", err)
	}
	if js, err := os.ReadFile(filepath.Join(dir, "wasm_exec.js")); err != nil || !bytes.Contains(js, []byte("class Go")) && !bytes.Contains(js, []byte("globalThis.Go")) {
		t.Errorf("wasm_exec.js: %v", err)
	}
	t.Logf("apr.wasm: %d bytes, %d gzipped", c.Wasm.Size, c.Wasm.Gzip)
}

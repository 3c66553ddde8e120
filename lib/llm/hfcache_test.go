package llm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// hfCache lays out the checkpoint as `huggingface-cli download` keeps it:
// models--ORG--NAME/snapshots/REV/FILE, each FILE a relative symbolic link to
// ../../blobs/SHA256. Only the files link selects are links; the others are copies.
// It returns the snapshot directory, whose name is rev.
func hfCache(t *testing.T, rev string, link func(name string) bool) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "models--apr-go--tiny-llama")
	snap := filepath.Join(repo, "snapshots", rev)
	for _, d := range []string{filepath.Join(repo, "blobs"), snap} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(checkpoint, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !link(e.Name()) {
			if err := os.WriteFile(filepath.Join(snap, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		sum := sha256.Sum256(b)
		blob := hex.EncodeToString(sum[:])
		if err := os.WriteFile(filepath.Join(repo, "blobs", blob), b, 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../blobs/"+blob, filepath.Join(snap, e.Name())); err != nil {
			t.Skip("no symbolic links:", err)
		}
	}
	return snap
}

// TestHFCacheLayout: a checkpoint in the Hugging Face cache (every file a link into
// blobs/), or with only config.json or only tokenizer.model a link, converts to the
// very GGUF its plain copy does. The plain copy is in a directory of the snapshot's
// name: the GGUF's general.name comes from the directory's name, as the converter's
// does.
func TestHFCacheLayout(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	want := toGGUF(t, hfCache(t, rev, func(string) bool { return false }), "f32")
	for _, c := range []struct {
		name string
		link func(string) bool
	}{
		{"every file", func(string) bool { return true }},
		{"config.json", func(n string) bool { return n == "config.json" }},
		{"tokenizer.model", func(n string) bool { return n == "tokenizer.model" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := toGGUF(t, hfCache(t, rev, c.link), "f32")
			if !bytes.Equal(got, want) {
				t.Errorf("the GGUF differs from the plain copy's (%d bytes, want %d)", len(got), len(want))
			}
		})
	}
}

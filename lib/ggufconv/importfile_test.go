package ggufconv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/stream"
)

// TestImportFile imports every fixture with ImportFile and Digest into a file (digest computed
// beside the conversion, header patched afterwards), after some bytes already in the
// file, plain and compressed, and wants the bytes of Import of OpenFile (digest first),
// a file that verifies, and the right digest. Into a buffer it takes the digest-first
// path and gives the same bytes.
func TestImportFile(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	for _, path := range fixtures(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(orig)
			for _, opts := range [][]container.Option{nil, {container.WithCompression(container.CompressZstd)}} {
				s, err := OpenFile(path, ImportOptions{Digest: true})
				if err != nil {
					t.Fatal(err)
				}
				var want bytes.Buffer
				if err := Import(&want, s, opts...); err != nil {
					t.Fatal(err)
				}
				s.Close()

				lead := []byte("leading bytes\n")
				got, err := exportTo(t, dir, os.O_RDWR, lead, func(f *os.File) error {
					if _, err := f.Seek(int64(len(lead)), 0); err != nil {
						return err
					}
					return ImportFile(f, path, ImportOptions{Digest: true}, opts...)
				})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(got, lead) || !bytes.Equal(got[len(lead):], want.Bytes()) {
					t.Fatalf("ImportFile into a file: %d bytes, want %d, first difference at %d", len(got)-len(lead), want.Len(), firstDiff(got[min(len(lead), len(got)):], want.Bytes()))
				}
				aprPath := filepath.Join(dir, "got.apr")
				if err := os.WriteFile(aprPath, got[len(lead):], 0o644); err != nil {
					t.Fatal(err)
				}
				cf, err := container.Open(aprPath)
				if err != nil {
					t.Fatal(err)
				}
				if err := cf.Verify(); err != nil {
					t.Errorf("patched file does not verify: %v", err)
				}
				if d := cf.Header().Metadata.Provenance[ProvSHA256]; d != hex.EncodeToString(sum[:]) {
					t.Errorf("digest %v, want %x", d, sum)
				}
				cf.Close()

				var buf bytes.Buffer
				if err := ImportFile(&buf, path, ImportOptions{Digest: true}, opts...); err != nil || !bytes.Equal(buf.Bytes(), want.Bytes()) {
					t.Fatalf("ImportFile into a buffer: %v, first difference at %d", err, firstDiff(buf.Bytes(), want.Bytes()))
				}
			}
		})
	}
}

// TestImportFileNoDigest: by default ImportFile records no digest and gives the bytes
// of OpenFile.
func TestImportFileNoDigest(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	path := filepath.Join(testdata, "tiny-llama.f32.gguf")
	s, err := OpenFile(path, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want bytes.Buffer
	if err := Import(&want, s); err != nil {
		t.Fatal(err)
	}
	got, err := exportTo(t, t.TempDir(), os.O_TRUNC, nil, func(f *os.File) error {
		return ImportFile(f, path, ImportOptions{})
	})
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%v, first difference at %d", err, firstDiff(got, want.Bytes()))
	}
	info, err := stream.InspectReader(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Metadata.Provenance[ProvSHA256]; ok {
		t.Error("import without Digest has a digest")
	}
}

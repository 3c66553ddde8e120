package stconv

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/safetensors"
	"github.com/apr-go/apr/lib/stream"
)

// FuzzImportExport: whatever the input, import and export return errors, never panic;
// an input the importer accepts exports to a file the reader accepts, with the same
// tensors and metadata, and byte for byte the input when the input was laid out as
// the crate lays files out.
func FuzzImportExport(f *testing.F) {
	for _, dir := range []string{validDir, "../../testdata/safetensors/cases"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := NewStream(bytes.NewReader(b), ImportOptions{})
		if err != nil {
			return
		}
		var a bytes.Buffer
		w, err := container.NewWriter(&a, s.Header())
		if err != nil {
			return
		}
		if err := stream.Copy(w, s); err != nil {
			return
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		in, err := safetensors.Decode(b)
		if err != nil {
			t.Fatalf("the stream reader accepted what Decode refuses: %v", err)
		}
		as, err := stream.Open(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Export(&out, StreamSource(as), ExportOptions{TempDir: t.TempDir()}); err != nil {
			t.Fatalf("export of an accepted import: %v", err)
		}
		got, err := safetensors.Decode(out.Bytes())
		if err != nil {
			t.Fatalf("export is not a valid file: %v", err)
		}
		if !slices.Equal(got.Metadata, in.Metadata) || len(got.Tensors) != len(in.Tensors) {
			t.Fatalf("metadata or tensor count changed: %v / %v", got.Metadata, in.Metadata)
		}
		for _, ti := range in.Tensors {
			gi, ok := got.Lookup(ti.Name)
			if !ok || gi.DType != ti.DType || !slices.Equal(gi.Shape, ti.Shape) ||
				!bytes.Equal(out.Bytes()[got.DataStart()+gi.Begin:got.DataStart()+gi.End], b[in.DataStart()+ti.Begin:in.DataStart()+ti.End]) {
				t.Fatalf("tensor %q changed", ti.Name)
			}
		}
		specs := make([]safetensors.TensorSpec, len(in.Tensors))
		for i, ti := range in.Tensors {
			specs[i] = ti.Spec()
		}
		if h, err := safetensors.Layout(in.Metadata, specs); err == nil {
			hb, _ := h.MarshalHeader()
			if bytes.Equal(hb, b[:min(len(b), len(hb))]) && !bytes.Equal(out.Bytes(), b) {
				t.Fatal("a canonically laid out input did not come back byte for byte")
			}
		}
	})
}

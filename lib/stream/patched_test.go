package stream

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

// closeCount counts the Close calls of a stream.
type closeCount struct {
	Stream
	n *int
}

func (s closeCount) Close() error { *s.n++; return s.Stream.Close() }

// TestImportDigested: the digest is patched in only when it is wanted and the output
// can be rewritten in place (a file, not a pipe or buffer); otherwise the opened
// stream (which read its digests up front) is written out and closed.
func TestImportDigested(t *testing.T) {
	var src bytes.Buffer
	w, err := container.NewWriter(&src, container.Header{Type: modeltype.Custom})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensorBytes(container.TensorInfo{Name: "t", DType: dtype.U8, Shape: []int64{3}}, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out.apr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, patchable := container.Patchable(f) // not where the platform cannot tell O_APPEND (js, wasip1)
	for _, c := range []struct {
		name        string
		out         io.Writer
		digest      bool
		wantPatched bool
	}{{"buffer, digest", new(bytes.Buffer), true, false}, {"file, digest", f, true, patchable}, {"file, no digest", f, false, false}} {
		var opened, closed, patched int
		open := func() (Stream, error) {
			opened++
			s, err := Open(bytes.NewReader(src.Bytes()))
			return closeCount{s, &closed}, err
		}
		err := ImportDigested(c.out, c.digest, open, func(container.PatchFile) error { patched++; return nil })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.wantPatched && (patched != 1 || opened != 0) || !c.wantPatched && (patched != 0 || opened != 1 || closed != 1) {
			t.Errorf("%s: patched %d, opened %d, closed %d", c.name, patched, opened, closed)
		}
		if b, ok := c.out.(*bytes.Buffer); ok && !bytes.Equal(b.Bytes(), src.Bytes()) {
			t.Errorf("%s: wrote %d bytes, not the stream's %d", c.name, b.Len(), src.Len())
		}
	}
}

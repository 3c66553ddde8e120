package container

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

// writePatchTest writes a small APR file for h with opts to w: a few tensors of random
// bytes, some larger than a chunk.
func writePatchTest(t *testing.T, w interface{ Write([]byte) (int, error) }, h Header, opts []Option) {
	t.Helper()
	cw, err := NewWriter(w, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i, n := range []int64{1, 17, 4096, 300000} {
		b := make([]byte, 4*n)
		for j := range b {
			b[j] = byte(r.Uint32() % 7)
		}
		if err := cw.WriteTensor(TensorInfo{Name: strings.Repeat("t", i+1), DType: dtype.F32, Shape: []int64{n}}, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
}

func patchHeader(name string, digest string) Header {
	return Header{Type: modeltype.Custom, Metadata: Metadata{Name: name, CreatedAt: "2023-11-14T22:13:20Z",
		Provenance: map[string]any{"sha256": digest, "size": int64(5)}}}
}

// TestPatcher writes files through a Patcher after some leading bytes, with a
// placeholder digest, patches in the real one, and wants the bytes of a file written
// with the real digest from the start, a file that verifies.
func TestPatcher(t *testing.T) {
	dir := t.TempDir()
	for i, opts := range [][]Option{nil, {WithCompression(CompressZstd), WithChunkSize(64 << 10)}, {WithCompression(CompressLZ4), WithShuffle(true)}, nil} {
		was := patchHeader("model", strings.Repeat("0", 64))
		now := patchHeader("model", strings.Repeat("ab", 32))
		if i == 3 { // with a tensor table (format 2.1), which sits after the metadata
			for j, n := range []int64{1, 17, 4096, 300000} {
				ti := TensorInfo{Name: strings.Repeat("t", j+1), DType: dtype.F32, Shape: []int64{n}}
				was.Table, now.Table = append(was.Table, ti), append(now.Table, ti)
			}
		}
		var want bytes.Buffer
		writePatchTest(t, &want, now, opts)

		path := filepath.Join(dir, "out.apr")
		lead := []byte("leading bytes\n")
		if err := os.WriteFile(path, lead, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(int64(len(lead)), 0); err != nil {
			t.Fatal(err)
		}
		pf, ok := Patchable(f)
		if !ok {
			switch runtime.GOOS {
			case "js", "wasip1", "windows", "plan9": // cannot tell O_APPEND: patch anyway
				pf = f
			default:
				t.Fatal("a regular file opened for writing is not patchable")
			}
		}
		p, err := NewPatcher(pf)
		if err != nil {
			t.Fatal(err)
		}
		writePatchTest(t, p, was, opts)
		if err := p.Patch(was, now, opts...); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(got, lead) || !bytes.Equal(got[len(lead):], want.Bytes()) {
			t.Fatalf("patched file differs from the file written with the final header (%d bytes, want %d)", len(got)-len(lead), want.Len())
		}
		if err := os.WriteFile(path, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		cf, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := cf.Verify(); err != nil {
			t.Errorf("patched file does not verify: %v", err)
		}
		cf.Close()
	}
}

// TestPatchMetadataRefuses: metadata of another length, or bytes that are not an APR
// file, are refused before anything is written.
func TestPatchMetadataRefuses(t *testing.T) {
	was := patchHeader("model", strings.Repeat("0", 64))
	var buf bytes.Buffer
	writePatchTest(t, &buf, was, nil)
	var footer [FooterSize]byte
	copy(footer[:], buf.Bytes()[buf.Len()-FooterSize:])
	w := &recordWriterAt{}
	if err := PatchMetadata(w, 0, int64(buf.Len()), &footer, was, patchHeader("model", strings.Repeat("0", 66))); err == nil {
		t.Error("metadata of another length patched")
	}
	var zero [FooterSize]byte
	if err := PatchMetadata(w, 0, int64(buf.Len()), &zero, was, patchHeader("model", strings.Repeat("1", 64))); err == nil {
		t.Error("bytes without a footer patched")
	}
	if w.n != 0 {
		t.Errorf("%d writes on a refusal", w.n)
	}
}

type recordWriterAt struct{ n int }

func (w *recordWriterAt) WriteAt(p []byte, off int64) (int, error) { w.n++; return len(p), nil }

// TestPatchable: buffers and files opened for appending are not patchable.
func TestPatchable(t *testing.T) {
	if _, ok := Patchable(&bytes.Buffer{}); ok {
		t.Error("a buffer is patchable")
	}
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "a"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := Patchable(f); ok {
		t.Error("a file opened with O_APPEND is patchable")
	}
}

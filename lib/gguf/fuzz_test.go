package gguf

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadHeader parses arbitrary bytes through the streaming and the file API. It
// must never panic; whatever both accept must agree, re-encode to the same header
// bytes (when the writer accepts it and the padding was zero) and stream the same
// tensor data the file API returns.
func FuzzReadHeader(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(testdataDir, "*.gguf"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		// The header and the first bytes of data keep seeds small.
		if h, err := ReadHeader(bytes.NewReader(b)); err == nil && int(h.DataOffset)+512 < len(b) {
			b = b[:h.DataOffset+512]
		}
		f.Add(b)
	}
	f.Add(newGB(3, 1, 1).kvU32(AlignmentKey, 32).tensor("w", []uint64{8}, 0, 0).pad(32).zeros(32).b)
	f.Add(newGB(2, 0, 1).str("n").u32(uint32(TypeArray)).u32(uint32(TypeArray)).u64(1).u32(0).u64(1).raw(7).pad(32).b)
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := Limits{MaxArrayLen: 1 << 16, MaxStringLen: 1 << 16, MaxKVs: 1 << 12, MaxTensors: 1 << 12, MaxHeaderBytes: 1 << 22}
		h, err := lim.ReadHeader(bytes.NewReader(b))
		file, ferr := lim.NewFile(bytes.NewReader(b), int64(len(b)))
		if ferr == nil && err != nil {
			t.Fatalf("file API accepts what streaming refuses: %v", err)
		}
		if err != nil {
			return
		}
		if enc, err := h.EncodeHeader(); err == nil {
			// A file without tensors may end before its padding.
			end := min(h.DataOffset, int64(len(b)))
			if bytes.Equal(b[h.InfoEnd:end], make([]byte, end-h.InfoEnd)) && !bytes.Equal(enc[:end], b[:end]) {
				t.Fatalf("re-encoded header differs at %d", firstDiff(enc, b[:end]))
			}
			h2, err := ReadHeader(bytes.NewReader(enc))
			if err != nil {
				t.Fatalf("re-encoded header unreadable: %v", err)
			}
			if err := headersEqual(h, h2); err != nil {
				t.Fatalf("re-encoded header differs: %v", err)
			}
		}
		if ferr != nil {
			return
		}
		if err := headersEqual(h, &file.Header); err != nil {
			t.Fatalf("stream and file headers differ: %v", err)
		}
		r := bytes.NewReader(b[min(h.DataOffset, int64(len(b))):])
		dr, err := NewDataReader(r, h)
		if err != nil {
			t.Fatalf("file API accepts what NewDataReader refuses: %v", err)
		}
		for {
			i, tr, err := dr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			want, err := file.TensorData(i)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("tensor %d: stream and file data differ (%v)", i, err)
			}
		}
	})
}

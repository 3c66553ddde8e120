package ggufconv

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
)

// bigGGUF returns a GGUF file of about 16 MiB, two dropEvery windows, whose last
// tensor's size is not a multiple of the alignment (the file ends in 20 bytes of
// padding).
func bigGGUF(t *testing.T) []byte {
	t.Helper()
	h := &gguf.Header{
		KVs: []gguf.KV{{Key: "general.name", Value: gguf.String("big")}},
		Tensors: []gguf.TensorInfo{
			{Name: "a", Dims: []int64{1024, 3 << 10}, Type: 0}, // F32, 12 MiB
			{Name: "b", Dims: []int64{1_000_003}, Type: 0},     // 4,000,012 bytes
		},
	}
	if err := h.Layout(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range h.Tensors {
		n, _ := h.Tensors[i].Size()
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(j*31 + i)
		}
		if err := w.WriteTensor(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// importResult is what an import gave: the APR bytes, or the error's text.
func importResult(s *importStream, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	defer s.Close()
	var out bytes.Buffer
	if err := Import(&out, s); err != nil {
		return "error: " + err.Error()
	}
	return out.String()
}

// TestMappedAndRead: a file read from a mapping (OpenFile; NewStream of a regular
// *os.File, from its current offset, as a redirected stdin) gives the same APR bytes
// and the same errors as the read path (the same file behind a plain io.Reader), for
// every fixture, a file larger than dropEvery (also without its final padding, which
// is allowed), and broken files: truncated inside the data, bytes after the data, a
// truncated header; their errors name the file.
func TestMappedAndRead(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	files := map[string][]byte{"big.gguf": bigGGUF(t)}
	for _, path := range fixtures(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(path)] = b
	}
	q8 := files["small.Q8_0.gguf"]
	big := files["big.gguf"]
	files["truncated-data.gguf"] = q8[:len(q8)-100]
	files["big-no-final-padding.gguf"] = big[:len(big)-10] // refused, as llama.cpp's reader does (export would add it)
	files["trailing.gguf"] = append(slices.Clone(q8), 0)
	files["truncated-header.gguf"] = q8[:100]
	files["big-truncated.gguf"] = big[:len(big)-5<<20]
	files["big-trailing.gguf"] = append(slices.Clone(big), make([]byte, 10<<20)...)
	wantErr := map[string]bool{"truncated-data.gguf": true, "trailing.gguf": true, "truncated-header.gguf": true,
		"big-truncated.gguf": true, "big-trailing.gguf": true, "big-no-final-padding.gguf": true}
	lead := []byte("bytes before the GGUF\n")
	for name, b := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, canMap := mapFile(f)
			if canMap {
				m.unmap()
			}
			prov := map[string]any{ProvSize: int64(len(b))}
			read := importResult(newStream(struct{ io.Reader }{f}, ImportOptions{Name: path}, prov))

			st, err := OpenFile(path, ImportOptions{})
			s, _ := st.(*importStream)
			if canMap && err == nil && s.mapped == nil {
				t.Fatal("OpenFile did not map the file")
			}
			if mapped := importResult(s, err); mapped != read {
				t.Errorf("OpenFile (mapped %v) and the read path differ:\n%s", canMap, describe(mapped, read))
			}
			if isErr := strings.HasPrefix(read, "error: "); isErr != wantErr[name] || isErr && !strings.Contains(read, path) {
				t.Errorf("broken file %v, but the import gave %s", wantErr[name], describe(read, ""))
			}

			// A redirected stdin that is not at its start.
			path2 := filepath.Join(dir, "lead-"+name)
			if err := os.WriteFile(path2, append(slices.Clone(lead), b...), 0o644); err != nil {
				t.Fatal(err)
			}
			in := func() *os.File {
				f, err := os.Open(path2)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Seek(int64(len(lead)), io.SeekStart); err != nil {
					t.Fatal(err)
				}
				return f
			}
			f1, f2 := in(), in()
			defer f1.Close()
			defer f2.Close()
			read = importResult(newStream(struct{ io.Reader }{f1}, ImportOptions{Name: "stdin"}, nil))
			st, err = NewStream(f2, ImportOptions{Name: "stdin"})
			s, _ = st.(*importStream)
			if canMap && err == nil && s.mapped == nil {
				t.Fatal("NewStream of a regular file did not map it")
			}
			if mapped := importResult(s, err); mapped != read {
				t.Errorf("NewStream of a file at an offset (mapped %v) and the read path differ:\n%s", canMap, describe(mapped, read))
			}
		})
	}
}

// describe shows two import results briefly: errors in full, APR bytes by length and
// first difference.
func describe(got, want string) string {
	short := func(s string) string {
		if strings.HasPrefix(s, "error:") {
			return s
		}
		return fmt.Sprintf("%d APR bytes", len(s))
	}
	if want == "" {
		return short(got)
	}
	return fmt.Sprintf("got  %s\nwant %s (first difference at %d)", short(got), short(want), firstDiff([]byte(got), []byte(want)))
}

// TestMapReaderDropsAll: reading a mapping to its end gives every page back, the
// last partial one included, and a read after unmap sees the end of the input.
func TestMapReaderDropsAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	want := make([]byte, 2*dropEvery+12345)
	for i := range want {
		want[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, ok := mapFile(f)
	if !ok {
		t.Skip("no mapping on this platform")
	}
	var got bytes.Buffer
	if _, err := io.CopyBuffer(&got, r, make([]byte, 300_000)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("read %d bytes, first difference at %d", got.Len(), firstDiff(got.Bytes(), want))
	}
	if r.dropped != len(want) {
		t.Errorf("dropped %d of %d bytes", r.dropped, len(want))
	}
	if err := r.unmap(); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Errorf("Read after unmap: %d, %v", n, err)
	}
}

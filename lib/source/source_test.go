package source

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stconv"
	"github.com/apr-go/apr/lib/stream"
)

const (
	tinyGGUF = "../../testdata/gguf/tiny-llama.f32.gguf"
	stFile   = "../../testdata/safetensors/valid/big_f32.safetensors"
	ckpt     = "../../testdata/hf/tiny-llama"
)

// TestKindOf: formats are told apart by content (a GGUF named .apr is a GGUF), a
// directory and an index .json are checkpoints, and what is neither GGUF nor
// SafeTensors goes to the APR reader.
func TestKindOf(t *testing.T) {
	dir := t.TempDir()
	gguf, _ := os.ReadFile(tinyGGUF)
	st, _ := os.ReadFile(stFile)
	files := map[string][]byte{"model.apr": gguf, "weights.bin": st, "short": []byte("GG"), "empty": nil,
		"model.safetensors.index.json": []byte("{}"), "npy": []byte("\x93NUMPY\x01\x00v\x00{'descr'")}
	want := map[string]Kind{"model.apr": GGUF, "weights.bin": SafeTensors, "short": APR, "empty": APR,
		"model.safetensors.index.json": Checkpoint, "npy": APR}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if k, err := KindOf(p); err != nil || k != want[name] {
			t.Errorf("%s: %v, %v; want %v", name, k, err, want[name])
		}
	}
	if k, err := KindOf(dir); err != nil || k != Checkpoint {
		t.Errorf("a directory: %v, %v", k, err)
	}
	if _, err := KindOf(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file: no error")
	}
}

// TestPipedHeader: Open gives the header an APR reader reports after the importer's
// stream went through a pipe (apr-gguf import | ...), tensor table included, and the
// tensors unchanged.
func TestPipedHeader(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	for _, in := range []string{tinyGGUF, stFile, ckpt} {
		s, k, err := Open(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		imp, err := ggufconv.OpenFile(tinyGGUF, ggufconv.ImportOptions{})
		if k != GGUF {
			imp, err = openST(in)
		}
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := stream.Write(&b, imp); err != nil {
			t.Fatal(err)
		}
		imp.Close()
		r, err := stream.Open(&b)
		if err != nil {
			t.Fatal(err)
		}
		want, got := r.Header(), s.Header()
		wm, _ := want.Metadata.Encode()
		gm, _ := got.Metadata.Encode()
		if want.Type != got.Type || want.Flags != got.Flags || !bytes.Equal(wm, gm) || len(want.Table) != len(got.Table) {
			t.Errorf("%s: the header differs from the piped one", in)
		}
		for {
			wi, wr, werr := r.Next()
			gi, gr, gerr := s.Next()
			if werr != gerr || wi.Name != gi.Name {
				t.Fatalf("%s: tensor %q (%v), piped %q (%v)", in, gi.Name, gerr, wi.Name, werr)
			}
			if werr == io.EOF {
				break
			}
			wb, _ := io.ReadAll(wr)
			gb, _ := io.ReadAll(gr)
			if !bytes.Equal(wb, gb) {
				t.Errorf("%s: tensor %q differs", in, gi.Name)
			}
		}
		s.Close()
	}
}

// TestOpenReader: a GGUF and a SafeTensors stream on a pipe are imported; an APR
// stream is handed back whole for the APR reader.
func TestOpenReader(t *testing.T) {
	gguf, _ := os.ReadFile(tinyGGUF)
	st, _ := os.ReadFile(stFile)
	s, k, _, err := OpenReader(bytes.NewReader(gguf), "stdin", Options{})
	if err != nil || k != GGUF || len(s.Header().Table) == 0 {
		t.Fatalf("GGUF: %v %v", k, err)
	}
	s.Close()
	s, k, _, err = OpenReader(bytes.NewReader(st), "stdin", Options{})
	if err != nil || k != SafeTensors {
		t.Fatalf("SafeTensors: %v %v", k, err)
	}
	s.Close()
	var a bytes.Buffer
	w, err := container.NewWriter(&a, container.Header{Type: modeltype.Custom, Table: []container.TensorInfo{}})
	if err != nil || w.Close() != nil {
		t.Fatal(err)
	}
	s, k, rest, err := OpenReader(bytes.NewReader(a.Bytes()), "stdin", Options{})
	if err != nil || k != APR || s != nil {
		t.Fatalf("APR: %v %v", k, err)
	}
	if b, _ := io.ReadAll(rest); !bytes.Equal(b, a.Bytes()) {
		t.Error("the APR bytes looked at were lost")
	}
	if _, _, _, err := OpenReader(bytes.NewReader(gguf[:100]), "stdin", Options{}); err == nil {
		t.Error("a truncated GGUF header: no error")
	}
}

func openST(path string) (stream.Stream, error) { return stconv.Open(path, stconv.ImportOptions{}) }

// TestSniffHeaderStart: a SafeTensors header after JSON white space (which the
// safetensors crate's parser skips) or a byte order mark (which the SafeTensors
// reader then names) is SafeTensors, not a bad APR magic.
func TestSniffHeaderStart(t *testing.T) {
	head := func(prefix string) []byte {
		b := binary.LittleEndian.AppendUint64(nil, 100)
		return append(append(b, prefix...), `{"a":`...)
	}
	for _, c := range []struct {
		b    []byte
		want Kind
	}{
		{head(""), SafeTensors}, {head(" "), SafeTensors}, {head("\r\n\t "), SafeTensors},
		{head("\xef\xbb\xbf"), SafeTensors}, {head("x"), APR}, {[]byte("APRN\x02\x00\x00\x00{"), APR},
		{[]byte("GGUF\x03\x00\x00\x00"), GGUF},
	} {
		if got := Sniff(c.b); got != c.want {
			t.Errorf("Sniff(%q) = %v, want %v", c.b, got, c.want)
		}
	}
}

package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const testdata = "../../testdata/safetensors"

type verdict struct {
	File     string  `json:"file"`
	Accepted bool    `json:"accepted"`
	Error    *string `json:"error"`
	Note     string  `json:"note"`
	Tensors  map[string]struct {
		DType string  `json:"dtype"`
		Shape []int64 `json:"shape"`
	} `json:"tensors"`
	Metadata map[string]string `json:"metadata"`
}

func loadVerdicts(t testing.TB) []verdict {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, "verdicts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []verdict
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 {
		t.Fatal("no verdicts")
	}
	return vs
}

// readStream reads a whole stream through NewReader and Next, draining every tensor.
func readStream(r io.Reader) (*Header, error) {
	sr, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	err = sr.ReadAll(func(_ TensorInfo, tr io.Reader) error {
		_, err := io.Copy(io.Discard, tr)
		return err
	})
	return sr.Header(), err
}

// oneByteReader returns one byte per Read, to exercise short reads.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func kindOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind.String()
	}
	return "non-Error: " + err.Error()
}

// TestVerdicts compares every read path with crate v0.6.2's verdict on every file.
func TestVerdicts(t *testing.T) {
	vs := loadVerdicts(t)
	files, _ := filepath.Glob(filepath.Join(testdata, "*", "*.safetensors"))
	if len(files) != len(vs) {
		t.Errorf("%d .safetensors files but %d verdicts", len(files), len(vs))
	}
	for _, v := range vs {
		t.Run(v.File, func(t *testing.T) {
			path := filepath.Join(testdata, v.File)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			paths := map[string]func() (*Header, error){
				"Decode": func() (*Header, error) { return Decode(b) },
				"Open": func() (*Header, error) {
					f, err := Open(path)
					if err != nil {
						return nil, err
					}
					defer f.Close()
					// Every tensor's bytes must be reachable.
					for _, ti := range f.Header().Tensors {
						d, err := f.Data(ti.Name)
						if err != nil {
							return nil, err
						}
						want := b[f.Header().DataStart()+ti.Begin : f.Header().DataStart()+ti.End]
						if !bytes.Equal(d, want) {
							t.Errorf("Open: tensor %q data differs", ti.Name)
						}
					}
					return f.Header(), nil
				},
				"Stream":      func() (*Header, error) { return readStream(bytes.NewReader(b)) },
				"StreamBytes": func() (*Header, error) { return readStream(oneByteReader{bytes.NewReader(b)}) },
			}
			for name, read := range paths {
				h, err := read()
				if !v.Accepted {
					if err == nil {
						t.Errorf("%s: accepted; crate v0.6.2 rejects with %s (%s)", name, *v.Error, v.Note)
						continue
					}
					if got := kindOf(err); got != *v.Error {
						t.Errorf("%s: error %s, crate gives %s (%s)\n  %v", name, got, *v.Error, v.Note, err)
					}
					if name == "Open" {
						t.Log(err)
					}
					if !errors.Is(err, kindByName(*v.Error)) {
						t.Errorf("%s: errors.Is(err, %s) is false", name, *v.Error)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: rejected (%v); crate v0.6.2 accepts (%s)", name, err, v.Note)
					continue
				}
				checkAccepted(t, name, h, v)
			}
		})
	}
}

func kindByName(s string) Kind {
	for k := HeaderTooSmall; k <= OverLimit; k++ {
		if k.String() == s {
			return k
		}
	}
	return 0
}

func checkAccepted(t *testing.T, path string, h *Header, v verdict) {
	t.Helper()
	if len(h.Tensors) != len(v.Tensors) {
		t.Errorf("%s: %d tensors, crate lists %d", path, len(h.Tensors), len(v.Tensors))
	}
	var prevEnd int64
	for _, ti := range h.Tensors {
		want, ok := v.Tensors[ti.Name]
		if !ok {
			t.Errorf("%s: tensor %q not in the crate's list", path, ti.Name)
			continue
		}
		if ti.DTypeName != want.DType || ti.DType.Info().SafeTensors != want.DType {
			t.Errorf("%s: tensor %q dtype %s (%v), crate says %s", path, ti.Name, ti.DTypeName, ti.DType, want.DType)
		}
		if len(ti.Shape) != len(want.Shape) || (len(want.Shape) > 0 && !reflect.DeepEqual(ti.Shape, want.Shape)) {
			t.Errorf("%s: tensor %q shape %v, crate says %v", path, ti.Name, ti.Shape, want.Shape)
		}
		if ti.Begin != prevEnd {
			t.Errorf("%s: tensor %q begins at %d, previous ended at %d", path, ti.Name, ti.Begin, prevEnd)
		}
		prevEnd = ti.End
	}
	if prevEnd != h.DataSize {
		t.Errorf("%s: tensors end at %d, DataSize %d", path, prevEnd, h.DataSize)
	}
	if (v.Metadata == nil) != (h.Metadata == nil) {
		t.Errorf("%s: metadata %v, crate says %v", path, h.Metadata, v.Metadata)
	}
	if len(h.Metadata) != len(v.Metadata) {
		t.Errorf("%s: %d metadata keys, crate says %d", path, len(h.Metadata), len(v.Metadata))
	}
	for _, e := range h.Metadata {
		if w, ok := v.Metadata[e.Key]; !ok || w != e.Value {
			t.Errorf("%s: metadata %q=%q, crate says %q", path, e.Key, e.Value, w)
		}
	}
}

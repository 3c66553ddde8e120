package llm_test

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// copyCheckpointWith copies checkpoint src into a new directory named name, each file's
// bytes through edit (which gets the file's name), and returns the directory.
func copyCheckpointWith(t *testing.T, src, name string, edit func(file string, b []byte) []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), edit(e.Name(), b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// stTensor is one tensor of a SafeTensors file a test rewrites.
type stTensor struct {
	name, dtype string
	shape       []int64
	data        []byte
}

// readTensors returns the tensors of SafeTensors file b in data order, and its
// __metadata__ (nil without one).
func readTensors(t *testing.T, b []byte) ([]stTensor, any) {
	t.Helper()
	n := binary.LittleEndian.Uint64(b)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var ts []stTensor
	var meta any
	var offsets []int
	for name, v := range hdr {
		if name == "__metadata__" {
			if err := json.Unmarshal(v, &meta); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var e struct {
			DType   string  `json:"dtype"`
			Shape   []int64 `json:"shape"`
			Offsets [2]int  `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatal(err)
		}
		ts = append(ts, stTensor{name, e.DType, e.Shape, b[8+n:][e.Offsets[0]:e.Offsets[1]]})
		offsets = append(offsets, e.Offsets[0])
	}
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return offsets[a] - offsets[b] })
	sorted := make([]stTensor, len(ts))
	for i, j := range idx {
		sorted[i] = ts[j]
	}
	return sorted, meta
}

// writeTensors returns a SafeTensors file of ts, their data in that order, with meta as
// its __metadata__ when not nil.
func writeTensors(t *testing.T, ts []stTensor, meta any) []byte {
	t.Helper()
	hdr := map[string]any{}
	if meta != nil {
		hdr["__metadata__"] = meta
	}
	var data []byte
	for _, e := range ts {
		hdr[e.name] = map[string]any{"dtype": e.dtype, "shape": e.shape, "data_offsets": []int{len(data), len(data) + len(e.data)}}
		data = append(data, e.data...)
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	return append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...), data...)
}

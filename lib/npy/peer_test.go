package npy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/internal/peertest"
)

func runPython(t *testing.T, py, dir, script string) []byte {
	t.Helper()
	cmd := exec.Command(py, "-c", script)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return out
}

// peerDescrs: every numeric dtype numpy has, in every byte order it writes.
var peerDescrs = map[string]dtype.DType{
	"|b1": dtype.Bool, "|i1": dtype.I8, "|u1": dtype.U8,
	"<i2": dtype.I16, ">i2": dtype.I16, "<u2": dtype.U16, ">u2": dtype.U16,
	"<i4": dtype.I32, ">i4": dtype.I32, "<u4": dtype.U32, ">u4": dtype.U32,
	"<i8": dtype.I64, ">i8": dtype.I64, "<u8": dtype.U64, ">u8": dtype.U64,
	"<f2": dtype.F16, ">f2": dtype.F16, "<f4": dtype.F32, ">f4": dtype.F32,
	"<f8": dtype.F64, ">f8": dtype.F64,
}

// numpyWrites makes numpy write arrays of every dtype and byte order, in
// versions 1.0 to 3.0 and in stored and deflated archives, with the expected
// little-endian bytes beside each; it prints one JSON line per array.
const numpyWrites = `
import json, numpy as np
rng = np.random.default_rng(7)
descrs = json.loads(DESCRS)
shapes = [(), (0,), (1,), (7,), (3, 5), (2, 1, 4), (1000, 3)]
arrays = {}
for d in descrs:
    dt = np.dtype(d)
    for si, shape in enumerate(shapes):
        n = int(np.prod(shape, dtype=np.int64))
        if dt.kind == 'b':
            a = rng.integers(0, 2, n).astype(bool)
        elif dt.kind in 'iu':
            info = np.iinfo(dt)
            a = rng.integers(int(info.min), int(info.max), n, dtype=dt.newbyteorder('='), endpoint=True)
            a[:2] = [info.min, info.max][:len(a[:2])]
        else:
            a = rng.standard_normal(n) * 100
            special = [np.nan, np.inf, -np.inf, -0.0, np.finfo(dt).tiny / 4, np.finfo(dt).max]
            a[:len(special)] = special[:n]
        a = a.astype(dt).reshape(shape)
        tag = '%s%s_%d' % ({'<': 'le', '>': 'be', '|': 'na'}[d[0]], d[1:], si)
        version = [(1, 0), (2, 0), (3, 0)][si % 3]
        with open(tag + '.npy', 'wb') as f:
            np.lib.format.write_array(f, a, version=version)
        with open(tag + '.bin', 'wb') as f:
            f.write(a.astype(dt.newbyteorder('<')).tobytes())
        arrays['x/' + tag] = a
        print(json.dumps({'tag': tag, 'descr': d, 'shape': list(shape), 'version': version[0]}))
np.savez('all.npz', **arrays)
np.savez_compressed('all_deflate.npz', **arrays)
`

type peerArray struct {
	Tag     string  `json:"tag"`
	Descr   string  `json:"descr"`
	Shape   []int64 `json:"shape"`
	Version int     `json:"version"`
}

// TestNumpyPeerWrites: numpy writes, we read.
func TestNumpyPeerWrites(t *testing.T) {
	py := peertest.Python(t, "numpy", "python3-numpy")
	dir := t.TempDir()
	descrs, _ := json.Marshal(keys(peerDescrs))
	out := runPython(t, py, dir, "DESCRS = '"+string(descrs)+"'\n"+numpyWrites)
	var arrays []peerArray
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var a peerArray
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("python output %q: %v", sc.Text(), err)
		}
		arrays = append(arrays, a)
	}
	if len(arrays) != len(peerDescrs)*7 {
		t.Fatalf("python wrote %d arrays, want %d", len(arrays), len(peerDescrs)*7)
	}
	npzs := map[string]map[string][]byte{}
	for _, name := range []string{"all.npz", "all_deflate.npz"} {
		z, err := OpenNPZFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		npzs[name] = readNPZ(t, z.NPZReader)
		z.Close()
	}
	for _, a := range arrays {
		h, data, err := ReadFile(filepath.Join(dir, a.Tag+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, a.Tag+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		if h.DType != peerDescrs[a.Descr] || !equalShape(h.Shape, a.Shape) || h.Major != a.Version ||
			h.BigEndian != (a.Descr[0] == '>') {
			t.Fatalf("%s: header %+v, want %s %v version %d", a.Tag, h, a.Descr, a.Shape, a.Version)
		}
		if !bytes.Equal(data, want) {
			t.Fatalf("%s (%s): data differs from numpy's little-endian bytes", a.Tag, a.Descr)
		}
		for name, arrs := range npzs {
			if !bytes.Equal(arrs["x/"+a.Tag], want) {
				t.Fatalf("%s: x/%s differs from numpy's little-endian bytes", name, a.Tag)
			}
		}
	}
}

// numpyReads makes numpy load the files we wrote and check dtype, shape and
// bytes, and that numpy.save writes the same .npy bytes we did.
const numpyReads = `
import io, json, sys, numpy as np
want = json.load(open('manifest.json'))
npz = {name: np.load(name) for name in ('ours.npz', 'ours_deflate.npz')}
checked = 0
for w in want:
    raw = open(w['tag'] + '.bin', 'rb').read()
    a = np.load(w['tag'] + '.npy')
    assert a.dtype.str == w['descr'], (w, a.dtype.str)
    assert list(a.shape) == w['shape'], (w, a.shape)
    assert a.tobytes() == raw, w
    buf = io.BytesIO()
    np.save(buf, a)
    assert buf.getvalue() == open(w['tag'] + '.npy', 'rb').read(), ('np.save bytes differ', w)
    for name, z in npz.items():
        b = z[w['tag']]
        assert b.dtype.str == w['descr'] and list(b.shape) == w['shape'] and b.tobytes() == raw, (name, w)
    checked += 1
for z in npz.values():
    assert sorted(z.files) == sorted(w['tag'] for w in want), z.files
print(checked)
`

// TestNumpyPeerReads: we write, numpy reads.
func TestNumpyPeerReads(t *testing.T) {
	py := peertest.Python(t, "numpy", "python3-numpy")
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][]int64{{}, {0}, {1}, {5}, {3, 4}, {2, 0, 3}, {2, 3, 1, 2}, {300, 7}}
	var manifest []peerArray
	var store, deflate bytes.Buffer
	zs, zd := NewNPZWriter(&store, Store), NewNPZWriter(&deflate, Deflate)
	for _, d := range dtype.All() {
		descr := d.Info().NumPy
		if descr == "" {
			continue
		}
		for si, shape := range shapes {
			size, _ := dtype.Size(d, shape)
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			if d == dtype.Bool {
				for i := range data {
					data[i] &= 1
				}
			}
			tag := strings.ToLower(d.String()) + "_" + itoa(int64(si))
			if err := WriteFile(filepath.Join(dir, tag+".npy"), d, shape, data); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, tag+".bin"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, z := range []*NPZWriter{zs, zd} {
				w, err := z.Create(tag, d, shape)
				if err != nil {
					t.Fatal(err)
				}
				// Stream in uneven pieces.
				if _, err := io.CopyBuffer(w, bytes.NewReader(data), make([]byte, 7)); err != nil {
					t.Fatal(err)
				}
			}
			manifest = append(manifest, peerArray{Tag: tag, Descr: descr, Shape: shape})
		}
	}
	for name, z := range map[string]*NPZWriter{"ours.npz": zs, "ours_deflate.npz": zd} {
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		b := map[string]*bytes.Buffer{"ours.npz": &store, "ours_deflate.npz": &deflate}[name]
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := json.Marshal(manifest)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), m, 0o644); err != nil {
		t.Fatal(err)
	}
	out := strings.TrimSpace(string(runPython(t, py, dir, numpyReads)))
	if out != itoa(int64(len(manifest))) {
		t.Fatalf("numpy checked %s arrays, want %d", out, len(manifest))
	}
}

func keys(m map[string]dtype.DType) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/internal/peertest"

	"github.com/apr-go/apr/lib/dtype"
)

// peerPy is a minimal SafeTensors reader and writer in Python with NumPy, independent
// of this package: "read FILE" prints every tensor's dtype, shape and values; "write
// FILE" writes a file of its own (tensors in insertion order, Python's json.dumps
// with its default ASCII escaping) and prints what it wrote in the same form; "index"
// prints json.dumps of the index given on stdin as transformers writes it. Values are
// printed as unsigned 64-bit integers: the value itself (two's complement) for integer types, the bits of the value
// converted to float64 for float types, the raw byte for F8 types.
const peerPy = `
import json, struct, sys
import numpy as np
NP = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
      "I8": "i1", "U8": "u1", "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "?", "F8_E4M3": "u1", "F8_E5M2": "u1"}
def values(dt, a):
    if dt == "BF16": a = (a.astype(np.uint32) << 16).view(np.float32)
    if dt in ("F64", "F32", "F16", "BF16"): return [int(v) for v in a.astype(np.float64).view(np.uint64)]
    return [int(v) & (2**64 - 1) for v in a]
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    hdr = json.loads(b[8:8 + n].decode("utf-8"))
    data, out = b[8 + n:], {"__metadata__": hdr.pop("__metadata__", None)}
    for name, t in hdr.items():
        s, e = t["data_offsets"]
        a = np.frombuffer(data[s:e], dtype=NP[t["dtype"]]).reshape(t["shape"])
        out[name] = {"dtype": t["dtype"], "shape": list(a.shape), "values": values(t["dtype"], a.ravel())}
    return out
def write(path):
    ts = {"zeta\"q": ("F32", np.array([[1.5, -0.0], [np.inf, 1e-40]], np.float32)),
          "ünï": ("F16", np.array([0.5, -65504, 6e-08], np.float16)), "b": ("BOOL", np.array([True, False, True])),
          "i64": ("I64", np.array([-(2**63), 2**63 - 1], np.int64)), "u8": ("U8", np.arange(5, dtype=np.uint8).reshape(5, 1)),
          "scalar": ("F64", np.array(3.25)), "empty": ("I32", np.zeros((0, 4), np.int32)), "bf": ("BF16", np.array([0x3fc0, 0xc000], np.uint16))}
    hdr, blobs, off = {"__metadata__": {"by": "numpy peer"}}, [], 0
    for name, (dt, a) in ts.items():
        raw = a.astype(NP[dt]).tobytes()
        hdr[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw); off += len(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    return read(path)
if sys.argv[1] == "index": sys.stdout.write(json.dumps(json.load(sys.stdin), indent=2, sort_keys=True) + "\n")
else: print(json.dumps(read(sys.argv[2]) if sys.argv[1] == "read" else write(sys.argv[2])))
`

type peerTensor struct {
	DType  string   `json:"dtype"`
	Shape  []int64  `json:"shape"`
	Values []uint64 `json:"values"` // two's complement for signed values
}

// peerValue decodes the i-th element of data as peerPy prints it.
func peerValues(t *testing.T, st string, data []byte) []uint64 {
	var out []uint64
	le := binary.LittleEndian
	f := func(v float64) { out = append(out, math.Float64bits(v)) }
	switch st {
	case "F64":
		for i := 0; i+8 <= len(data); i += 8 {
			f(math.Float64frombits(le.Uint64(data[i:])))
		}
	case "F32":
		for i := 0; i+4 <= len(data); i += 4 {
			f(float64(math.Float32frombits(le.Uint32(data[i:]))))
		}
	case "BF16":
		for i := 0; i+2 <= len(data); i += 2 {
			f(float64(math.Float32frombits(uint32(le.Uint16(data[i:])) << 16)))
		}
	case "F16":
		for i := 0; i+2 <= len(data); i += 2 {
			f(half(le.Uint16(data[i:])))
		}
	case "I64", "U64":
		for i := 0; i+8 <= len(data); i += 8 {
			out = append(out, le.Uint64(data[i:]))
		}
	case "I32":
		for i := 0; i+4 <= len(data); i += 4 {
			out = append(out, uint64(int64(int32(le.Uint32(data[i:])))))
		}
	case "U32":
		for i := 0; i+4 <= len(data); i += 4 {
			out = append(out, uint64(le.Uint32(data[i:])))
		}
	case "I16":
		for i := 0; i+2 <= len(data); i += 2 {
			out = append(out, uint64(int64(int16(le.Uint16(data[i:])))))
		}
	case "U16":
		for i := 0; i+2 <= len(data); i += 2 {
			out = append(out, uint64(le.Uint16(data[i:])))
		}
	case "I8":
		for _, c := range data {
			out = append(out, uint64(int64(int8(c))))
		}
	case "U8", "BOOL", "F8_E4M3", "F8_E5M2":
		for _, c := range data {
			out = append(out, uint64(c))
		}
	default:
		t.Fatalf("peer cannot read dtype %s", st)
	}
	return out
}

// half converts IEEE binary16 bits to float64 (exact).
func half(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 31:
		if frac == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1024+frac, exp-25)
}

// peerPython writes the peer script and returns the command that runs it with a
// Python that has NumPy (Debian's python3-numpy; see peertest.Python).
func peerPython(t *testing.T) []string {
	t.Helper()
	py := peertest.Python(t, "numpy", "python3-numpy")
	script := filepath.Join(t.TempDir(), "peer.py")
	if err := os.WriteFile(script, []byte(peerPy), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{py, script}
}

func runPeer(t *testing.T, peer []string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(peer[0], append(peer[1:], args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("peer %v: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}

func peerRead(t *testing.T, peer []string, path string) (map[string]string, map[string]peerTensor) {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(runPeer(t, peer, nil, "read", path), &raw); err != nil {
		t.Fatal(err)
	}
	var meta map[string]string
	if err := json.Unmarshal(raw[MetadataKey], &meta); err != nil {
		t.Fatal(err)
	}
	delete(raw, MetadataKey)
	ts := map[string]peerTensor{}
	for k, v := range raw {
		var pt peerTensor
		if err := json.Unmarshal(v, &pt); err != nil {
			t.Fatal(err)
		}
		ts[k] = pt
	}
	return meta, ts
}

// compareWithPeer checks that what the peer reports equals what our reader sees in path.
func compareWithPeer(t *testing.T, what, path string, meta map[string]string, peer map[string]peerTensor) {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer f.Close()
	h := f.Header()
	if len(h.Tensors) != len(peer) {
		t.Errorf("%s: we see %d tensors, the peer %d", what, len(h.Tensors), len(peer))
	}
	for _, ti := range h.Tensors {
		p, ok := peer[ti.Name]
		if !ok {
			t.Errorf("%s: tensor %q not seen by the peer", what, ti.Name)
			continue
		}
		d, err := f.Data(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		ours := peerValues(t, ti.DTypeName, d)
		if p.DType != ti.DTypeName || fmt.Sprint(p.Shape) != fmt.Sprint(ti.Shape) || fmt.Sprint(p.Values) != fmt.Sprint(ours) {
			t.Errorf("%s: tensor %q\n peer %s %v %v\n ours %s %v %v", what, ti.Name, p.DType, p.Shape, p.Values, ti.DTypeName, ti.Shape, ours)
		}
	}
	if len(meta) != len(h.Metadata) {
		t.Errorf("%s: metadata %v vs %v", what, meta, h.Metadata)
	}
	for _, e := range h.Metadata {
		if meta[e.Key] != e.Value {
			t.Errorf("%s: metadata %q: peer %q, ours %q", what, e.Key, meta[e.Key], e.Value)
		}
	}
}

// TestNumPyPeer: the NumPy peer reads what we write, and we read (and rewrite, for it
// to read again) what it writes.
func TestNumPyPeer(t *testing.T) {
	py := peerPython(t)
	dir := t.TempDir()

	// 1. We write, the peer reads.
	var tensors []Tensor
	i := 0
	for _, st := range []string{"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL", "F8_E4M3", "F8_E5M2"} {
		d, ok := dtype.FromSafeTensors(st)
		if !ok {
			t.Fatalf("lib/dtype lacks %s", st)
		}
		spec := TensorSpec{Name: "t." + strings.ToLower(st), DType: d, Shape: []int64{2, 3}}
		n, _ := SpecSize(spec)
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(i*37 + j*11)
			if st == "BOOL" {
				data[j] &= 1
			}
			if st == "F16" && j%2 == 1 {
				data[j] &= 0x7b // keep the exponent below 31: no NaN
			}
		}
		tensors = append(tensors, Tensor{spec, data})
		i++
	}
	tensors = append(tensors,
		Tensor{TensorSpec{"scalar \"é\"\t", dtype.F32, nil}, []byte{0, 0, 0xc0, 0x3f}},
		Tensor{TensorSpec{"empty", dtype.I64, []int64{0, 5}}, nil})
	ours := filepath.Join(dir, "ours.safetensors")
	var buf bytes.Buffer
	if err := Encode(&buf, Metadata{{"format", "pt"}, {"note", "ünicode \u2028 \x01"}}, tensors); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ours, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	meta, peer := peerRead(t, py, ours)
	compareWithPeer(t, "peer reading our file", ours, meta, peer)

	// 2. The peer writes, we read: file API and stream.
	theirs := filepath.Join(dir, "theirs.safetensors")
	var wrote map[string]json.RawMessage
	if err := json.Unmarshal(runPeer(t, py, nil, "write", theirs), &wrote); err != nil {
		t.Fatal(err)
	}
	meta, peer = peerRead(t, py, theirs)
	compareWithPeer(t, "our reading of the peer's file", theirs, meta, peer)
	b, err := os.ReadFile(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readStream(bytes.NewReader(b)); err != nil {
		t.Errorf("stream read of the peer's file: %v", err)
	}

	// 3. We rewrite the peer's file; the peer reads the same values back.
	h, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var ts []Tensor
	for _, ti := range h.Tensors {
		ts = append(ts, Tensor{ti.Spec(), b[h.DataStart()+ti.Begin : h.DataStart()+ti.End]})
	}
	buf.Reset()
	if err := Encode(&buf, h.Metadata, ts); err != nil {
		t.Fatal(err)
	}
	rewritten := filepath.Join(dir, "rewritten.safetensors")
	if err := os.WriteFile(rewritten, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	meta2, peer2 := peerRead(t, py, rewritten)
	if fmt.Sprint(meta2) != fmt.Sprint(meta) || len(peer2) != len(peer) {
		t.Errorf("rewrite changed the file's contents as the peer sees them")
	}
	for name, p := range peer {
		if fmt.Sprint(peer2[name]) != fmt.Sprint(p) {
			t.Errorf("tensor %q: peer reads %v after our rewrite, %v before", name, peer2[name], p)
		}
	}

	// 4. Our index JSON is byte-identical to Python's json.dumps(indent=2, sort_keys=True).
	ix := &Index{
		Metadata:  []IndexMeta{{"total_size", strconv.Itoa(123456789012)}, {"total_parameters", "42"}},
		WeightMap: []WeightEntry{{"model.embed", "model-00001-of-00002.safetensors"}, {"ünï \"q\" \x7f\u2028😀", "model-00002-of-00002.safetensors"}, {"A", "model-00002-of-00002.safetensors"}},
	}
	ours2 := ix.Marshal()
	if py := runPeer(t, py, ours2, "index"); !bytes.Equal(py, ours2) {
		t.Errorf("index JSON differs from Python's\n ours %q\n py   %q", ours2, py)
	}
}

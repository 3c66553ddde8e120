package onnx

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	pb "github.com/apr-go/apr/lib/onnx/internal/onnxpb"
)

func TestTranspose(t *testing.T) {
	for _, sh := range [][2]int{{1, 1}, {1, 7}, {7, 1}, {3, 5}, {5, 3}, {4, 4}, {6, 10}, {64, 33}} {
		rows, cols := sh[0], sh[1]
		a := make([]float32, rows*cols)
		for i := range a {
			a[i] = float32(i)
		}
		got := transpose(append([]float32(nil), a...), rows, cols)
		for r := range rows {
			for c := range cols {
				if got[c*rows+r] != a[r*cols+c] {
					t.Fatalf("%dx%d: [%d,%d] is %v at the transpose's [%d,%d], want %v", rows, cols, r, c, got[c*rows+r], c, r, a[r*cols+c])
				}
			}
		}
	}
}

// asMatMul rewrites every Gemm (transB 1: weight [out, in]) of an export as MatMul of
// the transposed weight [in, out] and an Add of the bias, as torch writes x @ W + b.
// shared makes every weight one initializer (the first layer's), for a square net.
func asMatMul(t *testing.T, mp *pb.ModelProto, shared bool) {
	t.Helper()
	g := mp.Graph
	inits := map[string]*pb.TensorProto{}
	for _, i := range g.Initializer {
		inits[i.GetName()] = i
	}
	var nodes []*pb.NodeProto
	first := ""
	for _, n := range g.Node {
		if n.GetOpType() != "Gemm" {
			nodes = append(nodes, n)
			continue
		}
		w := inits[n.Input[1]]
		out, in := int(w.Dims[0]), int(w.Dims[1])
		tr := make([]byte, len(w.RawData))
		for o := range out {
			for i := range in {
				copy(tr[4*(i*out+o):], w.RawData[4*(o*in+i):4*(o*in+i)+4])
			}
		}
		name := n.Input[1] + ".t"
		if first == "" || !shared {
			g.Initializer = append(g.Initializer, &pb.TensorProto{Name: proto.String(name), Dims: []int64{int64(in), int64(out)}, DataType: proto.Int32(1), RawData: tr})
			first = name
		}
		if shared {
			name = first
		}
		z := n.Output[0]
		nodes = append(nodes,
			&pb.NodeProto{Name: proto.String(n.GetName() + ".mm"), OpType: proto.String("MatMul"), Input: []string{n.Input[0], name}, Output: []string{z + ".mm"}},
			&pb.NodeProto{Name: proto.String(n.GetName() + ".add"), OpType: proto.String("Add"), Input: []string{z + ".mm", n.Input[2]}, Output: []string{z}})
	}
	g.Node = nodes
}

// MatMul layers (weights [in, out], transposed in place on import) give the network
// the Gemm export gives; a weight two layers share is transposed for each.
func TestImportMatMul(t *testing.T) {
	for _, shared := range []bool{false, true} {
		widths := []int{8, 16, 12, 5}
		if shared {
			widths = []int{6, 6, 6, 6}
		}
		m, err := model.NewNeuralSequential(widths, model.ActReLU, model.ActSoftmax, 9)
		if err != nil {
			t.Fatal(err)
		}
		if shared {
			for i := range m.Layers {
				m.Layers[i].Weight = m.Layers[0].Weight
			}
		}
		mp, err := Build(m, container.Metadata{})
		if err != nil {
			t.Fatal(err)
		}
		asMatMul(t, mp, shared)
		b, err := proto.Marshal(mp)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := Import(b)
		if err != nil {
			t.Fatalf("shared %v: %v", shared, err)
		}
		for i, l := range got.Layers {
			if !same(l.Weight, m.Layers[i].Weight) || !same(l.Bias, m.Layers[i].Bias) {
				t.Fatalf("shared %v: layer %d differs from the network exported", shared, i)
			}
		}
	}
}

// Protobuf bytes for the hostile inputs.
func pbBytes(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

func pbVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// lengthOnly is a length-delimited field's tag and length without its bytes.
func lengthOnly(num protowire.Number, n int) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.BytesType), uint64(n))
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// repeat is n bytes of b over and over.
type repeat struct {
	b   []byte
	off int
	n   int64
}

func (r *repeat) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && r.n > 0 {
		c := copy(p[k:min(len(p), k+int(r.n))], r.b[r.off:])
		k += c
		r.off = (r.off + c) % len(r.b)
		r.n -= int64(c)
	}
	return k, nil
}

// Hostile streams end in an error naming the byte and the field, having allocated
// and read no more than a few MiB whatever they declare.
func TestReadHostile(t *testing.T) {
	// a graph whose initializer "w" [3,4] float declares n bytes of raw data
	rawHead := func(n int) []byte {
		tensor := cat(pbVarint(1, 3), pbVarint(1, 4), pbVarint(2, 1), pbBytes(8, []byte("w")), lengthOnly(9, n))
		graph := cat(lengthOnly(5, len(tensor)+n))
		graph = append(graph, tensor...)
		return cat(pbVarint(1, 8), lengthOnly(7, len(graph)+n), graph)
	}
	emptyNodes := bytes.Repeat([]byte{0x0a, 0}, MaxEntries+1)
	cases := []struct {
		name string
		r    io.Reader
		size int64
		want string
	}{
		{"1200 MiB of zeros", &repeat{b: []byte{0}, n: 1200 << 20}, -1, "byte 0, ModelProto: field number 0"},
		{"[3,4] with 200 MiB of raw data", io.MultiReader(bytes.NewReader(rawHead(200<<20)), &repeat{b: []byte{0}, n: 200 << 20}), -1,
			`initializer "w": 209715200 bytes of raw data for shape [3 4], expected 48 (byte 21, graph.initializer[0].raw_data)`},
		{"the same, sized", io.MultiReader(bytes.NewReader(rawHead(200<<20)), &repeat{b: []byte{0}, n: 200 << 20}), int64(len(rawHead(200<<20))) + 200<<20,
			`209715200 bytes of raw data for shape [3 4], expected 48`},
		{"a graph past the cap", bytes.NewReader(cat(pbVarint(1, 8), lengthOnly(7, MaxSize))), -1, "byte 3, graph: 268435456 bytes, past the cap of 268435456"},
		{"a graph past the file", bytes.NewReader(cat(pbVarint(1, 8), lengthOnly(7, 100))), 4, "byte 3, graph: 100 bytes, but the input has 0 left"},
		{"a node past its graph", bytes.NewReader(cat(pbVarint(1, 8), pbBytes(7, lengthOnly(1, 50)))), -1, "byte 5, graph.node[0]: 50 bytes, but its message has 0 left"},
		{"over the cap in small fields", &repeat{b: pbBytes(6, make([]byte, 1<<20-4)), n: MaxSize + 1<<20}, -1, "more than 268435456 bytes, the cap of an ONNX file"},
		{"over the cap, sized", bytes.NewReader(nil), MaxSize + 1, "268435457 bytes, more than the cap of 268435456"},
		{"entries", bytes.NewReader(cat(pbVarint(1, 8), pbBytes(7, emptyNodes))), -1, "graph.node[262144]: more than 262144 entries"},
		{"metadata", bytes.NewReader(cat(pbVarint(1, 8), pbBytes(14, pbBytes(2, make([]byte, MaxMetadata))))), -1, "metadata_props[0]: metadata_props of more than 1048576 bytes"},
		{"a long name", bytes.NewReader(cat(pbVarint(1, 8), pbBytes(7, pbBytes(1, pbBytes(3, make([]byte, MaxName+1)))))), -1, "graph.node[0].name: a string of 4097 bytes, more than the cap of 4096"},
		{"dims after data", bytes.NewReader(cat(pbBytes(7, pbBytes(5, cat(pbVarint(2, 1), pbBytes(9, make([]byte, 4)), pbVarint(1, 1)))))), -1,
			"graph.initializer[0]: dims after the tensor's data; expected before it"},
		{"too many dims", bytes.NewReader(pbBytes(7, pbBytes(5, bytes.Repeat(pbVarint(1, 1), MaxDims+1)))), -1, "more than 64 dimensions"},
		{"truncated raw data", io.MultiReader(bytes.NewReader(rawHead(48)), bytes.NewReader(make([]byte, 20))), -1,
			"graph.initializer[0].raw_data: the input ends inside this field (truncated)"},
		{"more packed floats than the shape", bytes.NewReader(pbBytes(7, pbBytes(5, cat(pbVarint(1, 2), pbVarint(2, 1), pbBytes(4, make([]byte, 12)))))), -1,
			"graph.initializer[0]: 3 values for shape [2], expected 2"},
		{"fewer floats than the shape", bytes.NewReader(cat(pbVarint(1, 8), pbBytes(7, pbBytes(5, cat(pbVarint(1, 2), pbVarint(2, 1), pbBytes(8, []byte("b")), pbBytes(4, make([]byte, 4))))))), -1,
			`initializer "b": 1 values for shape [2], expected 2`},
		{"a varint of 11 bytes", bytes.NewReader(append([]byte{0x08}, bytes.Repeat([]byte{0xff}, 10)...)), -1, "ir_version: a varint of more than 64 bits"},
		{"a group", bytes.NewReader([]byte{0x7b}), -1, "byte 0, ModelProto: field 15 of wire type 3 (groups and others are not ONNX's)"},
		{"a graph of another wire type", bytes.NewReader(pbVarint(7, 1)), -1, "byte 0, graph: wire type 0, expected 2"},
		// not hostile, but costly when each value cost allocations (20 s for 250 MB)
		{"a million unpacked floats", bytes.NewReader(cat(pbVarint(1, 8), pbBytes(7, pbBytes(5, cat(pbVarint(1, 1<<20), pbVarint(2, 1),
			bytes.Repeat([]byte{0x25, 0, 0, 0x80, 0x3f}, 1<<20)))))), -1, "imports no default operator set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cr := &counter{r: c.r}
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			_, _, err := Read(cr, c.size)
			runtime.ReadMemStats(&ms1)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			limit := uint64(8 << 20)
			if c.name == "entries" {
				limit = 64 << 20 // the entries themselves, MaxEntries of them
			}
			if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > limit {
				t.Errorf("allocated %d bytes", alloc)
			}
			if c.name != "over the cap in small fields" && c.name != "a million unpacked floats" && cr.n > 1<<20 {
				t.Errorf("read %d bytes before the error", cr.n)
			}
		})
	}
}

// A stream and the same bytes in memory read alike, and the provenance's hash is
// the input's.
func TestReadStream(t *testing.T) {
	b, err := Marshal(fixtures(t)["mlp-softmax"], testMeta)
	if err != nil {
		t.Fatal(err)
	}
	m1, md1, err := Import(b)
	if err != nil {
		t.Fatal(err)
	}
	m2, md2, err := Read(io.MultiReader(bytes.NewReader(b)), -1)
	if err != nil {
		t.Fatal(err)
	}
	if !same(m1.Layers[0].Weight, m2.Layers[0].Weight) || fmt.Sprint(md1) != fmt.Sprint(md2) {
		t.Fatal("the stream read otherwise")
	}
	if _, _, err := Read(bytes.NewReader(append(b, 0x08, 0x01)), int64(len(b))); err == nil || !strings.Contains(err.Error(), "longer than its size") {
		t.Fatalf("bytes beyond the size given: %v", err)
	}
}

// A weight of shape [2^30, 0] holds no data: it is refused by its shape, before a
// bias of 2^30 units is made for it.
func TestEmptyWeightShape(t *testing.T) {
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	err := edit(t, fixtures(t)["mlp-regress"], func(mp *pb.ModelProto) {
		w := mp.Graph.Initializer[0]
		w.Dims, w.RawData = []int64{1 << 30, 0}, []byte{}
	})
	runtime.ReadMemStats(&ms1)
	if err == nil || !strings.Contains(err.Error(), `weight initializer "layers.0.weight" has shape [1073741824 0], expected 2 dimensions in [1,16777216]`) {
		t.Fatalf("error %v", err)
	}
	if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > 8<<20 {
		t.Errorf("allocated %d bytes", alloc)
	}
}

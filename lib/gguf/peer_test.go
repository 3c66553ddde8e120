package gguf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/internal/peertest"

	"github.com/apr-go/apr/lib/dtype"
)

// The peer's view of one file, as testdata/gguf/peer/dump.mjs prints it.
type peerFile struct {
	// trimmed: the peer returns strings with surrounding white space removed
	// (gguf-parser-go does), so ours are compared trimmed too.
	trimmed          bool
	Path             string
	Version          uint32
	TensorDataOffset string
	KVs              []struct {
		Key     string
		Type    uint32
		SubType *uint32
		Value   any
	}
	Tensors []struct {
		Name   string
		NDims  uint32 `json:"n_dims"`
		Shape  []string
		Dtype  uint32
		Offset string
	}
}

// TestPeerHuggingFaceGGUF has npm's @huggingface/gguf (pinned in
// testdata/gguf/peer/package.json) parse every file this package writes in the tests
// (each fixture written back, and synthetic files with every value type and every
// ggml type) and checks that it sees the same keys, value types, values, tensor infos
// and data offset. It skips without node or without `npm ci` in testdata/gguf/peer.
func TestPeerHuggingFaceGGUF(t *testing.T) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("peer test: no subprocesses on " + runtime.GOOS)
	}
	peerDir, err := filepath.Abs(filepath.Join(testdataDir, "peer"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(peerDir, "node_modules", "@huggingface", "gguf")); err != nil {
		peertest.Missing(t, "peer test skipped: %s/node_modules missing (run `npm ci` there)", peerDir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		peertest.Missing(t, "peer test skipped: node not found in PATH")
	}
	paths, headers := writePeerFiles(t)
	cmd := exec.Command(node, append([]string{filepath.Join(peerDir, "dump.mjs")}, paths...)...)
	cmd.Dir = peerDir
	checkPeer(t, "@huggingface/gguf", cmd, false, paths, headers)
}

// TestPeerGoGGUFParser does the same with the Go module
// github.com/gpustack/gguf-parser-go, a test-only peer kept out of apr's go.mod:
// testdata/gguf/goparser is a module of its own, run with `go run` (its dependencies
// come through the module proxy). It skips with -short (the first build takes a
// while) and fails in CI (APR_REQUIRE_PEERS) when the go command is missing.
func TestPeerGoGGUFParser(t *testing.T) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("peer test: no subprocesses on " + runtime.GOOS)
	}
	if testing.Short() {
		t.Skip("peer test: builds gguf-parser-go (skipped with -short)")
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		if goCmd, err = exec.LookPath("go"); err != nil {
			peertest.Missing(t, "peer test skipped: no go command")
		}
	}
	peerDir, err := filepath.Abs(filepath.Join(testdataDir, "goparser"))
	if err != nil {
		t.Fatal(err)
	}
	paths, headers := writePeerFiles(t)
	cmd := exec.Command(goCmd, append([]string{"run", "."}, paths...)...)
	cmd.Dir = peerDir
	// The peer's own module and build settings, not those of this test run.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOOS=", "GOARCH=", "GOEXPERIMENT=")
	// gguf-parser-go trims white space around every string it reads (bytes.TrimSpace).
	checkPeer(t, "gguf-parser-go", cmd, true, paths, headers)
}

// writePeerFiles writes the files the peers parse: every fixture read and written
// back, and synthetic files (peerSyntheticHeaders).
func writePeerFiles(t *testing.T) ([]string, map[string]*Header) {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	headers := map[string]*Header{}
	save := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := ReadHeader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		headers[p] = h
	}
	for _, fx := range fixtures {
		f := openFixture(t, fx.name)
		save(fx.name, writeFromFile(t, f))
	}
	for name, h := range peerSyntheticHeaders() {
		var out bytes.Buffer
		w, err := NewWriter(&out, h)
		if err != nil {
			t.Fatal(err)
		}
		for i := range h.Tensors {
			n, _ := h.Tensors[i].Size()
			if err := w.WriteTensor(bytes.Repeat([]byte{byte(i + 1)}, int(n))); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		save(name, out.Bytes())
	}
	return paths, headers
}

// checkPeer runs a peer's dump command and wants its view of every file to agree
// with ours; it also checks that the comparison catches a changed value, type or dim.
func checkPeer(t *testing.T, peer string, cmd *exec.Cmd, trimmed bool, paths []string, headers map[string]*Header) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", peer, err, stderr.Bytes())
	}
	var views []peerFile
	if err := json.Unmarshal(out, &views); err != nil {
		t.Fatalf("%s output: %v", peer, err)
	}
	if len(views) != len(paths) {
		t.Fatalf("%s parsed %d files of %d", peer, len(views), len(paths))
	}
	for i := range views {
		views[i].trimmed = trimmed
	}
	for _, v := range views {
		h := headers[v.Path]
		if h == nil {
			t.Fatalf("%s reports unknown path %s", peer, v.Path)
		}
		if err := comparePeer(h, &v); err != nil {
			t.Errorf("%s: %s disagrees: %v", filepath.Base(v.Path), peer, err)
		}
	}
	t.Logf("%s agrees on %d files", peer, len(views))

	// The comparison is not vacuous: a changed value, type or dim is caught.
	v := &views[0]
	for name, edit := range map[string]func(h *Header){
		"value": func(h *Header) { h.KVs[len(h.KVs)-1].Value = Uint32(12345) },
		"type":  func(h *Header) { h.KVs[0].Value = Array([]string{"x"}) },
		"dims":  func(h *Header) { h.Tensors[0].Dims = append([]int64{1}, h.Tensors[0].Dims...) },
	} {
		h := *headers[v.Path]
		h.KVs = append([]KV(nil), h.KVs...)
		h.Tensors = append([]TensorInfo(nil), h.Tensors...)
		edit(&h)
		if comparePeer(&h, v) == nil {
			t.Errorf("comparePeer misses a changed %s", name)
		}
	}
}

func comparePeer(h *Header, v *peerFile) error {
	if v.Version != h.Version {
		return fmt.Errorf("version %d, ours %d", v.Version, h.Version)
	}
	if v.TensorDataOffset != strconv.FormatInt(h.DataOffset, 10) {
		return fmt.Errorf("data offset %s, ours %d", v.TensorDataOffset, h.DataOffset)
	}
	if len(v.KVs) != len(h.KVs) {
		return fmt.Errorf("%d KVs, ours %d", len(v.KVs), len(h.KVs))
	}
	for i, kv := range v.KVs {
		ours := h.KVs[i]
		if kv.Key != ours.Key || kv.Type != uint32(ours.Value.Type()) {
			return fmt.Errorf("KV %d: %q type %d, ours %q type %d", i, kv.Key, kv.Type, ours.Key, ours.Value.Type())
		}
		if ours.Value.Type() == TypeArray && (kv.SubType == nil || *kv.SubType != uint32(ours.Value.ElemType())) {
			return fmt.Errorf("KV %q: element type %v, ours %d", kv.Key, kv.SubType, ours.Value.ElemType())
		}
		if err := comparePeerValue(ours.Value, kv.Value, v.trimmed); err != nil {
			return fmt.Errorf("KV %q: %v", kv.Key, err)
		}
	}
	if len(v.Tensors) != len(h.Tensors) {
		return fmt.Errorf("%d tensors, ours %d", len(v.Tensors), len(h.Tensors))
	}
	for i, pt := range v.Tensors {
		ours := &h.Tensors[i]
		ok := pt.Name == ours.Name && pt.NDims == uint32(len(ours.Dims)) && len(pt.Shape) == len(ours.Dims) &&
			pt.Dtype == uint32(ours.Type) && pt.Offset == strconv.FormatInt(ours.Offset, 10)
		for j := 0; ok && j < len(ours.Dims); j++ {
			ok = pt.Shape[j] == strconv.FormatInt(ours.Dims[j], 10)
		}
		if !ok {
			return fmt.Errorf("tensor %d: %+v, ours %+v", i, pt, *ours)
		}
	}
	return nil
}

func comparePeerValue(v Value, p any, trimmed bool) error {
	switch v.Type() {
	case TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeInt32:
		m, _ := p.(map[string]any)
		if want := v.Text(0); m == nil || m["int"] != want {
			return fmt.Errorf("peer %v, ours %s", p, want)
		}
	case TypeUint64, TypeInt64, TypeString:
		s, _ := v.AsString()
		if trimmed {
			s = strings.TrimSpace(s)
		}
		if v.Type() == TypeString && p != s {
			return fmt.Errorf("peer %q, ours %q", p, s)
		}
		if v.Type() != TypeString && p != v.Text(0) {
			return fmt.Errorf("peer %v, ours %s", p, v.Text(0))
		}
	case TypeFloat32, TypeFloat64:
		f, _ := v.AsFloat64()
		m, _ := p.(map[string]any)
		if want := strconv.FormatUint(math.Float64bits(f), 16); m == nil || m["bits"] != want {
			return fmt.Errorf("peer %v, ours bits %s (%s)", p, want, v)
		}
	case TypeBool:
		if p != v.Text(0) {
			return fmt.Errorf("peer %v, ours %s", p, v)
		}
	case TypeArray:
		a, ok := p.([]any)
		if !ok || len(a) != v.Len() {
			return fmt.Errorf("peer array %v, ours %s", p, v)
		}
		for i := range a {
			if err := comparePeerValue(v.Index(i), a[i], trimmed); err != nil {
				return fmt.Errorf("element %d: %v", i, err)
			}
		}
	default:
		return fmt.Errorf("unexpected type %s", v.TypeName())
	}
	return nil
}

// peerSyntheticHeaders are files beyond the fixtures for the peer to read: every value
// type (extremes, empty arrays, valid UTF-8), every ggml type, alignment 256, version 2.
func peerSyntheticHeaders() map[string]*Header {
	vals := &Header{KVs: []KV{
		{"general.architecture", String("peer")},
		{"v.u8", Uint8(255)}, {"v.i8", Int8(-128)}, {"v.u16", Uint16(65535)}, {"v.i16", Int16(-32768)},
		{"v.u32", Uint32(math.MaxUint32)}, {"v.i32", Int32(math.MinInt32)},
		{"v.u64", Uint64(math.MaxUint64)}, {"v.i64", Int64(math.MinInt64)},
		{"v.f32", Float32(-0.0)}, {"v.f32.neg0", Float32(float32(math.Copysign(0, -1)))},
		{"v.f32.sub", Float32(math.Float32frombits(1))}, {"v.f32.inf", Float32(float32(math.Inf(1)))},
		{"v.f64", Float64(math.Pi)}, {"v.f64.max", Float64(math.MaxFloat64)}, {"v.f64.int", Float64(1e21)},
		{"v.bool", Bool(false)}, {"v.str", String("ünïcödé 🦙 \"\\\n")}, {"v.str.empty", String("")},
		{"a.u8", Array([]uint8{0, 255})}, {"a.i8", Array([]int8{-128, 127})},
		{"a.u16", Array([]uint16{0, 65535})}, {"a.i16", Array([]int16{-32768, 32767})},
		{"a.u32", Array([]uint32{0, math.MaxUint32})}, {"a.i32", Array([]int32{math.MinInt32, math.MaxInt32})},
		{"a.u64", Array([]uint64{0, math.MaxUint64})}, {"a.i64", Array([]int64{math.MinInt64, math.MaxInt64})},
		{"a.f32", Array([]float32{1.5, -2.25, float32(math.Inf(-1))})}, {"a.f64", Array([]float64{0.1, -1e-300})},
		{"a.bool", Array([]bool{true, false})}, {"a.str", Array([]string{"", "x", "日本語"})},
		{"a.empty.u8", Array([]uint8{})}, {"a.empty.f64", Array([]float64{})}, {"a.empty.str", Array([]string{})},
		{"ключ.юникод", Uint32(7)},
	}, Tensors: []TensorInfo{{Name: "w", Dims: []int64{3, 1, 1, 2}, Type: 0}}}

	types := &Header{Version: 2, KVs: []KV{{"general.architecture", String("types")}, {AlignmentKey, Uint32(256)}}}
	for _, d := range dtype.All() {
		if tt, ok := TensorTypeOf(d); ok {
			types.Tensors = append(types.Tensors, TensorInfo{Name: "t." + d.String(), Dims: []int64{int64(d.Info().BlockElems), 2}, Type: tt})
		}
	}
	hs := map[string]*Header{"values.gguf": vals, "types.v2.gguf": types, "layout.gguf": validHeader()}
	for _, h := range hs {
		if err := h.Layout(); err != nil {
			panic(err)
		}
	}
	return hs
}

package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

type tensor struct {
	info container.TensorInfo
	data []byte
}

func sample() (container.Header, []tensor) {
	h := container.Header{Type: modeltype.LinearRegression, Metadata: container.Metadata{
		Name: "m", CreatedAt: "2026-01-01T00:00:00Z", Metrics: map[string]any{"r2": 0.5},
	}}
	ts := []tensor{
		{container.TensorInfo{Name: "coefficients", DType: dtype.F32, Shape: []int64{2}}, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}},
		{container.TensorInfo{Name: "intercept", DType: dtype.F32, Shape: []int64{1}}, []byte{0, 0, 0x40, 0x40}},
	}
	return h, ts
}

func digestOf(t *testing.T, h container.Header, ts []tensor) [32]byte {
	t.Helper()
	b, err := New(h.Type, &h.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range ts {
		if err := b.AddTensor(tt.info, tt.data); err != nil {
			t.Fatal(err)
		}
	}
	d, err := b.Sum()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestKnownAnswer spells out the manifest bytes of a small model by hand, so the
// encoding documented in the package comment is pinned.
func TestKnownAnswer(t *testing.T) {
	h, ts := sample()
	meta, err := h.Metadata.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var m bytes.Buffer
	m.WriteString("apr-manifest-v1\x00")
	m.Write([]byte{0x00, 0x01}) // LinearRegression
	m.Write([]byte{0, 0, 0, 0, 0, 0, 0, byte(len(meta))})
	m.Write(meta)
	c0 := sha256.Sum256(ts[0].data)
	m.Write([]byte{0x01, 0x00, 12})
	m.WriteString("coefficients")
	m.Write([]byte{0x00, 0x02, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 8})
	m.Write(c0[:])
	c1 := sha256.Sum256(ts[1].data)
	m.Write([]byte{0x01, 0x00, 9})
	m.WriteString("intercept")
	m.Write([]byte{0x00, 0x02, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4})
	m.Write(c1[:])
	m.Write([]byte{0x00, 0, 0, 0, 0, 0, 0, 0, 2})
	want := sha256.Sum256(m.Bytes())
	if got := digestOf(t, h, ts); got != want {
		t.Fatalf("digest %x, want %x", got, want)
	}
}

// TestEncodingInvariance: the digest of a file is the digest of its content,
// whatever codec, shuffle or chunk size wrote it; FromReader and Builder agree.
func TestEncodingInvariance(t *testing.T) {
	h, ts := sample()
	// A bigger tensor so that chunks and codecs matter.
	big := make([]byte, 40000)
	for i := range big {
		big[i] = byte(i * 7 % 251)
	}
	ts = append(ts, tensor{container.TensorInfo{Name: "w", DType: dtype.F32, Shape: []int64{100, 100}}, big})
	want := digestOf(t, h, ts)
	for _, opts := range [][]container.Option{
		nil,
		{container.WithCompression(container.CompressZstd)},
		{container.WithCompression(container.CompressZstdMax), container.WithShuffle(true), container.WithChunkSize(4096)},
		{container.WithCompression(container.CompressLZ4), container.WithShuffle(true)},
	} {
		var buf bytes.Buffer
		w, err := container.NewWriter(&buf, h, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range ts {
			if err := w.WriteTensorBytes(tt.info, tt.data); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		res, err := FromReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if res.Digest != want || len(res.Entries) != 3 {
			t.Errorf("options %d: digest %x, want %x", len(opts), res.Digest, want)
		}
	}
}

// TestEveryChangeChangesDigest: metadata, type, a tensor byte, name, dtype, shape,
// order, a missing tensor: each gives another digest.
func TestEveryChangeChangesDigest(t *testing.T) {
	h, ts := sample()
	base := digestOf(t, h, ts)
	clone := func() (container.Header, []tensor) {
		h2, ts2 := sample()
		return h2, ts2
	}
	cases := map[string]func(*container.Header, *[]tensor){
		"type":        func(h *container.Header, _ *[]tensor) { h.Type = modeltype.Custom },
		"name":        func(h *container.Header, _ *[]tensor) { h.Metadata.Name = "n" },
		"metric":      func(h *container.Header, _ *[]tensor) { h.Metadata.Metrics["r2"] = 0.6 },
		"extra key":   func(h *container.Header, _ *[]tensor) { h.Metadata.Extra = map[string]any{"x": true} },
		"byte":        func(_ *container.Header, ts *[]tensor) { (*ts)[1].data = []byte{0, 0, 0x40, 0x41} },
		"tensor name": func(_ *container.Header, ts *[]tensor) { (*ts)[1].info.Name = "intercepT" },
		"dtype":       func(_ *container.Header, ts *[]tensor) { (*ts)[1].info.DType = dtype.I32 },
		"shape":       func(_ *container.Header, ts *[]tensor) { (*ts)[0].info.Shape = []int64{1, 2} },
		"order":       func(_ *container.Header, ts *[]tensor) { (*ts)[0], (*ts)[1] = (*ts)[1], (*ts)[0] },
		"dropped":     func(_ *container.Header, ts *[]tensor) { *ts = (*ts)[:1] },
	}
	seen := map[[32]byte]string{base: "base"}
	for name, edit := range cases {
		h2, ts2 := clone()
		edit(&h2, &ts2)
		d := digestOf(t, h2, ts2)
		if prev, ok := seen[d]; ok {
			t.Errorf("%s: same digest as %s", name, prev)
		}
		seen[d] = name
	}
}

func TestBuilderMisuse(t *testing.T) {
	h, ts := sample()
	b, err := New(h.Type, &h.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	th, err := b.Tensor(ts[0].info)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Tensor(ts[1].info); !errors.Is(err, ErrManifest) {
		t.Fatalf("second open tensor: %v", err)
	}
	th.Write(ts[0].data[:3])
	if err := th.Close(); !errors.Is(err, ErrManifest) {
		t.Fatalf("short tensor: %v", err)
	}
	if _, err := b.Sum(); !errors.Is(err, ErrManifest) {
		t.Fatalf("Sum after failure: %v", err)
	}
	b2, _ := New(h.Type, nil)
	if _, err := b2.Tensor(container.TensorInfo{Name: "", DType: dtype.F32}); !errors.Is(err, ErrManifest) {
		t.Fatalf("empty name: %v", err)
	}
	b3, _ := New(h.Type, nil)
	d1, err1 := b3.Sum()
	d2, err2 := b3.Sum()
	if err1 != nil || err2 != nil || d1 != d2 || hex.EncodeToString(d1[:]) == "" {
		t.Fatalf("Sum twice: %x %v, %x %v", d1, err1, d2, err2)
	}
	if _, err := b3.Tensor(ts[0].info); !errors.Is(err, ErrManifest) {
		t.Fatalf("tensor after Sum: %v", err)
	}
}

func TestFromReaderRejectsDamage(t *testing.T) {
	h, ts := sample()
	var buf bytes.Buffer
	w, _ := container.NewWriter(&buf, h)
	for _, tt := range ts {
		w.WriteTensorBytes(tt.info, tt.data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	for _, off := range []int{10, 70, len(b) / 2, len(b) - 10} {
		bad := bytes.Clone(b)
		bad[off] ^= 0x40
		if _, err := FromReader(bytes.NewReader(bad)); err == nil {
			t.Errorf("flipped byte at %d: no error", off)
		}
	}
}

// chunkyReader returns at most n bytes per Read, then err after the data.
type chunkyReader struct {
	data []byte
	n    int
	err  error
}

func (r *chunkyReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[k:]
	return k, nil
}

// TestReadFromMatchesWrite checks that the read-ahead path hashes exactly what Write
// would, at sizes around its buffer size, for readers that return small pieces, and
// across tensors of one Builder (which reuse its buffers).
func TestReadFromMatchesWrite(t *testing.T) {
	sizes := []int{0, 1, 4, hashBufSize - 4, hashBufSize, hashBufSize + 4, 3 * hashBufSize, hashBuffers*hashBufSize + 8, 9*hashBufSize + 12}
	var infos []container.TensorInfo
	var datas [][]byte
	for i, n := range sizes {
		d := make([]byte, n)
		for j := range d {
			d[j] = byte(j*7 + i)
		}
		infos = append(infos, container.TensorInfo{Name: fmt.Sprintf("t%d", i), DType: dtype.U8, Shape: []int64{int64(n)}})
		datas = append(datas, d)
	}
	want, err := New(modeltype.Custom, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range infos {
		if err := want.AddTensor(infos[i], datas[i]); err != nil {
			t.Fatal(err)
		}
	}
	wd, _ := want.Sum()
	for _, piece := range []int{1 << 30, 1000, 65536} {
		b, _ := New(modeltype.Custom, nil)
		for i := range infos {
			th, err := b.Tensor(infos[i])
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(th, &chunkyReader{data: datas[i], n: piece})
			if err != nil || n != int64(len(datas[i])) {
				t.Fatalf("piece %d, tensor %d: copied %d of %d bytes, %v", piece, i, n, len(datas[i]), err)
			}
			if err := th.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := b.Sum(); got != wd {
			t.Errorf("piece %d: digest %x, want %x", piece, got, wd)
		}
	}
}

// TestReadFromError checks that a read error is returned after the bytes before it
// were counted, and that Close then reports the short tensor.
func TestReadFromError(t *testing.T) {
	boom := errors.New("boom")
	for _, n := range []int{10, 5 * hashBufSize} {
		b, _ := New(modeltype.Custom, nil)
		th, err := b.Tensor(container.TensorInfo{Name: "x", DType: dtype.U8, Shape: []int64{int64(n) + 1}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := th.ReadFrom(&chunkyReader{data: make([]byte, n), n: 4096, err: boom})
		if !errors.Is(err, boom) || got != int64(n) {
			t.Fatalf("ReadFrom = %d, %v; want %d, boom", got, err, n)
		}
		if err := th.Close(); !errors.Is(err, ErrManifest) {
			t.Fatalf("Close after a short read = %v, want ErrManifest", err)
		}
	}
}

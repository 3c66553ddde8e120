package signed

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/manifest"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/sign"
	"github.com/apr-go/apr/lib/stream"
)

func newKey(t *testing.T) *sign.PrivateKey {
	t.Helper()
	k, err := sign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func signed(t *testing.T, in []byte, k *sign.PrivateKey, opts ...Option) []byte {
	t.Helper()
	var out bytes.Buffer
	if _, err := SignStream(&out, bytes.NewReader(in), k, opts...); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func verify(in []byte, p Policy) (*Verification, error) { return Verify(bytes.NewReader(in), p) }

func mustInspect(t *testing.T, b []byte) *container.Info {
	t.Helper()
	info, err := container.InspectStream(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// withBlocks rewrites a file with other blocks (as an attacker could).
func withBlocks(t *testing.T, in []byte, edit func([]container.Block) []container.Block) []byte {
	t.Helper()
	st, err := stream.Open(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	h := st.Header()
	h.Flags |= container.FlagSigned | container.FlagLicensed
	var out bytes.Buffer
	w, err := container.NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Copy(w, st); err != nil {
		t.Fatal(err)
	}
	for _, b := range edit(st.Blocks()) {
		if err := w.AddBlock(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestSignStreamLarge: a tensor bigger than the splice's hold-back buffer, so bytes
// flow through while the tail is held.
func TestSignStreamLarge(t *testing.T) {
	lowerHold(t)
	n := 3 * spliceHold // elements of 4 bytes: 12x the hold-back
	data := make([]byte, 4*n)
	for i := range data {
		data[i] = byte(i * 31 / 7)
	}
	h := container.Header{Type: modeltype.Custom}
	var in bytes.Buffer
	w, _ := container.NewWriter(&in, h, container.WithCompression(container.CompressLZ4))
	if err := w.WriteTensorBytes(container.TensorInfo{Name: "w", DType: dtype.F32, Shape: []int64{int64(n)}}, data); err != nil {
		t.Fatal(err)
	}
	w.WriteTensorBytes(container.TensorInfo{Name: "b", DType: dtype.F32, Shape: []int64{1}}, []byte{1, 2, 3, 4})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	k := newKey(t)
	out := signed(t, in.Bytes(), k)
	res, err := manifest.FromReader(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify(out, Policy{Signers: []*sign.PublicKey{k.Public()}}); err != nil || len(res.Entries) != 2 {
		t.Fatal(err)
	}
}

// lowerHold shrinks the splice's hold-back buffer for a test.
func lowerHold(t *testing.T) {
	old := spliceHold
	spliceHold = 4096
	t.Cleanup(func() { spliceHold = old })
}

// TestSignStreamBlocksBeyondHold: a blocks section larger than the hold-back
// buffer cannot be replaced in a stream once bytes have flowed: a clear error.
// One that fits works, however big the tensors.
func TestSignStreamBlocksBeyondHold(t *testing.T) {
	lowerHold(t)
	k := newKey(t)
	h := container.Header{Type: modeltype.Custom}
	var in bytes.Buffer
	w, _ := container.NewWriter(&in, h)
	if err := w.WriteTensorBytes(container.TensorInfo{Name: "w", DType: dtype.U8, Shape: []int64{50000}}, make([]byte, 50000)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, size := range []int{100, 3000, 5000} {
		big := withBlocks(t, in.Bytes(), func([]container.Block) []container.Block {
			return []container.Block{{Kind: container.BlockSignature, Payload: make([]byte, size)}}
		})
		var out bytes.Buffer
		_, err := SignStream(&out, bytes.NewReader(big), k)
		if size < 4000 {
			if err != nil {
				t.Fatalf("blocks of %d bytes: %v", size, err)
			}
			if info := mustInspect(t, out.Bytes()); len(info.Blocks) != 2 || len(info.Blocks[0].Payload) != size {
				t.Fatalf("blocks of %d bytes: %+v", size, info.Blocks)
			}
		} else if err == nil || !strings.Contains(err.Error(), "blocks section") {
			t.Errorf("blocks of %d bytes: %v", size, err)
		}
	}
}

// manyTensors writes count tensors, sizes cycling through sizes, with compression c.
func manyTensors(t *testing.T, count int, sizes []int, c container.Compression) ([]byte, [32]byte) {
	t.Helper()
	h := container.Header{Type: modeltype.Custom, Metadata: container.Metadata{Name: "many"}}
	var buf bytes.Buffer
	w, err := container.NewWriter(&buf, h, container.WithCompression(c), container.WithChunkSize(256<<10))
	if err != nil {
		t.Fatal(err)
	}
	seq, err := manifest.New(h.Type, &h.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	for i := range count {
		n := sizes[i%len(sizes)]
		data := make([]byte, n)
		for j := range data {
			data[j] = byte((j/3)*(i+1) + j%5) // compressible, different per tensor
		}
		info := container.TensorInfo{Name: "t" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), DType: dtype.U8, Shape: []int64{int64(n)}}
		if err := w.WriteTensorBytes(info, data); err != nil {
			t.Fatal(err)
		}
		if err := seq.AddTensor(info, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := seq.Sum()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), d
}

// TestParallelHashingMatchesSequential: signing and verifying, which hash several
// tensors at once, give the digest of the one-tensor-at-a-time manifest for any
// number and size of tensors, and a damaged or truncated tensor anywhere still
// fails signing (leaving an output that no reader accepts) and verifying.
func TestParallelHashingMatchesSequential(t *testing.T) {
	k := newKey(t)
	pol := Policy{Signers: []*sign.PublicKey{k.Public()}}
	sizes := []int{0, 4, 70000, 1<<20 + 3, 1}
	for _, c := range []container.Compression{container.CompressNone, container.CompressLZ4} {
		for _, count := range []int{1, 2, 5, 31} {
			in, want := manyTensors(t, count, sizes, c)
			out := signed(t, in, k)
			v, err := verify(out, pol)
			if err != nil || v.Digest != want || v.Tensors != count {
				t.Fatalf("%v, %d tensors: digest %x (%v), want %x", c, count, v.Digest, err, want)
			}
			if count != 5 {
				continue
			}
			for _, e := range mustInspect(t, in).Tensors {
				if e.StoredSize == 0 {
					continue
				}
				mid := e.DataOffset + e.StoredSize/2
				flipped := bytes.Clone(in)
				flipped[mid] ^= 0x10
				for name, bad := range map[string][]byte{"flipped": flipped, "truncated": in[:mid]} {
					var o bytes.Buffer
					if _, err := SignStream(&o, bytes.NewReader(bad), k); err == nil {
						t.Errorf("%v, %s tensor %q: signed", c, name, e.Name)
					}
					if _, err := container.InspectStream(bytes.NewReader(o.Bytes())); err == nil {
						t.Errorf("%v, %s tensor %q: the failed output reads as a model", c, name, e.Name)
					}
					if _, err := verify(bad, pol); err == nil {
						t.Errorf("%v, %s tensor %q: verified", c, name, e.Name)
					}
				}
			}
		}
	}
}

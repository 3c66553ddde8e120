package container_test

// Sealed files through the container's readers, with lib/sealed's implementation of the
// sealing interfaces (an external test package, so that lib/container itself does not
// depend on lib/seal). lib/sealed/sealed_test.go attacks sealed files with a forging
// writer; here every truncation and every single-bit flip must fail.

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/sealed"
)

type sealedTensor struct {
	info container.TensorInfo
	data []byte
}

func sealedTensors() []sealedTensor {
	w := make([]byte, 4*1500) // two chunks of 4 KiB
	for i := range w {
		w[i] = byte(i * 13 >> 3)
	}
	return []sealedTensor{
		{container.TensorInfo{Name: "w", DType: dtype.F32, Shape: []int64{1500}}, w},
		{container.TensorInfo{Name: "empty", DType: dtype.I32, Shape: []int64{0}}, nil},
		{container.TensorInfo{Name: "mask", DType: dtype.Bool, Shape: []int64{3}}, []byte{1, 0, 1}},
	}
}

func buildSealed(t testing.TB, id *seal.X25519Identity, tensors []sealedTensor, opts ...container.Option) []byte {
	t.Helper()
	s, err := sealed.NewSealer(id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	opts = append([]container.Option{container.WithSealer(s), container.WithChunkSize(container.MinChunk)}, opts...)
	w, err := container.NewWriter(&buf, container.Header{Type: modeltype.Custom, Metadata: container.Metadata{Name: "sealed"}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tensors {
		if err := w.WriteTensorBytes(tt.info, tt.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readSealed reads every tensor of b with both readers; unsealer nil means without key
// (sealed tensors are then skipped, their CRCs checked).
func readSealed(b []byte, u container.Unsealer) (map[string][]byte, error) {
	var opts []container.ReaderOption
	if u != nil {
		opts = append(opts, container.WithUnsealer(u))
	}
	got := map[string][]byte{}
	r, err := container.NewReader(bytes.NewReader(b), append(opts, container.WithReadWorkers(2))...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	for {
		t, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if u == nil {
			continue
		}
		data, err := io.ReadAll(t)
		if err != nil {
			return nil, err
		}
		got[t.Name] = data
	}
	f, err := container.NewFile(bytes.NewReader(b), int64(len(b)), opts...)
	if err != nil {
		return nil, err
	}
	if u != nil {
		for _, e := range f.Entries() {
			data, err := f.TensorBytes(e.Name)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(data, got[e.Name]) {
				return nil, errors.New("readers disagree on " + e.Name)
			}
		}
	}
	return got, f.Verify()
}

func typedOrDecrypt(err error) bool {
	return errors.Is(err, container.ErrFormat) || errors.Is(err, container.ErrChecksum) ||
		errors.Is(err, container.ErrVersion) || errors.Is(err, seal.ErrDecryptionFailed)
}

func TestSealedRoundTrip(t *testing.T) {
	id := newID(t)
	for name, opts := range map[string][]container.Option{
		"none":        nil,
		"zstd":        {container.WithCompression(container.CompressZstd)},
		"lz4-shuffle": {container.WithCompression(container.CompressLZ4), container.WithShuffle(true), container.WithWorkers(3)},
	} {
		t.Run(name, func(t *testing.T) {
			b := buildSealed(t, id, sealedTensors(), opts...)
			if len(b)%container.Align != 0 {
				t.Fatal("not aligned")
			}
			got, err := readSealed(b, sealed.NewUnsealer(id))
			if err != nil {
				t.Fatal(err)
			}
			for _, tt := range sealedTensors() {
				if !bytes.Equal(got[tt.info.Name], tt.data) {
					t.Errorf("tensor %q differs", tt.info.Name)
				}
			}
			if _, err := readSealed(b, nil); err != nil {
				t.Fatalf("without key, a sealed file must still open and verify: %v", err)
			}
			f, _ := container.NewFile(bytes.NewReader(b), int64(len(b)))
			for _, e := range f.Entries() {
				if !e.Encrypted || !e.Chunked() {
					t.Errorf("tensor %q stored unsealed", e.Name)
				}
				if _, err := f.TensorBytes(e.Name); !errors.Is(err, container.ErrEncrypted) {
					t.Errorf("tensor %q without key: got %v", e.Name, err)
				}
			}
			if bytes.Contains(b, sealedTensors()[0].data[:64]) {
				t.Error("plaintext found in the sealed file")
			}
		})
	}
}

func TestSealedWrongKey(t *testing.T) {
	b := buildSealed(t, newID(t), sealedTensors())
	if _, err := readSealed(b, sealed.NewUnsealer(newID(t))); !errors.Is(err, seal.ErrDecryptionFailed) {
		t.Fatalf("got %v, want a decryption failure", err)
	}
}

func TestSealedEveryTruncationFails(t *testing.T) {
	id := newID(t)
	u := sealed.NewUnsealer(id)
	b := buildSealed(t, id, sealedTensors()[1:])
	for n := 0; n < len(b); n++ {
		for _, uu := range []container.Unsealer{u, nil} {
			if _, err := readSealed(b[:n], uu); err == nil || !typedOrDecrypt(err) {
				t.Fatalf("truncated to %d bytes (key %v): got %v", n, uu != nil, err)
			}
		}
	}
}

func TestSealedEveryBitFlipFails(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive")
	}
	id := newID(t)
	u := sealed.NewUnsealer(id)
	b := buildSealed(t, id, sealedTensors()[1:], container.WithCompression(container.CompressLZ4))
	c := make([]byte, len(b))
	for i := 0; i < len(b)*8; i++ {
		copy(c, b)
		c[i/8] ^= 1 << (i % 8)
		for _, uu := range []container.Unsealer{u, nil} {
			if _, err := readSealed(c, uu); err == nil || !typedOrDecrypt(err) {
				t.Fatalf("bit %d flipped (key %v): got %v", i, uu != nil, err)
			}
		}
	}
}

func TestSealedBlocksRules(t *testing.T) {
	id := newID(t)
	s, err := sealed.NewSealer(id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := container.NewWriter(&buf, container.Header{Type: modeltype.Custom, Flags: container.FlagSigned}, container.WithSealer(s))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlock(container.Block{Kind: container.BlockSeal, Payload: make([]byte, container.SealMACSize)}); err == nil {
		t.Error("a caller-made seal MAC block was accepted")
	}
	if err := w.AddBlock(container.Block{Kind: container.BlockSignature, Payload: []byte("sig")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := container.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()), container.WithUnsealer(sealed.NewUnsealer(id)))
	if err != nil {
		t.Fatal(err)
	}
	if bl := f.Blocks(); len(bl) != 1 || bl[0].Kind != container.BlockSignature {
		t.Fatalf("blocks %+v: the seal MAC block must not be listed", bl)
	}
	if _, err := container.NewWriter(io.Discard, container.Header{Type: modeltype.Custom, Flags: container.FlagEncrypted}); err == nil {
		t.Error("the encrypted flag was accepted without a sealer")
	}
}

func newID(t testing.TB) *seal.X25519Identity {
	t.Helper()
	id, err := seal.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// reencodePlain copies every tensor of b, read with u, into a plain file: the Writer
// takes the Reader's decoded chunks directly (Tensor.streamChunks).
func reencodePlain(b []byte, u container.Unsealer) ([]byte, error) {
	var opts []container.ReaderOption
	if u != nil {
		opts = append(opts, container.WithUnsealer(u))
	}
	r, err := container.NewReader(bytes.NewReader(b), append(opts, container.WithReadWorkers(3))...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	h := r.Header()
	var out bytes.Buffer
	w, err := container.NewWriter(&out, container.Header{Type: h.Type, Metadata: *h.Metadata})
	if err != nil {
		return nil, err
	}
	for {
		t, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := w.WriteTensor(t.TensorInfo, t); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Unsealing or decompressing into a plain file through the chunk hand-off must give
// the same bytes as writing the plaintext, and must fail on any damaged chunk.
func TestReencodeChunksToPlain(t *testing.T) {
	id := newID(t)
	tensors := sealedTensors()
	odd := make([]byte, 4*2777) // three chunks, the last one short
	for i := range odd {
		odd[i] = byte(i*7 + i>>9)
	}
	tensors = append(tensors, sealedTensor{container.TensorInfo{Name: "odd", DType: dtype.F32, Shape: []int64{2777}}, odd})
	var want bytes.Buffer
	w, err := container.NewWriter(&want, container.Header{Type: modeltype.Custom, Metadata: container.Metadata{Name: "sealed"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tensors {
		if err := w.WriteTensorBytes(tt.info, tt.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	zstd := []container.Option{container.WithCompression(container.CompressZstd), container.WithChunkSize(container.MinChunk)}
	var compressed bytes.Buffer
	cw, err := container.NewWriter(&compressed, container.Header{Type: modeltype.Custom, Metadata: container.Metadata{Name: "sealed"}}, zstd...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tensors {
		if err := cw.WriteTensorBytes(tt.info, tt.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{
		"sealed":      buildSealed(t, id, tensors),
		"sealed-zstd": buildSealed(t, id, tensors, container.WithCompression(container.CompressZstd)),
		"zstd":        compressed.Bytes(),
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			got, err := reencodePlain(in, sealed.NewUnsealer(id))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatal("output differs from the plaintext written directly")
			}
			// A flipped bit in every 97th byte of the tensor data: each must fail.
			f, err := container.NewFile(bytes.NewReader(in), int64(len(in)))
			if err != nil {
				t.Fatal(err)
			}
			c := make([]byte, len(in))
			for _, e := range f.Entries() {
				for off := e.DataOffset; off < e.DataOffset+e.StoredSize; off += 97 {
					copy(c, in)
					c[off] ^= 0x10
					if _, err := reencodePlain(c, sealed.NewUnsealer(id)); err == nil || !typedOrDecrypt(err) {
						t.Fatalf("byte %d of tensor %q flipped: got %v", off, e.Name, err)
					}
				}
			}
		})
	}
}

// TestSealedTable: a sealed file with a tensor table reads with and without its key,
// and the table, like the index, is readable without the key (it names no more than
// the index does). Every bit flip up to the first record fails.
func TestSealedTable(t *testing.T) {
	id := newID(t)
	s, err := sealed.NewSealer(id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	tensors := sealedTensors()
	var table []container.TensorInfo
	for _, tt := range tensors {
		table = append(table, tt.info)
	}
	var buf bytes.Buffer
	w, err := container.NewWriter(&buf, container.Header{Type: modeltype.Custom, Metadata: container.Metadata{Name: "sealed"}, Table: table},
		container.WithSealer(s), container.WithChunkSize(container.MinChunk))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tensors {
		if err := w.WriteTensorBytes(tt.info, tt.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	got, err := readSealed(b, sealed.NewUnsealer(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tensors {
		if !bytes.Equal(got[tt.info.Name], tt.data) {
			t.Errorf("tensor %q differs", tt.info.Name)
		}
	}
	f, err := container.NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if tb := f.Header().Table; len(tb) != len(tensors) || tb[0].Name != "w" {
		t.Fatalf("table without the key: %v", tb)
	}
	if testing.Short() {
		return
	}
	u := sealed.NewUnsealer(id)
	c := make([]byte, len(b))
	// The sections before the first record (the rest is TestSealedEveryBitFlipFails's).
	for i := 0; i < int(f.Entries()[0].RecordOffset)*8; i++ {
		copy(c, b)
		c[i/8] ^= 1 << (i % 8)
		if _, err := readSealed(c, u); err == nil || !typedOrDecrypt(err) {
			t.Fatalf("bit %d flipped: got %v", i, err)
		}
	}
}

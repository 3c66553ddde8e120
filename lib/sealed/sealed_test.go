package sealed

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/stream"
)

func newIdentity(t testing.TB) *seal.X25519Identity {
	t.Helper()
	id, err := seal.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// cheapPassword is a password recipient with small Argon2id parameters, for tests.
func cheapPassword(t testing.TB, pw string) seal.Recipient {
	t.Helper()
	r, err := seal.NewPasswordRecipient([]byte(pw), seal.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recording keeps what a genuine sealer produced.
type recording struct {
	mu      sync.Mutex
	section []byte
	mac     []byte
	chunks  map[[2]uint64][]byte // (tensor, chunk) -> ciphertext
	finals  map[[2]uint64]bool
}

type recSealer struct {
	real container.Sealer
	rec  *recording
}

func (s *recSealer) SectionLen() int { return s.real.SectionLen() }
func (s *recSealer) Begin(h, m []byte) ([]byte, container.TensorSealer, error) {
	sec, ts, err := s.real.Begin(h, m)
	s.rec.section = bytes.Clone(sec)
	return sec, &recTensors{ts, s.rec}, err
}

type recTensors struct {
	real container.TensorSealer
	rec  *recording
}

func (t *recTensors) Tensor(i uint64, record []byte) (container.ChunkSealer, error) {
	cs, err := t.real.Tensor(i, record)
	return &recChunks{cs, i, t.rec}, err
}
func (t *recTensors) MAC(index []byte) ([]byte, error) {
	m, err := t.real.MAC(index)
	t.rec.mac = bytes.Clone(m)
	return m, err
}

type recChunks struct {
	real   container.ChunkSealer
	tensor uint64
	rec    *recording
}

func (c *recChunks) SealChunk(dst []byte, i uint64, pt []byte, final bool) ([]byte, error) {
	out, err := c.real.SealChunk(dst, i, pt, final)
	if err == nil {
		c.rec.mu.Lock()
		c.rec.chunks[[2]uint64{c.tensor, i}] = bytes.Clone(out[len(dst):])
		c.rec.finals[[2]uint64{c.tensor, i}] = final
		c.rec.mu.Unlock()
	}
	return out, err
}

// replay is the attacker: it writes recorded ciphertexts where pick says.
type replay struct {
	rec     *recording
	section []byte
	mac     []byte
	pick    func(tensor, chunk uint64) (uint64, uint64)
	alter   func(tensor, chunk uint64, ct []byte)
}

func (r *replay) SectionLen() int { return len(r.section) }
func (r *replay) Begin(h, m []byte) ([]byte, container.TensorSealer, error) {
	return bytes.Clone(r.section), r, nil
}
func (r *replay) Tensor(i uint64, _ []byte) (container.ChunkSealer, error) {
	return &replayChunks{r, i}, nil
}
func (r *replay) MAC([]byte) ([]byte, error) { return bytes.Clone(r.mac), nil }

type replayChunks struct {
	r      *replay
	tensor uint64
}

func (c *replayChunks) SealChunk(dst []byte, i uint64, pt []byte, _ bool) ([]byte, error) {
	t, j := c.tensor, i
	if c.r.pick != nil {
		t, j = c.r.pick(t, j)
	}
	ct, ok := c.r.rec.chunks[[2]uint64{t, j}]
	if !ok {
		return nil, fmt.Errorf("no recorded chunk %d of tensor %d", j, t)
	}
	ct = bytes.Clone(ct)
	if c.r.alter != nil {
		c.r.alter(c.tensor, i, ct)
	}
	return append(dst, ct...), nil
}

type tensorSpec struct {
	name string
	n    int64 // float32 elements
}

// The genuine file: w has 3 chunks, b 1, e is empty (one empty chunk).
var genuine = []tensorSpec{{"w", 3 * 1024}, {"b", 1024}, {"e", 0}}

func tensorData(name string, n int64) []byte {
	b := make([]byte, 4*n)
	for i := range b {
		b[i] = byte(i*7) ^ name[0]
	}
	return b
}

func writeSealed(t *testing.T, s container.Sealer, name string, flags container.Flags, specs []tensorSpec) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := container.NewWriter(&buf, container.Header{Type: modeltype.Custom, Flags: flags, Metadata: container.Metadata{Name: name}},
		container.WithSealer(s), container.WithChunkSize(container.MinChunk), container.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range specs {
		if err := w.WriteTensorBytes(container.TensorInfo{Name: sp.name, DType: dtype.F32, Shape: []int64{sp.n}}, tensorData(sp.name, sp.n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// openBoth reads b with the identity through the streaming reader and the
// random-access reader, checking the plaintext, and returns both errors.
func openBoth(b []byte, ids ...seal.Identity) (stream, random error) {
	u := container.WithUnsealer(NewUnsealer(ids...))
	stream = func() error {
		r, err := container.NewReader(bytes.NewReader(b), u, container.WithReadWorkers(2))
		if err != nil {
			return err
		}
		defer r.Close()
		for {
			tt, err := r.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			got, err := io.ReadAll(tt)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, tensorData(tt.Name, tt.RawSize/4)) {
				return fmt.Errorf("tensor %q: wrong plaintext released", tt.Name)
			}
		}
	}()
	random = func() error {
		f, err := container.NewFile(bytes.NewReader(b), int64(len(b)), u)
		if err != nil {
			return err
		}
		for _, e := range f.Entries() {
			got, err := f.TensorBytes(e.Name)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, tensorData(e.Name, e.RawSize/4)) {
				return fmt.Errorf("tensor %q: wrong plaintext released", e.Name)
			}
		}
		return f.Verify()
	}()
	return stream, random
}

func TestSealedAttacks(t *testing.T) {
	alice, eve := newIdentity(t), newIdentity(t)
	real, err := NewSealer(alice.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recording{chunks: map[[2]uint64][]byte{}, finals: map[[2]uint64]bool{}}
	orig := writeSealed(t, &recSealer{real, rec}, "genuine", 0, genuine)
	if s, r := openBoth(orig, alice); s != nil || r != nil {
		t.Fatalf("genuine file: %v / %v", s, r)
	}
	if !rec.finals[[2]uint64{0, 2}] || rec.finals[[2]uint64{0, 1}] || !rec.finals[[2]uint64{2, 0}] {
		t.Fatalf("final flags not as expected: %v", rec.finals)
	}
	same := func(t, c uint64) (uint64, uint64) { return t, c }
	// Replaying everything as it was must give a file that opens: the harness is sound.
	if s, r := openBoth(writeSealed(t, &replay{rec: rec, section: rec.section, mac: rec.mac, pick: same}, "genuine", 0, genuine), alice); s != nil || r != nil {
		t.Fatalf("faithful replay: %v / %v", s, r)
	}
	w2 := []tensorSpec{{"w", 2 * 1024}, {"b", 1024}, {"e", 0}}
	w4 := []tensorSpec{{"w", 4 * 1024}, {"b", 1024}, {"e", 0}}
	flipped := bytes.Clone(rec.section)
	flipped[len(flipped)-1] ^= 1 // last byte of the last stanza body
	salted := bytes.Clone(rec.section)
	salted[8] ^= 1 // the stream salt
	badMAC := bytes.Clone(rec.mac)
	badMAC[0] ^= 1
	cases := []struct {
		name    string
		meta    string
		flags   container.Flags
		specs   []tensorSpec
		section []byte
		mac     []byte
		pick    func(t, c uint64) (uint64, uint64)
		alter   func(t, c uint64, ct []byte)
		cause   error // as the streaming reader reports it
	}{
		{name: "stream_no_final (last chunk cut, tensor shortened)", specs: w2, cause: seal.ErrDecryptionFailed},
		{name: "stream_trailing_garbage (a chunk appended)", specs: w4, pick: func(t, c uint64) (uint64, uint64) {
			if t == 0 && c == 3 {
				return 0, 2
			}
			return t, c
		}, cause: seal.ErrDecryptionFailed},
		{name: "stream_two_final_chunks (the final chunk twice)", pick: func(t, c uint64) (uint64, uint64) {
			if t == 0 && c == 1 {
				return 0, 2
			}
			return t, c
		}, cause: seal.ErrAuthentication},
		{name: "chunks reordered", pick: func(t, c uint64) (uint64, uint64) {
			if t == 0 && c < 2 {
				return 0, 1 - c
			}
			return t, c
		}, cause: seal.ErrAuthentication},
		{name: "chunk duplicated", pick: func(t, c uint64) (uint64, uint64) {
			if t == 0 && c == 1 {
				return 0, 0
			}
			return t, c
		}, cause: seal.ErrAuthentication},
		{name: "stream_bad_tag (ciphertext altered)", alter: func(t, c uint64, ct []byte) {
			if t == 1 {
				ct[len(ct)-1] ^= 0x80
			}
		}, cause: seal.ErrAuthentication},
		{name: "empty tensor's chunk replaced", alter: func(t, c uint64, ct []byte) {
			if t == 2 {
				ct[0] ^= 1
			}
		}, cause: seal.ErrAuthentication},
		{name: "tensors swapped", specs: []tensorSpec{{"b", 1024}, {"w", 3 * 1024}, {"e", 0}}, pick: func(t, c uint64) (uint64, uint64) {
			return map[uint64]uint64{0: 1, 1: 0, 2: 2}[t], c
		}, cause: seal.ErrDecryptionFailed},
		{name: "tensor renamed", specs: []tensorSpec{{"W", 3 * 1024}, {"b", 1024}, {"e", 0}}, cause: seal.ErrDecryptionFailed},
		{name: "last tensor dropped (index changed)", specs: genuine[:2], cause: seal.ErrHeaderMAC},
		{name: "tensor added (index changed)", specs: append(append([]tensorSpec(nil), genuine...), tensorSpec{"x", 0}), pick: func(t, c uint64) (uint64, uint64) {
			return min(t, 2), c
		}, cause: seal.ErrDecryptionFailed},
		{name: "seal MAC altered", mac: badMAC, cause: seal.ErrHeaderMAC},
		{name: "metadata changed", meta: "forged", cause: seal.ErrCommitment},
		{name: "header flags changed", flags: container.FlagQuantized, cause: seal.ErrCommitment},
		{name: "stanza corrupted", section: flipped, cause: seal.ErrNoIdentityMatched},
		{name: "stream header (salt) changed", section: salted, cause: seal.ErrCommitment},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &replay{rec: rec, section: rec.section, mac: rec.mac, pick: c.pick, alter: c.alter}
			if c.section != nil {
				r.section = c.section
			}
			if c.mac != nil {
				r.mac = c.mac
			}
			name, specs := "genuine", genuine
			if c.meta != "" {
				name = c.meta
			}
			if c.specs != nil {
				specs = c.specs
			}
			b := writeSealed(t, r, name, c.flags, specs)
			s, rr := openBoth(b, alice)
			if !errors.Is(s, seal.ErrDecryptionFailed) || !errors.Is(s, c.cause) {
				t.Errorf("streaming reader: got %v, want a decryption failure caused by %v", s, c.cause)
			}
			// The random-access reader checks the seal MAC over the index (which holds
			// every tensor's CRC) before any chunk, so it may fail earlier.
			if !errors.Is(rr, seal.ErrDecryptionFailed) {
				t.Errorf("random-access reader: got %v, want a decryption failure", rr)
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		s, r := openBoth(orig, eve, seal.NewPasswordIdentity([]byte("guess")))
		if !errors.Is(s, seal.ErrNoIdentityMatched) || !errors.Is(r, seal.ErrNoIdentityMatched) {
			t.Fatalf("got %v / %v", s, r)
		}
	})
}

func TestSealStreamCarriesBlocks(t *testing.T) {
	// A signed plaintext file: the signature block must travel through seal and unseal.
	var plain bytes.Buffer
	w, err := container.NewWriter(&plain, container.Header{Type: modeltype.Custom, Flags: container.FlagSigned, Metadata: container.Metadata{Name: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensorBytes(container.TensorInfo{Name: "t", DType: dtype.F32, Shape: []int64{3}}, tensorData("t", 3)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlock(container.Block{Kind: container.BlockSignature, Payload: []byte("sig")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := stream.Open(bytes.NewReader(plain.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	id := newIdentity(t)
	var sealed bytes.Buffer
	if err := Seal(&sealed, src, []seal.Recipient{id.Recipient()}); err != nil {
		t.Fatal(err)
	}
	info, err := stream.InspectReader(bytes.NewReader(sealed.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Blocks) != 1 || string(info.Blocks[0].Payload) != "sig" || info.Flags&container.FlagSigned == 0 {
		t.Fatalf("sealed file blocks %+v flags %v", info.Blocks, info.Flags)
	}
	s, err := Open(bytes.NewReader(sealed.Bytes()), id)
	if err != nil {
		t.Fatal(err)
	}
	var back bytes.Buffer
	if err := stream.Reencode(&back, s, nil, true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Bytes(), plain.Bytes()) {
		t.Fatal("unsealing did not give back the signed plaintext file byte for byte")
	}
}

package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
)

// Sizes of the chunked AEAD stream.
const (
	// FileKeySize is the size of a file key (the stream's input key).
	FileKeySize = 32
	// SaltSize is the size of the random per-stream salt.
	SaltSize = 24
	// CommitmentSize is the size of the key commitment.
	CommitmentSize = 32
	// HeaderSize is the size of a stream header: salt || commitment.
	HeaderSize = SaltSize + CommitmentSize
	// TagSize is the AES-GCM tag appended to every chunk.
	TagSize = 16
	// NonceSize is the AES-GCM nonce size.
	NonceSize = 12
	// MaxChunks is the maximum number of chunks in one stream (2^38, as in
	// C2SP chunked-encryption); chunk indexes are 0..MaxChunks-1.
	MaxChunks = uint64(1) << 38
	// MaxChunkSize caps the plaintext size of one chunk (1 GiB), far below
	// AES-GCM's own limit, so that no caller can make GCM panic.
	MaxChunkSize = 1 << 30
)

// streamInfoPrefix starts the HKDF-Expand info string. The layout follows
// C2SP chunked-encryption (prefix || AEAD name || 0x00 || salt || context),
// but the prefix is our own because the construction differs from C2SP's: the
// final chunk is marked by a flag in the nonce instead of by being short, so
// that chunk sizes stay the caller's choice.
const streamInfoPrefix = "github.com/apr-go/apr/seal/chunked-encryption@v1+"

const aeadName = "AEAD_AES_256_GCM"

// finalFlag is XOR-ed into the first byte of the nonce of the final chunk.
// The counter only ever touches the low 38 bits (the last 5 bytes), so the
// flag never collides with a counter value.
const finalFlag = 0x80

// derived holds the per-stream values derived from the file key and salt.
type derived struct {
	aead      cipher.AEAD
	nonceBase [NonceSize]byte
}

// deriveStream computes payload key, nonce base and commitment:
//
//	key(32) || nonce base(12) || commitment(32) = HKDF-Expand-SHA256(
//	    prk  = file key,
//	    info = streamInfoPrefix || "AEAD_AES_256_GCM" || 0x00 || salt || context)
func deriveStream(fileKey, salt, context []byte) (*derived, [CommitmentSize]byte, error) {
	var commitment [CommitmentSize]byte
	if len(fileKey) != FileKeySize {
		return nil, commitment, fmt.Errorf("seal: file key must be %d bytes, got %d", FileKeySize, len(fileKey))
	}
	if len(salt) != SaltSize {
		return nil, commitment, malformed("stream salt must be %d bytes, got %d", SaltSize, len(salt))
	}
	info := make([]byte, 0, len(streamInfoPrefix)+len(aeadName)+1+SaltSize+len(context))
	info = append(info, streamInfoPrefix...)
	info = append(info, aeadName...)
	info = append(info, 0)
	info = append(info, salt...)
	info = append(info, context...)
	out, err := hkdf.Expand(sha256.New, fileKey, string(info), 32+NonceSize+CommitmentSize)
	if err != nil {
		return nil, commitment, fmt.Errorf("seal: hkdf: %w", err)
	}
	block, err := aes.NewCipher(out[:32])
	if err != nil {
		return nil, commitment, fmt.Errorf("seal: aes: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, commitment, fmt.Errorf("seal: gcm: %w", err)
	}
	d := &derived{aead: aead}
	copy(d.nonceBase[:], out[32:32+NonceSize])
	copy(commitment[:], out[32+NonceSize:])
	clear(out)
	return d, commitment, nil
}

// nonce returns nonce base XOR be96(index), with finalFlag XOR-ed into the
// first byte for the final chunk.
func (d *derived) nonce(index uint64, final bool) [NonceSize]byte {
	n := d.nonceBase
	var ctr [8]byte
	binary.BigEndian.PutUint64(ctr[:], index)
	for i := range ctr {
		n[NonceSize-8+i] ^= ctr[i]
	}
	if final {
		n[0] ^= finalFlag
	}
	return n
}

// Encryptor seals the chunks of one stream. It holds no mutable state, so
// SealChunk may be called concurrently for different chunks (to use several
// cores); the caller is responsible for sealing every index 0..n-1 exactly
// once and for marking only the last one final.
type Encryptor struct {
	d      *derived
	header [HeaderSize]byte
}

// NewFileKey returns a new random 32-byte file key.
func NewFileKey() ([]byte, error) {
	k := make([]byte, FileKeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("seal: random file key: %w", err)
	}
	return k, nil
}

// NewEncryptor starts a stream under fileKey with a fresh random salt.
// context is optional data bound into the key derivation (the decryptor must
// pass the same bytes); it may be nil.
func NewEncryptor(fileKey, context []byte) (*Encryptor, error) {
	salt := make([]byte, SaltSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("seal: random salt: %w", err)
	}
	return NewEncryptorWithSalt(fileKey, salt, context)
}

// NewEncryptorWithSalt is NewEncryptor with a caller-chosen salt. A (salt,
// context) pair must never be reused with the same file key; since the
// context is part of the key derivation, several streams of one file (say,
// one per tensor) may share one random salt if each has a distinct context
// (for example the tensor's index), and every chunk index restarts at 0 in
// each of them.
func NewEncryptorWithSalt(fileKey, salt, context []byte) (*Encryptor, error) {
	d, commitment, err := deriveStream(fileKey, salt, context)
	if err != nil {
		return nil, err
	}
	e := &Encryptor{d: d}
	copy(e.header[:SaltSize], salt)
	copy(e.header[SaltSize:], commitment[:])
	return e, nil
}

// Header returns the 56-byte stream header, salt || commitment, which the
// decryptor needs. It is not secret.
func (e *Encryptor) Header() []byte {
	h := make([]byte, HeaderSize)
	copy(h, e.header[:])
	return h
}

// SealChunk encrypts chunk number index and appends the ciphertext
// (len(plaintext)+TagSize bytes) to dst. final must be true for the last
// chunk of the stream and only for it. An empty plaintext is allowed (an
// empty stream is one empty final chunk).
func (e *Encryptor) SealChunk(dst []byte, index uint64, plaintext []byte, final bool) ([]byte, error) {
	if index >= MaxChunks {
		return nil, outOfRange("chunk index %d exceeds the maximum of %d chunks", index, MaxChunks)
	}
	if len(plaintext) > MaxChunkSize {
		return nil, outOfRange("chunk of %d bytes exceeds the maximum chunk size %d", len(plaintext), MaxChunkSize)
	}
	n := e.d.nonce(index, final)
	return e.d.aead.Seal(dst, n[:], plaintext, nil), nil
}

// Decryptor opens the chunks of one stream. OpenChunk is stateless and safe
// for concurrent use; Next and Finish check the sequence (order, exactly one
// final chunk, nothing after it) and must be called from one goroutine.
type Decryptor struct {
	d      *derived
	next   uint64
	done   bool
	broken error
}

// NewDecryptor checks the key commitment in header (salt || commitment)
// against fileKey and context before anything is decrypted. A mismatch is an
// error wrapping ErrDecryptionFailed and ErrCommitment.
func NewDecryptor(fileKey, header, context []byte) (*Decryptor, error) {
	if len(header) != HeaderSize {
		return nil, malformed("stream header must be %d bytes, got %d", HeaderSize, len(header))
	}
	d, commitment, err := deriveStream(fileKey, header[:SaltSize], context)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(commitment[:], header[SaltSize:]) != 1 {
		return nil, decryptErr(ErrCommitment, "wrong file key or corrupted stream header")
	}
	return &Decryptor{d: d}, nil
}

// OpenChunk authenticates and decrypts chunk number index, sealed with the
// given final flag, and appends the plaintext to dst. Nothing is appended
// unless the tag verifies. It does not track the sequence; use Next for
// that, or make sure yourself that indexes 0..n-1 are each opened once with
// final set only for n-1.
//
// When the tag fails, OpenChunk tries the opposite final flag to report a
// precise cause: a chunk expected to be final that was sealed as non-final
// gives ErrMissingFinal (the stream was truncated), one expected non-final
// that was sealed final gives ErrDataAfterFinal. Otherwise the error wraps
// ErrAuthentication. All wrap ErrDecryptionFailed.
func (d *Decryptor) OpenChunk(dst []byte, index uint64, ciphertext []byte, final bool) ([]byte, error) {
	if index >= MaxChunks {
		return nil, decryptErr(ErrChunkOrder, "chunk index %d exceeds the maximum of %d chunks", index, MaxChunks)
	}
	if len(ciphertext) < TagSize {
		return nil, decryptErr(ErrTruncatedChunk, "chunk %d has %d bytes, less than the %d-byte tag", index, len(ciphertext), TagSize)
	}
	if len(ciphertext)-TagSize > MaxChunkSize {
		return nil, outOfRange("chunk %d of %d bytes exceeds the maximum chunk size %d", index, len(ciphertext)-TagSize, MaxChunkSize)
	}
	n := d.d.nonce(index, final)
	out, err := d.d.aead.Open(dst, n[:], ciphertext, nil)
	if err == nil {
		return out, nil
	}
	// Diagnose: does the chunk open with the other flag? The plaintext of
	// that trial is discarded.
	alt := d.d.nonce(index, !final)
	if _, err2 := d.d.aead.Open(nil, alt[:], ciphertext, nil); err2 == nil {
		if final {
			return nil, decryptErr(ErrMissingFinal, "chunk %d was expected to be final but is not: stream truncated", index)
		}
		return nil, decryptErr(ErrDataAfterFinal, "chunk %d is a final chunk but more data follows", index)
	}
	return nil, decryptErr(ErrAuthentication, "chunk %d", index)
}

// Next opens the next chunk of the sequence: index must be the number of
// chunks opened so far. After the final chunk, or after any error, every
// further call fails (the error is sticky).
func (d *Decryptor) Next(dst []byte, index uint64, ciphertext []byte, final bool) ([]byte, error) {
	if d.broken != nil {
		return nil, d.broken
	}
	if d.done {
		d.broken = decryptErr(ErrDataAfterFinal, "chunk %d after the final chunk", index)
		return nil, d.broken
	}
	if index != d.next {
		d.broken = decryptErr(ErrChunkOrder, "got chunk %d, expected chunk %d", index, d.next)
		return nil, d.broken
	}
	out, err := d.OpenChunk(dst, index, ciphertext, final)
	if err != nil {
		d.broken = err
		return nil, err
	}
	d.next++
	d.done = final
	return out, nil
}

// Finish reports whether the sequence ended properly: nil after the final
// chunk was opened by Next, an error wrapping ErrMissingFinal otherwise (or
// the sticky error of an earlier failure).
func (d *Decryptor) Finish() error {
	if d.broken != nil {
		return d.broken
	}
	if !d.done {
		return decryptErr(ErrMissingFinal, "stream ended after %d chunks without a final chunk", d.next)
	}
	return nil
}

// ChunksOpened returns how many chunks Next has opened successfully.
func (d *Decryptor) ChunksOpened() uint64 { return d.next }

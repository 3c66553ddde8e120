// Package sealed is apr's sealing of tensor streams: it binds lib/seal's chunked AEAD
// and key wrapping to the container's sealed records (docs/FORMAT.md, "Sealed files";
// docs/SEALING.md), seals a stream for recipients and opens a sealed one.
//
// Layer 4, a transform of a stream: it imports lib/seal, lib/container and
// lib/stream, never the models, the converters or the façade lib/apr (which keeps
// the model-level SaveEncrypted, LoadEncrypted, ... on top of this package).
package sealed

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/stream"
)

// Sealing binds lib/seal's primitives to the container (docs/FORMAT.md, "Sealed
// files"; docs/SEALING.md). With a random 32-byte file key K, wrapped in stanzas for
// every recipient, and one random 24-byte salt per file:
//
//	D       = SHA-256(sealDomain || AuthHeader || metadata || seal section with its stream header zeroed)
//	file    = stream context "apr-v2 file" 0x00 || D; its key commitment is in the seal section
//	tensor  = stream context "apr-v2 tensor" 0x00 || D || u64 BE tensor index || record header
//	MAC     = seal.HeaderMAC(K, D || seal section || index section)
//
// so a changed header, metadata or seal section fails the key commitment before any
// tensor is read, a tensor moved, renamed, retyped or cut short fails its first chunk,
// chunks are bound to their index and final flag, and a changed index (a dropped
// tensor) fails the MAC.

// Layout of the seal section.
const (
	sealMagic     = "APRS"
	sealVersion   = 1
	sealFixed     = 8 + seal.HeaderSize // magic, version, 3 reserved, stream header
	sealDomain    = "github.com/apr-go/apr/container-seal@v1\x00"
	fileContext   = "apr-v2 file\x00"
	tensorContext = "apr-v2 tensor\x00"
)

// NewSealer returns a container.Sealer that seals a file for the recipients under a
// new random file key: X25519 public keys (seal.ParseX25519Recipient) and at most one
// password (seal.NewPasswordRecipient). Use it once per file.
func NewSealer(recipients ...seal.Recipient) (container.Sealer, error) {
	if len(recipients) == 0 {
		return nil, errors.New("sealing needs at least one recipient or a password")
	}
	key, err := seal.NewFileKey()
	if err != nil {
		return nil, err
	}
	stanzas, err := seal.WrapFileKey(key, recipients...)
	if err != nil {
		return nil, err
	}
	blob, err := seal.MarshalStanzas(stanzas)
	if err != nil {
		return nil, err
	}
	section := make([]byte, sealFixed, sealFixed+len(blob))
	copy(section, sealMagic)
	section[4] = sealVersion
	section = append(section, blob...)
	if len(section) > container.MaxSeal {
		return nil, fmt.Errorf("seal section of %d bytes exceeds %d", len(section), container.MaxSeal)
	}
	return &sealer{key: key, section: section}, nil
}

type sealer struct {
	key     []byte
	section []byte // stream header not yet filled in
	used    bool
}

func (s *sealer) SectionLen() int { return len(s.section) }

func (s *sealer) Begin(header, metadata []byte) ([]byte, container.TensorSealer, error) {
	if s.used {
		return nil, nil, errors.New("a sealer seals one file only (each file gets a new file key)")
	}
	s.used = true
	fs := &fileSeal{key: s.key, section: s.section}
	fs.digest = sealDigest(header, metadata, s.section)
	enc, err := seal.NewEncryptor(s.key, fs.context(fileContext))
	if err != nil {
		return nil, nil, err
	}
	copy(s.section[8:], enc.Header())
	fs.salt = s.section[8 : 8+seal.SaltSize]
	return s.section, fs, nil
}

// fileSeal is one sealed file's keys: it seals (container.TensorSealer) and opens
// (container.TensorOpener) its tensors.
type fileSeal struct {
	key     []byte
	salt    []byte
	section []byte
	digest  [sha256.Size]byte
}

func sealDigest(header, metadata, section []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(sealDomain))
	h.Write(header)
	h.Write(metadata)
	h.Write(section[:8])
	h.Write(make([]byte, seal.HeaderSize))
	h.Write(section[sealFixed:])
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

func (f *fileSeal) context(label string, extra ...[]byte) []byte {
	c := append([]byte(label), f.digest[:]...)
	for _, e := range extra {
		c = append(c, e...)
	}
	return c
}

func (f *fileSeal) tensorStream(index uint64, record []byte) (*seal.Encryptor, []byte, error) {
	ctx := f.context(tensorContext, binary.BigEndian.AppendUint64(nil, index), record)
	enc, err := seal.NewEncryptorWithSalt(f.key, f.salt, ctx)
	return enc, ctx, err
}

func (f *fileSeal) Tensor(index uint64, record []byte) (container.ChunkSealer, error) {
	enc, _, err := f.tensorStream(index, record)
	return enc, err
}

func (f *fileSeal) MAC(index []byte) ([]byte, error) {
	return seal.HeaderMAC(f.key, f.macInput(index))
}

func (f *fileSeal) macInput(index []byte) []byte {
	b := make([]byte, 0, len(f.digest)+len(f.section)+len(index))
	return append(append(append(b, f.digest[:]...), f.section...), index...)
}

// fileOpener opens the tensors of a sealed file.
type fileOpener struct{ fileSeal }

func (f *fileOpener) Tensor(index uint64, record []byte) (container.ChunkOpener, error) {
	enc, ctx, err := f.tensorStream(index, record)
	if err != nil {
		return nil, err
	}
	return seal.NewDecryptor(f.key, enc.Header(), ctx)
}

func (f *fileOpener) VerifyMAC(index, mac []byte) error {
	if err := seal.VerifyHeaderMAC(f.key, f.macInput(index), mac); err != nil {
		return fmt.Errorf("header, metadata, seal section or index: %w", err)
	}
	return nil
}

// NewUnsealer returns a container.Unsealer that opens files sealed for any of the
// identities (seal.X25519Identity, seal.PasswordIdentity). Opening fails with an
// error wrapping seal.ErrDecryptionFailed when no identity matches, or when the header,
// metadata or seal section were changed.
func NewUnsealer(identities ...seal.Identity) container.Unsealer {
	return &unsealer{ids: identities}
}

type unsealer struct{ ids []seal.Identity }

func (u *unsealer) Begin(header, metadata, section []byte) (container.TensorOpener, error) {
	stanzas, err := parseSealSection(section)
	if err != nil {
		return nil, err
	}
	if len(u.ids) == 0 {
		return nil, fmt.Errorf("%w: no identity or password given", seal.ErrDecryptionFailed)
	}
	key, err := seal.UnwrapFileKey(stanzas, u.ids...)
	if err != nil {
		return nil, err
	}
	f := &fileOpener{fileSeal{key: key, section: section, salt: section[8 : 8+seal.SaltSize]}}
	f.digest = sealDigest(header, metadata, section)
	if _, err := seal.NewDecryptor(key, section[8:sealFixed], f.context(fileContext)); err != nil {
		return nil, fmt.Errorf("header, metadata or seal section: %w", err)
	}
	return f, nil
}

func parseSealSection(section []byte) ([]seal.Stanza, error) {
	if len(section) < sealFixed || string(section[:4]) != sealMagic {
		return nil, &container.FormatError{Offset: -1, Msg: "seal section: no \"APRS\" magic"}
	}
	if section[4] != sealVersion {
		return nil, &container.FormatError{Offset: -1, Msg: fmt.Sprintf("seal section version %d, this reader knows %d", section[4], sealVersion)}
	}
	if section[5]|section[6]|section[7] != 0 {
		return nil, &container.FormatError{Offset: -1, Msg: "seal section: reserved bytes are not zero"}
	}
	stanzas, err := seal.ParseStanzas(section[sealFixed:])
	if err != nil {
		return nil, &container.FormatError{Offset: -1, Msg: "seal section: " + err.Error()}
	}
	return stanzas, nil
}

// Info says who can open a sealed file; it is read without any key.
type Info struct {
	Stanzas   int                // recipient stanzas in the file
	X25519    int                // of which X25519 public-key recipients
	Password  bool               // whether a password opens the file
	Argon2id  *seal.Argon2Params // the password's Argon2id parameters
	OtherType []string           // stanza types this version does not know
}

// ParseInfo describes a seal section (container.FileHeader.Seal).
func ParseInfo(section []byte) (*Info, error) {
	stanzas, err := parseSealSection(section)
	if err != nil {
		return nil, err
	}
	si := &Info{Stanzas: len(stanzas)}
	for _, s := range stanzas {
		switch s.Type {
		case seal.X25519StanzaType:
			si.X25519++
		case seal.Argon2idStanzaType:
			si.Password = true
			if len(s.Args) == 2 && len(s.Args[1]) == 9 {
				p := s.Args[1]
				si.Argon2id = &seal.Argon2Params{Time: binary.BigEndian.Uint32(p), MemoryKiB: binary.BigEndian.Uint32(p[4:]), Threads: p[8]}
			}
		default:
			si.OtherType = append(si.OtherType, s.Type)
		}
	}
	return si, nil
}

// Seal writes the tensors of src to dst as a sealed APR v2 stream for the
// recipients, carrying src's signature and license blocks (they cover the plaintext
// content, so they verify again after unsealing). opts choose compression, applied
// before encryption.
func Seal(dst io.Writer, src stream.Stream, recipients []seal.Recipient, opts ...container.Option) error {
	s, err := NewSealer(recipients...)
	if err != nil {
		return err
	}
	return stream.Reencode(dst, src, nil, true, append(opts[:len(opts):len(opts)], container.WithSealer(s))...)
}

// Open reads a sealed APR v2 stream from r and decrypts it with the first
// identity that opens it. The key is checked (and the header, metadata and seal
// section authenticated) before it returns; each chunk is released only after its
// tag verifies, and the index is authenticated before Next returns io.EOF. A stream
// that is not sealed is an error.
func Open(r io.Reader, identities ...seal.Identity) (stream.Stream, error) {
	return OpenWith(r, NewUnsealer(identities...))
}

// OpenWith is Open with any container.Unsealer (one that asks
// for a password only when the file needs one, say).
func OpenWith(r io.Reader, u container.Unsealer) (stream.Stream, error) {
	cr, err := container.NewReader(r, container.WithUnsealer(u))
	if err != nil {
		return nil, err
	}
	if cr.Header().Flags&container.FlagEncrypted == 0 {
		cr.Close()
		return nil, ErrNotSealed
	}
	return stream.FromReader(cr), nil
}

// ErrNotSealed is returned when a sealed file was expected.
var ErrNotSealed = errors.New("not a sealed APR file")

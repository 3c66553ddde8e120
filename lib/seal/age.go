package seal

import (
	"bufio"
	"bytes"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// This file is age's file format, version 1 (https://c2sp.org/age), for X25519
// recipients: files that `age -d -i KEY` decrypts and that age encrypts for us.
// apr-predict's private requests and replies use it (lib/predict). The format, in
// short:
//
//	age-encryption.org/v1
//	-> X25519 <ephemeral share, base64>
//	<body: the wrapped 16-byte file key, base64 in lines of 64 columns, the last shorter>
//	--- <HMAC-SHA-256 of the header up to "---", base64>
//	<16-byte nonce><payload: 64 KiB ChaCha20-Poly1305 chunks, STREAM nonces>
//
// Base64 is the standard alphabet without padding, canonical. The wrap key of an
// X25519 stanza is HKDF-SHA-256(shared secret, salt = share || recipient, info =
// "age-encryption.org/v1/X25519"); the header MAC key HKDF-SHA-256(file key, no
// salt, "header"); the payload key HKDF-SHA-256(file key, salt = nonce, "payload").
// A chunk's nonce is its 11-byte big-endian index and a byte 1 for the last chunk,
// else 0. Stanzas of other types are carried (AgeStanza) and skipped by identities.

const (
	ageIntro       = "age-encryption.org/v1"
	ageX25519Info  = "age-encryption.org/v1/X25519"
	ageFileKeySize = 16
	ageNonceSize   = 16
	ageChunkSize   = 64 << 10
	ageLineCols    = 64
	// AgeMaxHeader caps the header OpenAge reads, stanzas and MAC line included.
	AgeMaxHeader = 64 << 10
	// AgeMaxStanzas caps the number of stanzas of a header.
	AgeMaxStanzas = 64
)

var ageB64 = base64.RawStdEncoding.Strict()

// AgeStanza is one stanza of an age header: a type, arguments (non-empty strings of
// printable ASCII without spaces) and a body.
type AgeStanza struct {
	Type string
	Args []string
	Body []byte
}

func checkAgeWord(w string) error {
	if w == "" {
		return malformed("age header: empty stanza type or argument")
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 0x21 || w[i] > 0x7e {
			return malformed("age header: byte 0x%02x in a stanza type or argument", w[i])
		}
	}
	return nil
}

func (s AgeStanza) marshal(dst *bytes.Buffer) error {
	if err := checkAgeWord(s.Type); err != nil {
		return err
	}
	dst.WriteString("-> ")
	dst.WriteString(s.Type)
	for _, a := range s.Args {
		if err := checkAgeWord(a); err != nil {
			return err
		}
		dst.WriteByte(' ')
		dst.WriteString(a)
	}
	dst.WriteByte('\n')
	body := ageB64.EncodeToString(s.Body)
	for len(body) >= ageLineCols {
		dst.WriteString(body[:ageLineCols])
		dst.WriteByte('\n')
		body = body[ageLineCols:]
	}
	dst.WriteString(body) // the last line is shorter than 64 columns, maybe empty
	dst.WriteByte('\n')
	return nil
}

func ageHeaderMAC(fileKey, header []byte) ([]byte, error) {
	k, err := hkdf.Key(sha256.New, fileKey, nil, "header", 32)
	if err != nil {
		return nil, fmt.Errorf("seal: hkdf: %w", err)
	}
	m := hmac.New(sha256.New, k)
	m.Write(header)
	return m.Sum(nil), nil
}

func ageX25519Wrap(r *X25519Recipient, fileKey []byte) (AgeStanza, error) {
	share, wk, err := x25519Share(r.pub, ageX25519Info)
	if err != nil {
		return AgeStanza{}, err
	}
	body, err := aeadWrap(wk, fileKey)
	if err != nil {
		return AgeStanza{}, err
	}
	return AgeStanza{Type: X25519StanzaType, Args: []string{ageB64.EncodeToString(share)}, Body: body}, nil
}

// CreateAge writes the header of an age file for the recipients to dst and returns
// the writer of its payload; Close writes the last chunk (without it, age and OpenAge
// refuse the file as truncated). extra, when not nil, is called with the file key
// and returns stanzas to add after the recipients' (age skips stanzas of types it
// does not know; the header MAC covers them).
func CreateAge(dst io.Writer, recipients []*X25519Recipient, extra func(fileKey []byte) ([]AgeStanza, error)) (io.WriteCloser, error) {
	if len(recipients) == 0 {
		return nil, errors.New("seal: an age file needs a recipient")
	}
	fileKey := make([]byte, ageFileKeySize)
	if _, err := rand.Read(fileKey); err != nil {
		return nil, fmt.Errorf("seal: random file key: %w", err)
	}
	var stanzas []AgeStanza
	for _, r := range recipients {
		s, err := ageX25519Wrap(r, fileKey)
		if err != nil {
			return nil, err
		}
		stanzas = append(stanzas, s)
	}
	if extra != nil {
		more, err := extra(fileKey)
		if err != nil {
			return nil, err
		}
		stanzas = append(stanzas, more...)
	}
	var h bytes.Buffer
	h.WriteString(ageIntro + "\n")
	for _, s := range stanzas {
		if err := s.marshal(&h); err != nil {
			return nil, err
		}
	}
	h.WriteString("---")
	mac, err := ageHeaderMAC(fileKey, h.Bytes())
	if err != nil {
		return nil, err
	}
	h.WriteString(" " + ageB64.EncodeToString(mac) + "\n")
	nonce := make([]byte, ageNonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: random nonce: %w", err)
	}
	h.Write(nonce)
	a, err := agePayloadAEAD(fileKey, nonce)
	if err != nil {
		return nil, err
	}
	if _, err := dst.Write(h.Bytes()); err != nil {
		return nil, err
	}
	sealChunk := func(ct []byte, index uint64, chunk []byte, last bool) ([]byte, error) {
		if index >= 1<<64-1 {
			return nil, outOfRange("age payload: too many chunks")
		}
		return a.Seal(ct, ageChunkNonce(index, last), chunk, nil), nil
	}
	w := newChunkWriter(dst, ageChunkSize, sealChunk, errors.New("seal: write to a closed age file"))
	return &w, nil
}

func agePayloadAEAD(fileKey, nonce []byte) (aead interface {
	Seal(dst, nonce, plaintext, ad []byte) []byte
	Open(dst, nonce, ciphertext, ad []byte) ([]byte, error)
}, err error) {
	k, err := hkdf.Key(sha256.New, fileKey, nonce, "payload", chacha20poly1305.KeySize)
	if err != nil {
		return nil, fmt.Errorf("seal: hkdf: %w", err)
	}
	return chacha20poly1305.New(k)
}

func ageChunkNonce(index uint64, last bool) []byte {
	var n [chacha20poly1305.NonceSize]byte
	for i := 0; i < 8; i++ {
		n[10-i] = byte(index >> (8 * i))
	}
	if last {
		n[11] = 1
	}
	return n[:]
}

// AgeFile is an age file being read: its header has authenticated (the MAC under the
// file key an identity unwrapped); Read returns payload bytes only from chunks whose
// tag verified, and an error wrapping ErrDecryptionFailed for a truncated, extended
// or altered payload.
type AgeFile struct {
	// Stanzas are the header's stanzas, in order, those of identities included.
	Stanzas []AgeStanza
	fileKey []byte
	chunkReader
}

// FileKey returns the file key the identity unwrapped (for bindings such as a
// reply's MAC, lib/predict); it is secret.
func (f *AgeFile) FileKey() []byte { return f.fileKey }

// readAgeLine reads one line, '\n' excluded, within the header budget.
func readAgeLine(r *bufio.Reader, budget *int) (string, error) {
	var b []byte
	for {
		c, err := r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", malformed("age header truncated")
			}
			return "", err
		}
		*budget--
		if *budget < 0 {
			return "", outOfRange("age header longer than %d bytes", AgeMaxHeader)
		}
		if c == '\n' {
			return string(b), nil
		}
		b = append(b, c)
	}
}

// OpenAge reads an age file's header from src, unwraps its file key with one of the
// identities (an error wrapping ErrDecryptionFailed and ErrNoIdentityMatched when
// none opens it), checks the header MAC (ErrHeaderMAC) and returns the file, whose
// Read decrypts the payload. Hostile input gives an error wrapping ErrMalformed or
// ErrParamsOutOfRange, never a panic.
func OpenAge(src io.Reader, ids []*X25519Identity) (*AgeFile, error) {
	br := bufio.NewReaderSize(src, ageChunkSize+chacha20poly1305.Overhead+1)
	budget := AgeMaxHeader
	var header bytes.Buffer
	line, err := readAgeLine(br, &budget)
	if err != nil {
		return nil, err
	}
	if line != ageIntro {
		return nil, malformed("not an age file (the first line is not %q)", ageIntro)
	}
	header.WriteString(line + "\n")
	var stanzas []AgeStanza
	var macLine string
	for {
		line, err := readAgeLine(br, &budget)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(line, "---") {
			header.WriteString("---")
			macLine = line
			break
		}
		words, ok := strings.CutPrefix(line, "-> ")
		if !ok {
			return nil, malformed("age header: a line that is neither a stanza nor the MAC")
		}
		if len(stanzas) == AgeMaxStanzas {
			return nil, outOfRange("age header: more than %d stanzas", AgeMaxStanzas)
		}
		header.WriteString(line + "\n")
		fields := strings.Split(words, " ")
		for _, w := range fields {
			if err := checkAgeWord(w); err != nil {
				return nil, err
			}
		}
		var body strings.Builder
		for {
			l, err := readAgeLine(br, &budget)
			if err != nil {
				return nil, err
			}
			header.WriteString(l + "\n")
			if len(l) > ageLineCols {
				return nil, malformed("age header: a body line of %d columns", len(l))
			}
			body.WriteString(l)
			if len(l) < ageLineCols {
				break
			}
		}
		b, err := ageB64.DecodeString(body.String())
		if err != nil {
			return nil, malformed("age header: stanza body: %v", err)
		}
		stanzas = append(stanzas, AgeStanza{Type: fields[0], Args: fields[1:], Body: b})
	}
	if len(stanzas) == 0 {
		return nil, malformed("age header without a stanza")
	}
	macB64, ok := strings.CutPrefix(macLine, "--- ")
	if !ok {
		return nil, malformed("age header: malformed MAC line")
	}
	mac, err := ageB64.DecodeString(macB64)
	if err != nil || len(mac) != sha256.Size {
		return nil, malformed("age header: malformed MAC")
	}
	fileKey, err := ageUnwrap(stanzas, ids)
	if err != nil {
		return nil, err
	}
	want, err := ageHeaderMAC(fileKey, header.Bytes())
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(mac, want) {
		return nil, decryptErr(ErrHeaderMAC, "age header")
	}
	nonce := make([]byte, ageNonceSize)
	if _, err := io.ReadFull(br, nonce); err != nil {
		return nil, malformed("age payload: nonce truncated")
	}
	a, err := agePayloadAEAD(fileKey, nonce)
	if err != nil {
		return nil, err
	}
	// A chunk opens with the flag of the last chunk or without; the other flag
	// says what went wrong.
	open := func(dst []byte, index uint64, ct []byte, last bool) ([]byte, error) {
		if len(ct) < chacha20poly1305.Overhead {
			return nil, decryptErr(ErrTruncatedChunk, "age payload chunk %d", index)
		}
		pt, err := a.Open(dst, ageChunkNonce(index, last), ct, nil)
		if err != nil {
			if last {
				if _, err2 := a.Open(nil, ageChunkNonce(index, false), ct, nil); err2 == nil {
					return nil, decryptErr(ErrMissingFinal, "age payload truncated after chunk %d", index)
				}
			}
			return nil, decryptErr(ErrAuthentication, "age payload chunk %d", index)
		}
		if last && len(pt) == 0 && index > 0 {
			return nil, decryptErr(ErrAuthentication, "age payload: an empty last chunk after chunk %d", index-1)
		}
		return pt, nil
	}
	missingFinal := func(index uint64) error {
		return decryptErr(ErrMissingFinal, "age payload ends after %d chunks without its last chunk", index)
	}
	return &AgeFile{Stanzas: stanzas, fileKey: fileKey, chunkReader: chunkReader{
		src: br, ct: make([]byte, ageChunkSize+chacha20poly1305.Overhead), open: open, missingFinal: missingFinal}}, nil
}

func ageUnwrap(stanzas []AgeStanza, ids []*X25519Identity) ([]byte, error) {
	for n, s := range stanzas {
		if s.Type != X25519StanzaType {
			continue
		}
		if len(s.Args) != 1 {
			return nil, malformed("age X25519 stanza %d: want one argument", n)
		}
		share, err := ageB64.DecodeString(s.Args[0])
		if err != nil || len(share) != 32 {
			return nil, malformed("age X25519 stanza %d: malformed share", n)
		}
		if len(s.Body) != ageFileKeySize+chacha20poly1305.Overhead {
			return nil, malformed("age X25519 stanza %d: body of %d bytes, want %d", n, len(s.Body), ageFileKeySize+chacha20poly1305.Overhead)
		}
		eph, err := ecdh.X25519().NewPublicKey(share)
		if err != nil {
			return nil, malformed("age X25519 stanza %d: %v", n, err)
		}
		for _, id := range ids {
			shared, err := id.priv.ECDH(eph)
			if err != nil {
				return nil, malformed("age X25519 stanza %d: invalid share: %v", n, err)
			}
			wk, err := x25519WrapKey(shared, share, id.priv.PublicKey().Bytes(), ageX25519Info)
			if err != nil {
				return nil, err
			}
			a, err := chacha20poly1305.New(wk)
			if err != nil {
				return nil, err
			}
			if k, err := a.Open(nil, zeroNonce[:], s.Body, nil); err == nil && len(k) == ageFileKeySize {
				return k, nil
			}
		}
	}
	return nil, decryptErr(ErrNoIdentityMatched, "no identity opens this age file")
}

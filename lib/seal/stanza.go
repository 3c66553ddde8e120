package seal

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// A Stanza is one wrapping of the file key for one recipient: a type
// ("X25519", "argon2id"), binary arguments, and a body (the wrapped key).
// Stanzas of unknown types are kept and skipped by identities, so new
// recipient types can be added without breaking old readers.
type Stanza struct {
	Type string
	Args [][]byte
	Body []byte
}

// Limits of the stanza encoding; ParseStanzas rejects anything beyond them.
const (
	StanzaFormatVersion = 1
	MaxStanzas          = 64
	MaxStanzaTypeLen    = 32
	MaxStanzaArgs       = 8
	MaxStanzaArgLen     = 256
	MaxStanzaBodyLen    = 1024
)

// MarshalStanzas encodes stanzas in APR's stanza block format, version 1.
// All integers are big-endian; the block is
//
//	version     u8   = 1
//	count       u8   1..64 stanzas
//	count × stanza:
//	  typeLen   u8   1..32
//	  type      typeLen bytes, printable ASCII 0x21..0x7e
//	  argCount  u8   0..8
//	  argCount × (argLen u16 0..256, arg bytes)
//	  bodyLen   u16  0..1024
//	  body      bodyLen bytes
//
// and nothing may follow the last stanza. The container stores this block
// (and should authenticate it with HeaderMAC).
func MarshalStanzas(stanzas []Stanza) ([]byte, error) {
	if len(stanzas) == 0 || len(stanzas) > MaxStanzas {
		return nil, outOfRange("stanza count %d not in 1..%d", len(stanzas), MaxStanzas)
	}
	out := []byte{StanzaFormatVersion, byte(len(stanzas))}
	for i, s := range stanzas {
		if err := checkStanzaType(s.Type); err != nil {
			return nil, fmt.Errorf("stanza %d: %w", i, err)
		}
		if len(s.Args) > MaxStanzaArgs {
			return nil, outOfRange("stanza %d has %d arguments, more than %d", i, len(s.Args), MaxStanzaArgs)
		}
		if len(s.Body) > MaxStanzaBodyLen {
			return nil, outOfRange("stanza %d body of %d bytes exceeds %d", i, len(s.Body), MaxStanzaBodyLen)
		}
		out = append(out, byte(len(s.Type)))
		out = append(out, s.Type...)
		out = append(out, byte(len(s.Args)))
		for j, a := range s.Args {
			if len(a) > MaxStanzaArgLen {
				return nil, outOfRange("stanza %d argument %d of %d bytes exceeds %d", i, j, len(a), MaxStanzaArgLen)
			}
			out = binary.BigEndian.AppendUint16(out, uint16(len(a)))
			out = append(out, a...)
		}
		out = binary.BigEndian.AppendUint16(out, uint16(len(s.Body)))
		out = append(out, s.Body...)
	}
	return out, nil
}

func checkStanzaType(t string) error {
	if len(t) == 0 || len(t) > MaxStanzaTypeLen {
		return malformed("stanza type length %d not in 1..%d", len(t), MaxStanzaTypeLen)
	}
	for i := 0; i < len(t); i++ {
		if t[i] < 0x21 || t[i] > 0x7e {
			return malformed("stanza type contains a non-printable byte 0x%02x", t[i])
		}
	}
	return nil
}

// byteReader reads a bounded byte slice without ever panicking.
type byteReader struct {
	b   []byte
	off int
}

func (r *byteReader) bytes(n int) ([]byte, bool) {
	if n < 0 || len(r.b)-r.off < n {
		return nil, false
	}
	out := r.b[r.off : r.off+n]
	r.off += n
	return out, true
}

func (r *byteReader) u8() (int, bool) {
	b, ok := r.bytes(1)
	if !ok {
		return 0, false
	}
	return int(b[0]), true
}

func (r *byteReader) u16() (int, bool) {
	b, ok := r.bytes(2)
	if !ok {
		return 0, false
	}
	return int(binary.BigEndian.Uint16(b)), true
}

// ParseStanzas decodes a block written by MarshalStanzas. It is safe on
// hostile input: every length is checked against the limits and the input
// size before use, and all errors wrap ErrMalformed. The returned stanzas
// do not alias b.
func ParseStanzas(b []byte) ([]Stanza, error) {
	r := &byteReader{b: b}
	version, ok := r.u8()
	if !ok {
		return nil, malformed("stanza block is empty")
	}
	if version != StanzaFormatVersion {
		return nil, malformed("unsupported stanza block version %d", version)
	}
	count, ok := r.u8()
	if !ok || count < 1 || count > MaxStanzas {
		return nil, malformed("stanza count missing or not in 1..%d", MaxStanzas)
	}
	stanzas := make([]Stanza, 0, count)
	for i := range count {
		tl, ok := r.u8()
		if !ok {
			return nil, malformed("stanza %d: truncated", i)
		}
		t, ok := r.bytes(tl)
		if !ok {
			return nil, malformed("stanza %d: truncated type", i)
		}
		if err := checkStanzaType(string(t)); err != nil {
			return nil, fmt.Errorf("stanza %d: %w", i, err)
		}
		s := Stanza{Type: string(t)}
		nargs, ok := r.u8()
		if !ok {
			return nil, malformed("stanza %d: truncated", i)
		}
		if nargs > MaxStanzaArgs {
			return nil, malformed("stanza %d has %d arguments, more than %d", i, nargs, MaxStanzaArgs)
		}
		for j := range nargs {
			al, ok := r.u16()
			if !ok || al > MaxStanzaArgLen {
				return nil, malformed("stanza %d argument %d: bad length", i, j)
			}
			a, ok := r.bytes(al)
			if !ok {
				return nil, malformed("stanza %d argument %d: truncated", i, j)
			}
			s.Args = append(s.Args, append([]byte{}, a...))
		}
		bl, ok := r.u16()
		if !ok || bl > MaxStanzaBodyLen {
			return nil, malformed("stanza %d: bad body length", i)
		}
		body, ok := r.bytes(bl)
		if !ok {
			return nil, malformed("stanza %d: truncated body", i)
		}
		s.Body = append([]byte{}, body...)
		stanzas = append(stanzas, s)
	}
	if r.off != len(b) {
		return nil, malformed("%d trailing bytes after the stanzas", len(b)-r.off)
	}
	return stanzas, nil
}

// A Recipient wraps a file key into one or more stanzas.
type Recipient interface {
	Wrap(fileKey []byte) ([]Stanza, error)
}

// An Identity unwraps a file key from the stanzas meant for it. It returns
// an error wrapping ErrNoIdentityMatched (and ErrDecryptionFailed) when no
// stanza opens with it; other errors (malformed stanza, parameters beyond
// the caps) stop the search.
type Identity interface {
	Unwrap(stanzas []Stanza) ([]byte, error)
}

// WrapFileKey wraps fileKey for every recipient. At most one password
// recipient is allowed. Note that a file sealed for a password and for
// public keys can be re-sealed by any recipient: a password does not prove
// who made the file.
func WrapFileKey(fileKey []byte, recipients ...Recipient) ([]Stanza, error) {
	if len(fileKey) != FileKeySize {
		return nil, fmt.Errorf("seal: file key must be %d bytes, got %d", FileKeySize, len(fileKey))
	}
	if len(recipients) == 0 {
		return nil, errors.New("seal: no recipients")
	}
	var out []Stanza
	passwords := 0
	for _, r := range recipients {
		if r == nil {
			return nil, errors.New("seal: nil recipient")
		}
		if _, ok := r.(*PasswordRecipient); ok {
			passwords++
		}
		s, err := r.Wrap(fileKey)
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	if passwords > 1 {
		return nil, errors.New("seal: at most one password recipient per file")
	}
	if len(out) > MaxStanzas {
		return nil, outOfRange("%d stanzas, more than %d", len(out), MaxStanzas)
	}
	return out, nil
}

// UnwrapFileKey tries each identity on the stanzas and returns the first
// file key recovered. If none matches, the error wraps ErrDecryptionFailed
// and ErrNoIdentityMatched. A malformed stanza of a known type, or Argon2id
// parameters beyond the caps, are reported at once.
func UnwrapFileKey(stanzas []Stanza, identities ...Identity) ([]byte, error) {
	if len(stanzas) == 0 {
		return nil, malformed("no stanzas")
	}
	if len(stanzas) > MaxStanzas {
		return nil, malformed("%d stanzas, more than %d", len(stanzas), MaxStanzas)
	}
	if len(identities) == 0 {
		return nil, errors.New("seal: no identities")
	}
	var lastErr error
	for _, id := range identities {
		if id == nil {
			return nil, errors.New("seal: nil identity")
		}
		key, err := id.Unwrap(stanzas)
		if err == nil {
			if len(key) != FileKeySize {
				return nil, decryptErr(ErrAuthentication, "unwrapped file key has %d bytes", len(key))
			}
			return key, nil
		}
		if !errors.Is(err, ErrNoIdentityMatched) {
			return nil, err
		}
		lastErr = err
	}
	if len(identities) == 1 {
		return nil, lastErr
	}
	return nil, decryptErr(ErrNoIdentityMatched, "tried %d identities on %d stanzas", len(identities), len(stanzas))
}

const headerMACInfo = "github.com/apr-go/apr/seal/header-mac@v1"

// HeaderMACSize is the size of a header MAC.
const HeaderMACSize = sha256.Size

// HeaderMAC returns HMAC-SHA256 of header under a key derived from the file
// key (HKDF-Expand-SHA256, info "github.com/apr-go/apr/seal/header-mac@v1").
// A container computes it over the readable parts of its header (stanza
// block, stream header, metadata, index) so that changing them is detected.
func HeaderMAC(fileKey, header []byte) ([]byte, error) {
	if len(fileKey) != FileKeySize {
		return nil, fmt.Errorf("seal: file key must be %d bytes, got %d", FileKeySize, len(fileKey))
	}
	k, err := hkdf.Expand(sha256.New, fileKey, headerMACInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("seal: hkdf: %w", err)
	}
	m := hmac.New(sha256.New, k)
	m.Write(header)
	return m.Sum(nil), nil
}

// VerifyHeaderMAC checks mac against HeaderMAC(fileKey, header); a mismatch
// wraps ErrDecryptionFailed and ErrHeaderMAC.
func VerifyHeaderMAC(fileKey, header, mac []byte) error {
	want, err := HeaderMAC(fileKey, header)
	if err != nil {
		return err
	}
	if !hmac.Equal(want, mac) {
		return decryptErr(ErrHeaderMAC, "header was modified or the file key is wrong")
	}
	return nil
}

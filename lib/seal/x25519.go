package seal

import (
	"bufio"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// X25519StanzaType is the stanza type of X25519 recipients.
const X25519StanzaType = "X25519"

// x25519Info is the HKDF info of the X25519 wrap key. It differs from age's
// label on purpose: these stanzas live in APR files, not age files.
const x25519Info = "github.com/apr-go/apr/seal/X25519@v1"

// Bech32 prefixes shared with age, so keys move freely between the tools.
const (
	recipientHRP = "age"
	identityHRP  = "age-secret-key-"
)

// X25519Recipient is an X25519 public key that file keys can be wrapped to.
// Its string form is age's recipient format, "age1...".
//
// Wrapping, like age's X25519 recipient type: a fresh ephemeral key pair
// (e, E); shared = X25519(e, recipient); wrap key = HKDF-SHA256(ikm =
// shared, salt = E || recipient, info = "github.com/apr-go/apr/seal/X25519@v1");
// body = ChaCha20-Poly1305(wrap key, zero nonce, file key). The stanza is
// {Type: "X25519", Args: [E (32 bytes)], Body: body (48 bytes)}.
type X25519Recipient struct {
	pub *ecdh.PublicKey
}

// X25519Identity is an X25519 private key. Its string form is age's identity
// format, "AGE-SECRET-KEY-1...".
type X25519Identity struct {
	priv *ecdh.PrivateKey
}

// GenerateX25519Identity returns a new random identity.
func GenerateX25519Identity() (*X25519Identity, error) {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("seal: generating X25519 key: %w", err)
	}
	return &X25519Identity{priv: k}, nil
}

// ParseX25519Identity parses an "AGE-SECRET-KEY-1..." string (as written by
// age-keygen). Surrounding white space is ignored.
func ParseX25519Identity(s string) (*X25519Identity, error) {
	data, err := decodeX25519Key(s, "identity", identityHRP, "AGE-SECRET-KEY-1")
	if err != nil {
		return nil, err
	}
	k, err := ecdh.X25519().NewPrivateKey(data)
	if err != nil {
		return nil, malformed("X25519 identity: %v", err)
	}
	return &X25519Identity{priv: k}, nil
}

// ParseX25519Identities reads identities from an identity file in
// age-keygen's format: one "AGE-SECRET-KEY-1..." per line, blank lines and
// lines starting with '#' ignored. At most 1 MiB is read.
func ParseX25519Identities(r io.Reader) ([]*X25519Identity, error) {
	const maxFile = 1 << 20
	sc := bufio.NewScanner(io.LimitReader(r, maxFile+1))
	sc.Buffer(make([]byte, 0, 4096), maxFile+1)
	var ids []*X25519Identity
	total := 0
	for line := 1; sc.Scan(); line++ {
		total += len(sc.Bytes()) + 1
		if total > maxFile {
			return nil, malformed("identity file larger than %d bytes", maxFile)
		}
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		id, err := ParseX25519Identity(l)
		if err != nil {
			return nil, fmt.Errorf("identity file line %d: %w", line, err)
		}
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, malformed("reading identity file: %v", err)
	}
	if len(ids) == 0 {
		return nil, malformed("no identities found")
	}
	return ids, nil
}

// String returns the identity in age's format, "AGE-SECRET-KEY-1...".
func (i *X25519Identity) String() string {
	return bech32Encode(identityHRP, i.priv.Bytes(), true)
}

// Recipient returns the public key that belongs to the identity.
func (i *X25519Identity) Recipient() *X25519Recipient {
	return &X25519Recipient{pub: i.priv.PublicKey()}
}

// ParseX25519Recipient parses an "age1..." recipient string.
func ParseX25519Recipient(s string) (*X25519Recipient, error) {
	data, err := decodeX25519Key(s, "recipient", recipientHRP, "age1")
	if err != nil {
		return nil, err
	}
	k, err := ecdh.X25519().NewPublicKey(data)
	if err != nil {
		return nil, malformed("X25519 recipient: %v", err)
	}
	return &X25519Recipient{pub: k}, nil
}

// decodeX25519Key returns the 32 key bytes of an age key string: kind is
// "identity" or "recipient", hrp its Bech32 prefix, and start how it is written.
func decodeX25519Key(s, kind, hrp, start string) ([]byte, error) {
	got, data, err := bech32Decode(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("parsing X25519 %s: %w", kind, err)
	}
	if got != hrp {
		return nil, malformed("X25519 %s must start with %s, got prefix %q", kind, start, got)
	}
	if len(data) != 32 {
		return nil, malformed("X25519 %s has %d bytes, want 32", kind, len(data))
	}
	return data, nil
}

// String returns the recipient in age's format, "age1...".
func (r *X25519Recipient) String() string {
	return bech32Encode(recipientHRP, r.pub.Bytes(), false)
}

// Bytes returns the raw 32-byte public key.
func (r *X25519Recipient) Bytes() []byte { return r.pub.Bytes() }

// x25519WrapKey derives the key that wraps a file key for an X25519 stanza:
// HKDF-SHA-256(shared secret, salt = ephemeral share || recipient, info).
func x25519WrapKey(shared, ephemeral, recipient []byte, info string) ([]byte, error) {
	k, err := hkdf.Key(sha256.New, shared, slices.Concat(ephemeral, recipient), info, chacha20poly1305.KeySize)
	if err != nil {
		return nil, fmt.Errorf("seal: hkdf: %w", err)
	}
	return k, nil
}

// x25519Share makes a fresh ephemeral key pair for the recipient pub and returns
// its public share and the wrap key (x25519WrapKey) it agrees on with pub.
func x25519Share(pub *ecdh.PublicKey, info string) (share, wrapKey []byte, err error) {
	eph, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("seal: ephemeral X25519 key: %w", err)
	}
	shared, err := eph.ECDH(pub)
	if err != nil {
		return nil, nil, fmt.Errorf("seal: X25519: %w", err)
	}
	share = eph.PublicKey().Bytes()
	wrapKey, err = x25519WrapKey(shared, share, pub.Bytes(), info)
	return share, wrapKey, err
}

// Wrap implements Recipient.
func (r *X25519Recipient) Wrap(fileKey []byte) ([]Stanza, error) {
	ephPub, wk, err := x25519Share(r.pub, x25519Info)
	if err != nil {
		return nil, err
	}
	body, err := aeadWrap(wk, fileKey)
	if err != nil {
		return nil, err
	}
	return []Stanza{{Type: X25519StanzaType, Args: [][]byte{ephPub}, Body: body}}, nil
}

// Unwrap implements Identity: it tries every X25519 stanza.
func (i *X25519Identity) Unwrap(stanzas []Stanza) ([]byte, error) {
	own := i.priv.PublicKey().Bytes()
	for n, s := range stanzas {
		if s.Type != X25519StanzaType {
			continue
		}
		if len(s.Args) != 1 || len(s.Args[0]) != 32 {
			return nil, malformed("X25519 stanza %d: want one 32-byte argument", n)
		}
		if len(s.Body) != FileKeySize+chacha20poly1305.Overhead {
			return nil, malformed("X25519 stanza %d: body of %d bytes, want %d", n, len(s.Body), FileKeySize+chacha20poly1305.Overhead)
		}
		eph, err := ecdh.X25519().NewPublicKey(s.Args[0])
		if err != nil {
			return nil, malformed("X25519 stanza %d: %v", n, err)
		}
		shared, err := i.priv.ECDH(eph)
		if err != nil {
			// Low-order ephemeral point: nobody honest writes that.
			return nil, malformed("X25519 stanza %d: invalid ephemeral share: %v", n, err)
		}
		wk, err := x25519WrapKey(shared, s.Args[0], own, x25519Info)
		if err != nil {
			return nil, err
		}
		if key, ok := aeadUnwrap(wk, s.Body); ok {
			return key, nil
		}
	}
	return nil, decryptErr(ErrNoIdentityMatched, "no X25519 stanza for recipient %s", i.Recipient())
}

var zeroNonce [chacha20poly1305.NonceSize]byte

// aeadWrap encrypts the file key with a single-use key and a zero nonce.
func aeadWrap(key, fileKey []byte) ([]byte, error) {
	a, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, fmt.Errorf("seal: chacha20poly1305: %w", err)
	}
	return a.Seal(nil, zeroNonce[:], fileKey, nil), nil
}

func aeadUnwrap(key, body []byte) ([]byte, bool) {
	a, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, false
	}
	out, err := a.Open(nil, zeroNonce[:], body, nil)
	if err != nil || len(out) != FileKeySize {
		return nil, false
	}
	return out, true
}

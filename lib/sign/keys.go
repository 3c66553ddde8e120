package sign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/ssh"
)

// MaxKeyFileSize caps the size of a key file accepted by the parsers.
const MaxKeyFileSize = 64 << 10

// KeyID is an 8-byte key identifier. For minisign keys it is minisign's key
// number; for every other key it is DefaultKeyID of the public key.
//
// A key id only selects candidate keys; trust always comes from the public
// key itself being in the caller's trusted list.
type KeyID [8]byte

// String formats the id as minisign prints it: the 8 bytes read as a
// little-endian integer, in 16 upper-case hex digits.
func (id KeyID) String() string {
	return fmt.Sprintf("%016X", binary.LittleEndian.Uint64(id[:]))
}

// DefaultKeyID is the first 8 bytes of SHA-256 of the 32-byte public key.
func DefaultKeyID(pub ed25519.PublicKey) KeyID {
	h := sha256.Sum256(pub)
	var id KeyID
	copy(id[:], h[:8])
	return id
}

// PublicKey is an Ed25519 public key with its key id.
type PublicKey struct {
	Key ed25519.PublicKey
	ID  KeyID
}

// PrivateKey is an Ed25519 private key with its key id.
type PrivateKey struct {
	Key ed25519.PrivateKey
	ID  KeyID
}

// NewPublicKey wraps a raw public key with DefaultKeyID.
func NewPublicKey(pub ed25519.PublicKey) (*PublicKey, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, malformed("ed25519 public key of %d bytes", len(pub))
	}
	return &PublicKey{Key: bytes.Clone(pub), ID: DefaultKeyID(pub)}, nil
}

// NewPrivateKey wraps a raw private key with DefaultKeyID.
func NewPrivateKey(priv ed25519.PrivateKey) (*PrivateKey, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, malformed("ed25519 private key of %d bytes", len(priv))
	}
	k := &PrivateKey{Key: bytes.Clone(priv)}
	if err := k.checkConsistent(); err != nil {
		return nil, err
	}
	k.ID = DefaultKeyID(k.Key.Public().(ed25519.PublicKey))
	return k, nil
}

// checkConsistent verifies that the public half stored in the 64-byte key
// is the one derived from its seed.
func (k *PrivateKey) checkConsistent() error {
	derived := ed25519.NewKeyFromSeed(k.Key.Seed())
	if !bytes.Equal(derived[32:], k.Key[32:]) {
		return malformed("ed25519 private key: public half does not match the seed")
	}
	return nil
}

// GenerateKey returns a new key pair from rand (crypto/rand if nil).
func GenerateKey(r io.Reader) (*PrivateKey, error) {
	if r == nil {
		r = rand.Reader
	}
	_, priv, err := ed25519.GenerateKey(r)
	if err != nil {
		return nil, fmt.Errorf("sign: generating key: %w", err)
	}
	return NewPrivateKey(priv)
}

// Public returns the public key, with the same key id.
func (k *PrivateKey) Public() *PublicKey {
	return &PublicKey{Key: bytes.Clone(k.Key[32:]), ID: k.ID}
}

// Equal reports whether two public keys are the same key (ids ignored).
func (p *PublicKey) Equal(q *PublicKey) bool {
	return p != nil && q != nil && bytes.Equal(p.Key, q.Key)
}

// MarshalPrivateKeyPEM writes the key as a PKCS#8 "PRIVATE KEY" PEM block,
// as `openssl genpkey -algorithm ed25519` does. Store it with mode 0600.
func MarshalPrivateKeyPEM(k *PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.Key)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// MarshalPublicKeyPEM writes the key as a PKIX "PUBLIC KEY" PEM block, as
// `openssl pkey -pubout` does.
func MarshalPublicKeyPEM(p *PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(p.Key)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// MarshalAuthorizedKey writes the key as an OpenSSH "ssh-ed25519 ..." line.
func MarshalAuthorizedKey(p *PublicKey, comment string) ([]byte, error) {
	sp, err := ssh.NewPublicKey(p.Key)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	line := bytes.TrimRight(ssh.MarshalAuthorizedKey(sp), "\n")
	if comment = strings.TrimSpace(comment); comment != "" && !strings.ContainsAny(comment, "\r\n") {
		line = append(append(line, ' '), comment...)
	}
	return append(line, '\n'), nil
}

// ParsePrivateKey reads a private key in any supported format, detected
// from its content:
//
//   - PKCS#8 PEM ("BEGIN PRIVATE KEY"), as written by openssl and
//     MarshalPrivateKeyPEM;
//   - OpenSSH ("BEGIN OPENSSH PRIVATE KEY"), ed25519 only; an encrypted one
//     needs passphrase (ErrPassphraseRequired without it), and its bcrypt
//     rounds are capped at MaxOpenSSHRounds;
//   - a minisign secret key file, unencrypted (`minisign -G -W`) or
//     encrypted with scrypt (needs passphrase; scrypt capped, see
//     MaxMinisignScryptMemory).
//
// passphrase may be nil for unencrypted keys.
func ParsePrivateKey(data, passphrase []byte) (*PrivateKey, error) {
	if len(data) > MaxKeyFileSize {
		return nil, malformed("key file larger than %d bytes", MaxKeyFileSize)
	}
	trimmed := bytes.TrimSpace(data)
	if bytes.HasPrefix(trimmed, []byte(minisignUntrustedPrefix)) {
		return parseMinisignSecretKey(trimmed, passphrase)
	}
	block, rest := pem.Decode(trimmed)
	if block == nil {
		return nil, malformed("not a PEM, OpenSSH or minisign private key")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, malformed("data after the PEM block")
	}
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, malformed("PKCS#8: %v", err)
		}
		ek, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%w: PKCS#8 key of type %T, want Ed25519", ErrUnsupportedKey, k)
		}
		return NewPrivateKey(ek)
	case "ENCRYPTED PRIVATE KEY":
		return nil, fmt.Errorf("%w: encrypted PKCS#8 is not supported; decrypt it with `openssl pkey`", ErrUnsupportedKey)
	case "OPENSSH PRIVATE KEY":
		return parseOpenSSHPrivateKey(trimmed, block.Bytes, passphrase)
	default:
		return nil, fmt.Errorf("%w: PEM block %q", ErrUnsupportedKey, block.Type)
	}
}

// MaxOpenSSHRounds caps the bcrypt_pbkdf rounds of an encrypted OpenSSH key
// (ssh-keygen's default is 16).
const MaxOpenSSHRounds = 1024

func parseOpenSSHPrivateKey(pemBytes, der, passphrase []byte) (*PrivateKey, error) {
	cipherName, rounds, err := openSSHKDF(der)
	if err != nil {
		return nil, err
	}
	var raw any
	if cipherName == "none" {
		raw, err = ssh.ParseRawPrivateKey(pemBytes)
	} else {
		if passphrase == nil {
			return nil, fmt.Errorf("%w (OpenSSH key encrypted with %s)", ErrPassphraseRequired, cipherName)
		}
		if rounds > MaxOpenSSHRounds {
			return nil, fmt.Errorf("%w: OpenSSH key asks for %d bcrypt rounds, cap is %d", ErrParamsOutOfRange, rounds, MaxOpenSSHRounds)
		}
		raw, err = ssh.ParseRawPrivateKeyWithPassphrase(pemBytes, passphrase)
	}
	if err != nil {
		var missing *ssh.PassphraseMissingError
		switch {
		case errors.Is(err, x509.IncorrectPasswordError):
			return nil, ErrWrongPassphrase
		case errors.As(err, &missing):
			return nil, ErrPassphraseRequired
		}
		return nil, malformed("OpenSSH private key: %v", err)
	}
	switch k := raw.(type) {
	case *ed25519.PrivateKey:
		return NewPrivateKey(*k)
	case ed25519.PrivateKey:
		return NewPrivateKey(k)
	default:
		return nil, fmt.Errorf("%w: OpenSSH key of type %T, want ed25519", ErrUnsupportedKey, raw)
	}
}

// openSSHKDF reads the cipher name and bcrypt rounds from the
// "openssh-key-v1" header, before any expensive work.
func openSSHKDF(der []byte) (string, uint32, error) {
	const magic = "openssh-key-v1\x00"
	if !bytes.HasPrefix(der, []byte(magic)) {
		return "", 0, malformed("OpenSSH private key: bad magic")
	}
	b := der[len(magic):]
	str := func() ([]byte, bool) {
		if len(b) < 4 {
			return nil, false
		}
		n := binary.BigEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-4) {
			return nil, false
		}
		s := b[4 : 4+n]
		b = b[4+n:]
		return s, true
	}
	cipherName, ok1 := str()
	kdfName, ok2 := str()
	kdfOpts, ok3 := str()
	if !ok1 || !ok2 || !ok3 {
		return "", 0, malformed("OpenSSH private key: truncated header")
	}
	if string(cipherName) == "none" {
		return "none", 0, nil
	}
	if string(kdfName) != "bcrypt" {
		return "", 0, fmt.Errorf("%w: OpenSSH KDF %q", ErrUnsupportedKey, kdfName)
	}
	b = kdfOpts
	if _, ok := str(); !ok || len(b) != 4 {
		return "", 0, malformed("OpenSSH private key: bad KDF options")
	}
	return string(cipherName), binary.BigEndian.Uint32(b), nil
}

// ParsePublicKey reads a public key in any supported format, detected from
// its content:
//
//   - PKIX PEM ("BEGIN PUBLIC KEY"), as written by openssl;
//   - an OpenSSH "ssh-ed25519 AAAA... comment" line (a .pub file or an
//     authorized_keys line);
//   - a minisign public key file (untrusted comment line + base64 line), or
//     just its base64 line (the string `minisign -P` takes).
//
// Minisign keys keep their key id; others get DefaultKeyID.
func ParsePublicKey(data []byte) (*PublicKey, error) {
	if len(data) > MaxKeyFileSize {
		return nil, malformed("key file larger than %d bytes", MaxKeyFileSize)
	}
	trimmed := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(trimmed, []byte("-----BEGIN")):
		block, rest := pem.Decode(trimmed)
		if block == nil {
			return nil, malformed("bad PEM")
		}
		if len(bytes.TrimSpace(rest)) != 0 {
			return nil, malformed("data after the PEM block")
		}
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("%w: PEM block %q, want PUBLIC KEY", ErrUnsupportedKey, block.Type)
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, malformed("PKIX: %v", err)
		}
		ek, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%w: PKIX key of type %T, want Ed25519", ErrUnsupportedKey, k)
		}
		return NewPublicKey(ek)
	case bytes.HasPrefix(trimmed, []byte("ssh-")) || bytes.HasPrefix(trimmed, []byte("ecdsa-")) || bytes.HasPrefix(trimmed, []byte("sk-")):
		pk, _, _, rest, err := ssh.ParseAuthorizedKey(trimmed)
		if err != nil {
			return nil, malformed("OpenSSH public key: %v", err)
		}
		if len(bytes.TrimSpace(rest)) != 0 {
			return nil, malformed("more than one OpenSSH public key")
		}
		if pk.Type() != ssh.KeyAlgoED25519 {
			return nil, fmt.Errorf("%w: OpenSSH key type %s, want ssh-ed25519", ErrUnsupportedKey, pk.Type())
		}
		cpk, ok := pk.(ssh.CryptoPublicKey)
		if !ok {
			return nil, fmt.Errorf("%w: OpenSSH key type %s", ErrUnsupportedKey, pk.Type())
		}
		ek, ok := cpk.CryptoPublicKey().(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%w: OpenSSH key type %s", ErrUnsupportedKey, pk.Type())
		}
		return NewPublicKey(ek)
	default:
		return parseMinisignPublicKey(trimmed)
	}
}

// ParsePublicKeys reads several public keys, one per argument (for a
// trusted key list).
func ParsePublicKeys(files ...[]byte) ([]*PublicKey, error) {
	out := make([]*PublicKey, 0, len(files))
	for i, f := range files {
		k, err := ParsePublicKey(f)
		if err != nil {
			return nil, fmt.Errorf("public key %d: %w", i, err)
		}
		out = append(out, k)
	}
	return out, nil
}

// Fingerprint returns the hex SHA-256 of the raw public key, for display.
func (p *PublicKey) Fingerprint() string {
	h := sha256.Sum256(p.Key)
	return hex.EncodeToString(h[:])
}

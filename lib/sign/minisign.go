package sign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/scrypt"
)

// minisign formats (https://jedisct1.github.io/minisign/):
//
//	public key: "untrusted comment: ..." line, then base64 of
//	            "Ed" || key id (8) || public key (32)
//	secret key: "untrusted comment: ..." line, then base64 of
//	            "Ed" || kdf ("Sc" or 0x0000) || "B2" || salt (32) ||
//	            opslimit (u64 LE) || memlimit (u64 LE) ||
//	            [key id (8) || secret key (64) || checksum (32)]
//	            where the bracket is XOR-ed with scrypt(password, salt) when
//	            kdf is "Sc", and checksum = BLAKE2b-256("Ed" || key id ||
//	            secret key) (minisign leaves it zero in unencrypted keys)
//	signature:  "untrusted comment: ..." line,
//	            base64("ED" || key id (8) || Ed25519(BLAKE2b-512(file))),
//	            "trusted comment: ..." line,
//	            base64(Ed25519(signature (64) || trusted comment))
const (
	minisignUntrustedPrefix = "untrusted comment: "
	minisignTrustedPrefix   = "trusted comment: "
	minisignPublicKeyLen    = 2 + 8 + 32
	minisignSecretKeyLen    = 2 + 2 + 2 + 32 + 8 + 8 + 8 + 64 + 32
	minisignSigLen          = 2 + 8 + 64
	// MaxTrustedCommentLen matches minisign's limit (8192 bytes with the
	// prefix and line end).
	MaxTrustedCommentLen = 8192 - len(minisignTrustedPrefix) - 2
	// MaxUntrustedCommentLen matches minisign's 1024-byte comment lines.
	MaxUntrustedCommentLen = 1024 - len(minisignUntrustedPrefix) - 2
	maxMinisignFileLen     = 16 << 10
)

// Caps on the scrypt parameters of encrypted minisign secret keys.
// minisign's own keys use N=2^20, r=8, p=1 (1 GiB, its "sensitive" limits),
// which these allow; anything costlier is refused before scrypt runs.
const (
	MaxMinisignScryptMemory = 1 << 30 // bytes: 128*r*N
	MaxMinisignScryptWork   = 1 << 22 // N*p (twice minisign's default)
)

// ----- lines and comments -----

// splitLines splits text into lines (LF or CRLF), dropping one final empty
// line.
func splitLines(b []byte) []string {
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// checkComment applies minisign's printable rule: UTF-8, tab allowed, no
// other control characters.
func checkComment(c string, maxLen int) error {
	if len(c) > maxLen {
		return malformed("comment of %d bytes exceeds %d", len(c), maxLen)
	}
	if !utf8.ValidString(c) {
		return malformed("comment is not valid UTF-8")
	}
	for _, r := range c {
		if r != '\t' && (r < 0x20 || r == 0x7f) {
			return malformed("comment contains control character %U", r)
		}
	}
	return nil
}

func decodeB64Line(line string, want int, what string) ([]byte, error) {
	line = strings.TrimSpace(line)
	if base64.StdEncoding.DecodedLen(len(line)) > want+3 {
		return nil, malformed("%s: line too long", what)
	}
	b, err := base64.StdEncoding.DecodeString(line)
	if err != nil {
		return nil, malformed("%s: bad base64: %v", what, err)
	}
	if len(b) != want {
		return nil, malformed("%s: %d bytes, want %d", what, len(b), want)
	}
	return b, nil
}

// ----- public keys -----

func parseMinisignPublicKey(trimmed []byte) (*PublicKey, error) {
	lines := splitLines(trimmed)
	var b64 string
	switch {
	case len(lines) == 1:
		b64 = lines[0]
	case len(lines) == 2 && strings.HasPrefix(lines[0], minisignUntrustedPrefix):
		b64 = lines[1]
	default:
		return nil, malformed("not a PEM, OpenSSH or minisign public key")
	}
	b, err := decodeB64Line(b64, minisignPublicKeyLen, "minisign public key")
	if err != nil {
		return nil, err
	}
	if string(b[:2]) != "Ed" {
		return nil, fmt.Errorf("%w: minisign signature algorithm %q", ErrUnsupportedKey, b[:2])
	}
	p := &PublicKey{Key: ed25519.PublicKey(bytes.Clone(b[10:]))}
	copy(p.ID[:], b[2:10])
	return p, nil
}

// MarshalMinisignPublicKey writes p as a minisign public key file (which
// `minisign -V -p FILE` reads). comment "" gives minisign's default
// "minisign public key <ID>".
func MarshalMinisignPublicKey(p *PublicKey, comment string) ([]byte, error) {
	if comment == "" {
		comment = "minisign public key " + p.ID.String()
	}
	if err := checkComment(comment, MaxUntrustedCommentLen); err != nil {
		return nil, err
	}
	return []byte(minisignUntrustedPrefix + comment + "\n" + MinisignPublicKeyString(p) + "\n"), nil
}

// MinisignPublicKeyString returns the base64 line alone (`minisign -P`).
func MinisignPublicKeyString(p *PublicKey) string {
	raw := append(append([]byte("Ed"), p.ID[:]...), p.Key...)
	return base64.StdEncoding.EncodeToString(raw)
}

// ----- secret keys -----

func minisignChecksum(id []byte, sk []byte) []byte {
	h, _ := blake2b.New256(nil)
	h.Write([]byte("Ed"))
	h.Write(id)
	h.Write(sk)
	return h.Sum(nil)
}

// scryptParams reproduces libsodium's pickparams for
// crypto_pwhash_scryptsalsa208sha256 (which minisign uses), from opslimit
// and memlimit to N (as log2), r and p.
func scryptParams(opslimit, memlimit uint64) (logN uint, r, p uint64) {
	if opslimit < 32768 {
		opslimit = 32768
	}
	r = 8
	// logN is the smallest of 1..63 with 2^logN > maxN/2.
	log2 := func(maxN uint64) uint {
		n := uint(1)
		for n < 63 && uint64(1)<<n <= maxN/2 {
			n++
		}
		return n
	}
	if opslimit < memlimit/32 {
		return log2(opslimit / (r * 4)), r, 1
	}
	logN = log2(memlimit / (r * 128))
	maxrp := (opslimit / 4) / (uint64(1) << logN)
	if maxrp > 0x3fffffff {
		maxrp = 0x3fffffff
	}
	return logN, r, maxrp / r
}

func parseMinisignSecretKey(trimmed, passphrase []byte) (*PrivateKey, error) {
	lines := splitLines(trimmed)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], minisignUntrustedPrefix) {
		return nil, malformed("minisign secret key: want a comment line and a base64 line")
	}
	b, err := decodeB64Line(lines[1], minisignSecretKeyLen, "minisign secret key")
	if err != nil {
		return nil, err
	}
	if string(b[0:2]) != "Ed" {
		return nil, fmt.Errorf("%w: minisign signature algorithm %q", ErrUnsupportedKey, b[0:2])
	}
	if string(b[4:6]) != "B2" {
		return nil, fmt.Errorf("%w: minisign checksum algorithm %q", ErrUnsupportedKey, b[4:6])
	}
	salt := b[6:38]
	opslimit := binary.LittleEndian.Uint64(b[38:46])
	memlimit := binary.LittleEndian.Uint64(b[46:54])
	sec := bytes.Clone(b[54:])
	encrypted := false
	switch string(b[2:4]) {
	case "\x00\x00":
	case "Sc":
		encrypted = true
		if passphrase == nil {
			return nil, fmt.Errorf("%w (minisign key encrypted with scrypt)", ErrPassphraseRequired)
		}
		logN, r, p := scryptParams(opslimit, memlimit)
		if logN >= 40 || 128*r<<logN > MaxMinisignScryptMemory || p == 0 || (uint64(1)<<logN)*p > MaxMinisignScryptWork {
			return nil, fmt.Errorf("%w: minisign key scrypt N=2^%d r=%d p=%d exceeds the caps", ErrParamsOutOfRange, logN, r, p)
		}
		stream, err := scrypt.Key(passphrase, salt, 1<<logN, int(r), int(p), len(sec))
		if err != nil {
			return nil, fmt.Errorf("%w: scrypt: %v", ErrParamsOutOfRange, err)
		}
		subtle.XORBytes(sec, sec, stream)
	default:
		return nil, fmt.Errorf("%w: minisign KDF %q", ErrUnsupportedKey, b[2:4])
	}
	id, sk, chk := sec[:8], sec[8:72], sec[72:]
	want := minisignChecksum(id, sk)
	if subtle.ConstantTimeCompare(want, chk) != 1 {
		if encrypted {
			return nil, ErrWrongPassphrase
		}
		// minisign writes a zero checksum for unencrypted keys.
		if !bytes.Equal(chk, make([]byte, 32)) {
			return nil, malformed("minisign secret key: checksum mismatch")
		}
	}
	k := &PrivateKey{Key: ed25519.PrivateKey(bytes.Clone(sk))}
	if err := k.checkConsistent(); err != nil {
		return nil, err
	}
	copy(k.ID[:], id)
	return k, nil
}

// MarshalMinisignSecretKey writes k as an unencrypted minisign secret key
// file, as `minisign -G -W` does (checksum included; minisign ignores it).
// Store it with mode 0600.
func MarshalMinisignSecretKey(k *PrivateKey, comment string) ([]byte, error) {
	if comment == "" {
		comment = "minisign secret key"
	}
	if err := checkComment(comment, MaxUntrustedCommentLen); err != nil {
		return nil, err
	}
	raw := make([]byte, 0, minisignSecretKeyLen)
	raw = append(raw, "Ed\x00\x00B2"...)
	raw = append(raw, make([]byte, 32+8+8)...)
	raw = append(raw, k.ID[:]...)
	raw = append(raw, k.Key...)
	raw = append(raw, minisignChecksum(k.ID[:], k.Key)...)
	return []byte(minisignUntrustedPrefix + comment + "\n" + base64.StdEncoding.EncodeToString(raw) + "\n"), nil
}

// ----- signatures -----

// MinisignSignature is a parsed .minisig file.
type MinisignSignature struct {
	UntrustedComment string
	Algorithm        string // "ED" (prehashed, BLAKE2b-512) or "Ed" (legacy)
	KeyID            KeyID
	Signature        [64]byte
	TrustedComment   string
	GlobalSignature  [64]byte
}

// MaxLegacyMessageSize caps the message size for legacy ("Ed", not
// prehashed) signatures, which must hold the whole message in memory.
const MaxLegacyMessageSize = 64 << 20

// ParseMinisignSignature parses a .minisig file. It is safe on hostile
// input; errors wrap ErrMalformed.
func ParseMinisignSignature(data []byte) (*MinisignSignature, error) {
	if len(data) > maxMinisignFileLen {
		return nil, malformed("signature file larger than %d bytes", maxMinisignFileLen)
	}
	lines := splitLines(data)
	if len(lines) != 4 {
		return nil, malformed("minisign signature: %d lines, want 4", len(lines))
	}
	if !strings.HasPrefix(lines[0], minisignUntrustedPrefix) {
		return nil, malformed("minisign signature: missing untrusted comment line")
	}
	if !strings.HasPrefix(lines[2], minisignTrustedPrefix) {
		return nil, malformed("minisign signature: missing trusted comment line")
	}
	s := &MinisignSignature{
		UntrustedComment: lines[0][len(minisignUntrustedPrefix):],
		TrustedComment:   lines[2][len(minisignTrustedPrefix):],
	}
	if err := checkComment(s.TrustedComment, MaxTrustedCommentLen); err != nil {
		return nil, fmt.Errorf("trusted comment: %w", err)
	}
	b, err := decodeB64Line(lines[1], minisignSigLen, "minisign signature")
	if err != nil {
		return nil, err
	}
	s.Algorithm = string(b[:2])
	if s.Algorithm != "ED" && s.Algorithm != "Ed" {
		return nil, fmt.Errorf("%w: minisign signature algorithm %q", ErrUnsupportedKey, s.Algorithm)
	}
	copy(s.KeyID[:], b[2:10])
	copy(s.Signature[:], b[10:])
	g, err := decodeB64Line(lines[3], 64, "minisign global signature")
	if err != nil {
		return nil, err
	}
	copy(s.GlobalSignature[:], g)
	return s, nil
}

// Marshal writes the signature in minisign's .minisig text format.
func (s *MinisignSignature) Marshal() ([]byte, error) {
	if strings.ContainsAny(s.UntrustedComment, "\r\n") || len(s.UntrustedComment) > MaxUntrustedCommentLen {
		return nil, malformed("untrusted comment must be one line of at most %d bytes", MaxUntrustedCommentLen)
	}
	if err := checkComment(s.TrustedComment, MaxTrustedCommentLen); err != nil {
		return nil, err
	}
	raw := make([]byte, 0, minisignSigLen)
	raw = append(raw, s.Algorithm...)
	raw = append(raw, s.KeyID[:]...)
	raw = append(raw, s.Signature[:]...)
	var out bytes.Buffer
	out.WriteString(minisignUntrustedPrefix + s.UntrustedComment + "\n")
	out.WriteString(base64.StdEncoding.EncodeToString(raw) + "\n")
	out.WriteString(minisignTrustedPrefix + s.TrustedComment + "\n")
	out.WriteString(base64.StdEncoding.EncodeToString(s.GlobalSignature[:]) + "\n")
	return out.Bytes(), nil
}

func blake2b512(r io.Reader) ([]byte, error) {
	h, _ := blake2b.New512(nil)
	if _, err := io.Copy(h, r); err != nil {
		return nil, fmt.Errorf("sign: reading message: %w", err)
	}
	return h.Sum(nil), nil
}

// SignMinisign makes a minisign prehashed ("ED") detached signature of the
// whole stream r, returned as .minisig text that `minisign -V` verifies.
// The stream is read once (BLAKE2b-512). trustedComment "" gives
// "timestamp:<unix time>"; untrustedComment "" gives minisign's default.
func SignMinisign(r io.Reader, key *PrivateKey, trustedComment, untrustedComment string) ([]byte, error) {
	if trustedComment == "" {
		trustedComment = "timestamp:" + strconv.FormatInt(time.Now().Unix(), 10) + "\thashed"
	}
	if untrustedComment == "" {
		untrustedComment = "signature from apr-sign secret key"
	}
	if err := checkComment(trustedComment, MaxTrustedCommentLen); err != nil {
		return nil, fmt.Errorf("trusted comment: %w", err)
	}
	if err := checkComment(untrustedComment, MaxUntrustedCommentLen); err != nil {
		return nil, fmt.Errorf("untrusted comment: %w", err)
	}
	digest, err := blake2b512(r)
	if err != nil {
		return nil, err
	}
	s := &MinisignSignature{
		UntrustedComment: untrustedComment,
		Algorithm:        "ED",
		KeyID:            key.ID,
		TrustedComment:   trustedComment,
	}
	copy(s.Signature[:], ed25519.Sign(key.Key, digest))
	global := append(bytes.Clone(s.Signature[:]), trustedComment...)
	copy(s.GlobalSignature[:], ed25519.Sign(key.Key, global))
	return s.Marshal()
}

// VerifyMinisign checks a .minisig signature of the stream r against the
// trusted keys: the key id must name a trusted key, the signature over the
// BLAKE2b-512 of the stream (or over the message itself for legacy "Ed"
// signatures, at most MaxLegacyMessageSize bytes) and the global signature
// over the trusted comment must both verify. It returns the parsed
// signature (with its now authenticated trusted comment) and the key that
// verified it. Failures wrap ErrSignatureInvalid.
func VerifyMinisign(r io.Reader, sig []byte, trusted []*PublicKey) (*MinisignSignature, *PublicKey, error) {
	s, err := ParseMinisignSignature(sig)
	if err != nil {
		return nil, nil, err
	}
	var msg []byte
	if s.Algorithm == "ED" {
		if msg, err = blake2b512(r); err != nil {
			return nil, nil, err
		}
	} else {
		msg, err = io.ReadAll(io.LimitReader(r, MaxLegacyMessageSize+1))
		if err != nil {
			return nil, nil, fmt.Errorf("sign: reading message: %w", err)
		}
		if len(msg) > MaxLegacyMessageSize {
			return nil, nil, fmt.Errorf("%w: legacy minisign signature on a message over %d bytes; re-sign with a prehashed signature", ErrUnsupportedKey, MaxLegacyMessageSize)
		}
	}
	global := append(bytes.Clone(s.Signature[:]), s.TrustedComment...)
	k, idMatched := findSigner(trusted, s.KeyID, msg, s.Signature[:])
	switch {
	case k == nil && !idMatched:
		return nil, nil, fmt.Errorf("%w: %w: key id %s", ErrSignatureInvalid, ErrUntrustedKey, s.KeyID)
	case k == nil:
		return nil, nil, fmt.Errorf("%w: minisign signature does not match the file (key id %s)", ErrSignatureInvalid, s.KeyID)
	case !ed25519.Verify(k.Key, global, s.GlobalSignature[:]):
		return nil, nil, fmt.Errorf("%w: minisign global signature (trusted comment) does not verify", ErrSignatureInvalid)
	}
	return s, k, nil
}

// findSigner returns the first trusted key under which sig verifies msg, trying
// those with the given id first: the others are tried too, because one key can
// carry different ids (minisign's random key number, or DefaultKeyID when read
// from PEM or OpenSSH files). idMatched says whether a trusted key has the id.
func findSigner(trusted []*PublicKey, id KeyID, msg, sig []byte) (signer *PublicKey, idMatched bool) {
	for _, k := range orderByID(trusted, id) {
		idMatched = idMatched || k.ID == id
		if ed25519.Verify(k.Key, msg, sig) {
			return k, idMatched
		}
	}
	return nil, idMatched
}

// orderByID returns the usable trusted keys, those with the given id first.
func orderByID(trusted []*PublicKey, id KeyID) []*PublicKey {
	var first, rest []*PublicKey
	for _, k := range trusted {
		if k == nil || len(k.Key) != ed25519.PublicKeySize {
			continue
		}
		if k.ID == id {
			first = append(first, k)
		} else {
			rest = append(rest, k)
		}
	}
	return append(first, rest...)
}

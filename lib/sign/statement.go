package sign

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"time"
)

// StatementDomain starts every signed statement message, so an APR
// signature can never be mistaken for a signature of anything else.
const StatementDomain = "apr-signature-v1\x00"

// MaxCommentLen caps the signed comment of a statement.
const MaxCommentLen = 1024

// SignatureFormatVersion is the first byte of an encoded Signature.
const SignatureFormatVersion = 1

// Statement holds the signed attributes that accompany a digest.
type Statement struct {
	KeyID   KeyID     // id of the signing key (a hint for finding it)
	Time    time.Time // signing time, kept with one-second precision
	Comment string    // UTF-8, tab allowed, no other control characters
}

// Signature is an Ed25519 signature over a domain-separated statement about
// a 32-byte digest (for APR files: the digest of the canonical content
// manifest, so re-compression does not break it). The digest itself is not
// stored: the verifier recomputes it.
type Signature struct {
	Statement
	Sig [ed25519.SignatureSize]byte
}

// attrs is the canonical encoding of the signed attributes:
//
//	key id (8) || time (i64 BE, Unix seconds) || comment length (u16 BE) || comment
func (st *Statement) attrs() ([]byte, error) {
	if err := checkComment(st.Comment, MaxCommentLen); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 18+len(st.Comment))
	b = append(b, st.KeyID[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(st.Time.Unix()))
	b = binary.BigEndian.AppendUint16(b, uint16(len(st.Comment)))
	return append(b, st.Comment...), nil
}

// StatementMessage returns the exact bytes that are signed:
//
//	"apr-signature-v1" 0x00 || digest (32) || attrs
func StatementMessage(digest [32]byte, st *Statement) ([]byte, error) {
	a, err := st.attrs()
	if err != nil {
		return nil, err
	}
	m := make([]byte, 0, len(StatementDomain)+32+len(a))
	m = append(m, StatementDomain...)
	m = append(m, digest[:]...)
	return append(m, a...), nil
}

// Sign signs digest with key, recording key.ID, t (rounded down to the
// second) and comment.
func Sign(key *PrivateKey, digest [32]byte, comment string, t time.Time) (*Signature, error) {
	if key == nil || len(key.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("sign: invalid private key")
	}
	s := &Signature{Statement: Statement{KeyID: key.ID, Time: time.Unix(t.Unix(), 0).UTC(), Comment: comment}}
	m, err := StatementMessage(digest, &s.Statement)
	if err != nil {
		return nil, err
	}
	copy(s.Sig[:], ed25519.Sign(key.Key, m))
	return s, nil
}

// Verify checks sig over digest against the trusted keys and returns the
// key that verified it. A key embedded in a file must never be put in
// trusted just because it is there. Failures wrap ErrSignatureInvalid (and
// ErrUntrustedKey when no trusted key has the signature's key id).
func Verify(sig *Signature, digest [32]byte, trusted []*PublicKey) (*PublicKey, error) {
	if sig == nil {
		return nil, fmt.Errorf("%w: no signature", ErrSignatureInvalid)
	}
	m, err := StatementMessage(digest, &sig.Statement)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSignatureInvalid, err)
	}
	k, idMatched := findSigner(trusted, sig.KeyID, m, sig.Sig[:])
	if k != nil {
		return k, nil
	}
	if !idMatched {
		return nil, fmt.Errorf("%w: %w: key id %s", ErrSignatureInvalid, ErrUntrustedKey, sig.KeyID)
	}
	return nil, fmt.Errorf("%w: signature by key %s does not match the content", ErrSignatureInvalid, sig.KeyID)
}

// MarshalBinary encodes the signature as
//
//	version (1 = 0x01) || attrs || signature (64)
func (s *Signature) MarshalBinary() ([]byte, error) {
	a, err := s.attrs()
	if err != nil {
		return nil, err
	}
	out := append([]byte{SignatureFormatVersion}, a...)
	return append(out, s.Sig[:]...), nil
}

// ParseSignature decodes MarshalBinary's output. Hostile-input safe; errors
// wrap ErrMalformed.
func ParseSignature(b []byte) (*Signature, error) {
	if len(b) < 1+18+64 {
		return nil, malformed("signature of %d bytes is too short", len(b))
	}
	if b[0] != SignatureFormatVersion {
		return nil, malformed("unsupported signature version %d", b[0])
	}
	s := &Signature{}
	copy(s.KeyID[:], b[1:9])
	s.Time = time.Unix(int64(binary.BigEndian.Uint64(b[9:17])), 0).UTC()
	n := int(binary.BigEndian.Uint16(b[17:19]))
	if n > MaxCommentLen || len(b) != 19+n+64 {
		return nil, malformed("signature comment length %d does not match the %d-byte encoding", n, len(b))
	}
	s.Comment = string(b[19 : 19+n])
	if err := checkComment(s.Comment, MaxCommentLen); err != nil {
		return nil, err
	}
	copy(s.Sig[:], b[19+n:])
	return s, nil
}

package sign

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"time"
)

// LicenseDomain starts the signed message of a license block.
const LicenseDomain = "apr-license-v1\x00"

// LicenseFormatVersion is the first byte of an encoded license block.
const LicenseFormatVersion = 1

// Limits of license fields.
const (
	MaxLicenseeLen = 1024
	MaxTierLen     = 64
)

// LicenseClockSkew is how far in the future IssuedAt may be before
// VerifyLicense reports ErrLicenseNotYetValid.
const LicenseClockSkew = 5 * time.Minute

// License is a license block signed by its issuer. Times have one-second
// precision; a zero ExpiresAt means the license does not expire.
type License struct {
	Licensee    string
	Tier        string
	Seats       uint32
	IssuedAt    time.Time
	ExpiresAt   time.Time
	IssuerKeyID KeyID
	Signature   [ed25519.SignatureSize]byte
}

// body is the canonical encoding of the signed fields (integers
// big-endian):
//
//	version u8 = 1 || licensee len u16 || licensee || tier len u8 || tier ||
//	seats u32 || issued i64 (Unix s) || expires i64 (Unix s, 0 = never) ||
//	issuer key id (8)
func (l *License) body() ([]byte, error) {
	if l.Licensee == "" {
		return nil, malformed("license has no licensee")
	}
	if err := checkComment(l.Licensee, MaxLicenseeLen); err != nil {
		return nil, fmt.Errorf("licensee: %w", err)
	}
	if err := checkComment(l.Tier, MaxTierLen); err != nil {
		return nil, fmt.Errorf("tier: %w", err)
	}
	if l.IssuedAt.IsZero() || l.IssuedAt.Unix() <= 0 {
		return nil, malformed("license has no issue time")
	}
	var expires int64
	if !l.ExpiresAt.IsZero() {
		expires = l.ExpiresAt.Unix()
		if expires <= l.IssuedAt.Unix() {
			return nil, malformed("license expires before it is issued")
		}
	}
	b := []byte{LicenseFormatVersion}
	b = binary.BigEndian.AppendUint16(b, uint16(len(l.Licensee)))
	b = append(b, l.Licensee...)
	b = append(b, byte(len(l.Tier)))
	b = append(b, l.Tier...)
	b = binary.BigEndian.AppendUint32(b, l.Seats)
	b = binary.BigEndian.AppendUint64(b, uint64(l.IssuedAt.Unix()))
	b = binary.BigEndian.AppendUint64(b, uint64(expires))
	return append(b, l.IssuerKeyID[:]...), nil
}

// SignLicense returns a copy of l with IssuerKeyID set to issuer's id,
// times rounded down to the second, and signed by issuer over
// LicenseDomain || body.
func SignLicense(l License, issuer *PrivateKey) (*License, error) {
	if issuer == nil || len(issuer.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("sign: invalid issuer key")
	}
	l.IssuerKeyID = issuer.ID
	l.IssuedAt = time.Unix(l.IssuedAt.Unix(), 0).UTC()
	if !l.ExpiresAt.IsZero() {
		l.ExpiresAt = time.Unix(l.ExpiresAt.Unix(), 0).UTC()
	}
	b, err := l.body()
	if err != nil {
		return nil, err
	}
	copy(l.Signature[:], ed25519.Sign(issuer.Key, append([]byte(LicenseDomain), b...)))
	return &l, nil
}

// MarshalBinary encodes the license block: body || signature (64).
func (l *License) MarshalBinary() ([]byte, error) {
	b, err := l.body()
	if err != nil {
		return nil, err
	}
	return append(b, l.Signature[:]...), nil
}

// ParseLicense decodes a license block. It does not verify it (use
// VerifyLicense). Hostile-input safe; errors wrap ErrMalformed.
func ParseLicense(b []byte) (*License, error) {
	const fixed = 1 + 2 + 1 + 4 + 8 + 8 + 8 + 64
	if len(b) < fixed {
		return nil, malformed("license block of %d bytes is too short", len(b))
	}
	if b[0] != LicenseFormatVersion {
		return nil, malformed("unsupported license version %d", b[0])
	}
	off := 1
	next := func(n int) []byte { // n more bytes; the lengths were checked against len(b)
		p := b[off : off+n]
		off += n
		return p
	}
	nl := int(binary.BigEndian.Uint16(next(2)))
	if nl > MaxLicenseeLen || len(b) < fixed+nl {
		return nil, malformed("bad licensee length %d", nl)
	}
	l := &License{Licensee: string(next(nl))}
	nt := int(next(1)[0])
	if nt > MaxTierLen || len(b) != fixed+nl+nt {
		return nil, malformed("license block length does not match its fields")
	}
	l.Tier = string(next(nt))
	l.Seats = binary.BigEndian.Uint32(next(4))
	l.IssuedAt = time.Unix(int64(binary.BigEndian.Uint64(next(8))), 0).UTC()
	if exp := int64(binary.BigEndian.Uint64(next(8))); exp != 0 {
		l.ExpiresAt = time.Unix(exp, 0).UTC()
	}
	copy(l.IssuerKeyID[:], next(8))
	copy(l.Signature[:], b[off:])
	// Re-validate the fields exactly as the signer did.
	if _, err := l.body(); err != nil {
		return nil, err
	}
	return l, nil
}

// VerifyLicense checks l against the trusted issuer keys at time now, and
// returns the issuer key. Errors, in the order they are checked:
// ErrLicenseUnknownIssuer (no trusted key has the issuer's key id and none
// verifies the signature), ErrSignatureInvalid (the block was altered or
// forged), ErrLicenseNotYetValid, ErrLicenseExpired.
func VerifyLicense(l *License, trusted []*PublicKey, now time.Time) (*PublicKey, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: no license", ErrSignatureInvalid)
	}
	b, err := l.body()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSignatureInvalid, err)
	}
	msg := append([]byte(LicenseDomain), b...)
	issuer, idMatched := findSigner(trusted, l.IssuerKeyID, msg, l.Signature[:])
	if issuer == nil {
		if !idMatched {
			return nil, fmt.Errorf("%w: issuer key id %s", ErrLicenseUnknownIssuer, l.IssuerKeyID)
		}
		return nil, fmt.Errorf("%w: license signature by %s does not verify", ErrSignatureInvalid, l.IssuerKeyID)
	}
	if l.IssuedAt.After(now.Add(LicenseClockSkew)) {
		return nil, fmt.Errorf("%w: issued %s", ErrLicenseNotYetValid, l.IssuedAt.Format(time.RFC3339))
	}
	if !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt) {
		return nil, fmt.Errorf("%w: expired %s", ErrLicenseExpired, l.ExpiresAt.Format(time.RFC3339))
	}
	return issuer, nil
}

// Package signed is apr's signatures and licenses of tensor streams. A signature
// block holds a sign.Signature (sign.Signature.MarshalBinary) over the digest of the
// model's canonical content manifest (package manifest): model type, metadata, and
// each tensor's name, dtype, shape and SHA-256 of its raw bytes. It therefore
// survives re-compression and decompression, and breaks on any change to metadata or
// tensors. A file may hold several (author, CI).
//
// Layer 5: it imports lib/sign, lib/container and lib/manifest (layer 4), never the
// models, the converters or the façade lib/apr (which keeps the model-level
// SaveSigned, LoadVerified, ... on top of this package).
package signed

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/manifest"
	"github.com/apr-go/apr/lib/sign"
)

// A license block binds a sign.License to the content it came with:
//
//	payload = 0x01 (version) || license length (u32 BE) || license (sign.License) ||
//	          binding (sign.Signature, by the issuer's key)
//	binding digest = SHA-256("apr-license-binding-v1" 0x00 || content digest (32) ||
//	          license length (u32 BE) || license)
//
// so a license cannot be moved into another model, nor another license into this
// one, without the issuer's key. A file holds at most one license; adding a license
// replaces the previous one.

// LicenseBindingDomain starts the binding digest of a license block.
const LicenseBindingDomain = "apr-license-binding-v1\x00"

const licenseBlockVersion = 1

var (
	// ErrLicenseInvalid is wrapped by every license failure (missing, expired, not
	// yet valid, unknown issuer, forged, bound to other content); the sign package's
	// sentinels (sign.ErrLicenseExpired, ...) are wrapped too when they apply.
	ErrLicenseInvalid = errors.New("license invalid")
	// ErrLicenseMissing: a license is required and the file has none.
	ErrLicenseMissing = errors.New("no license block")
)

// Option configures a signature.
type Option func(*signConfig)

type signConfig struct {
	comment  string
	time     time.Time
	unsealer container.Unsealer
}

// WithComment sets the signed comment (UTF-8, tab allowed, at most
// sign.MaxCommentLen bytes).
func WithComment(c string) Option { return func(s *signConfig) { s.comment = c } }

// WithSignTime sets the signing time (default: SOURCE_DATE_EPOCH when set, else now).
func WithSignTime(t time.Time) Option { return func(s *signConfig) { s.time = t } }

// WithSealedInput lets SignStream and LicenseStream sign a sealed stream: u (for
// instance NewUnsealer(identity)) decrypts the tensors so that their plaintext is
// hashed, while the sealed bytes pass through unchanged (the seal does not cover the
// SIGNED and LICENSED flags nor the signature and license blocks). The signature
// covers the plaintext content, as every apr signature does.
func WithSealedInput(u container.Unsealer) Option {
	return func(s *signConfig) { s.unsealer = u }
}

func newSignConfig(opts []Option) (*signConfig, error) {
	c := &signConfig{}
	for _, o := range opts {
		o(c)
	}
	if c.time.IsZero() {
		s, err := container.CreatedAt() // SOURCE_DATE_EPOCH or now, RFC 3339
		if err != nil {
			return nil, err
		}
		if c.time, err = time.Parse(time.RFC3339, s); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// SignatureBlock signs a content digest and returns it as a signature block.
func SignatureBlock(key *sign.PrivateKey, digest [32]byte, opts ...Option) (container.Block, *sign.Signature, error) {
	if key == nil {
		return container.Block{}, nil, errors.New("no signing key")
	}
	c, err := newSignConfig(opts)
	if err != nil {
		return container.Block{}, nil, err
	}
	s, err := sign.Sign(key, digest, c.comment, c.time)
	if err != nil {
		return container.Block{}, nil, err
	}
	b, err := s.MarshalBinary()
	if err != nil {
		return container.Block{}, nil, err
	}
	return container.Block{Kind: container.BlockSignature, Payload: b}, s, nil
}

// LicenseBlock signs lic with the issuer's key and binds it to a content digest.
func LicenseBlock(lic sign.License, issuer *sign.PrivateKey, digest [32]byte) (container.Block, *sign.License, error) {
	if issuer == nil {
		return container.Block{}, nil, errors.New("no issuer key")
	}
	if lic.IssuedAt.IsZero() {
		c, err := newSignConfig(nil)
		if err != nil {
			return container.Block{}, nil, err
		}
		lic.IssuedAt = c.time
	}
	signed, err := sign.SignLicense(lic, issuer)
	if err != nil {
		return container.Block{}, nil, err
	}
	lb, err := signed.MarshalBinary()
	if err != nil {
		return container.Block{}, nil, err
	}
	binding, err := sign.Sign(issuer, licenseBinding(digest, lb), "", signed.IssuedAt)
	if err != nil {
		return container.Block{}, nil, err
	}
	bb, err := binding.MarshalBinary()
	if err != nil {
		return container.Block{}, nil, err
	}
	p := make([]byte, 0, 5+len(lb)+len(bb))
	p = append(p, licenseBlockVersion)
	p = binary.BigEndian.AppendUint32(p, uint32(len(lb)))
	p = append(append(p, lb...), bb...)
	return container.Block{Kind: container.BlockLicense, Payload: p}, signed, nil
}

func licenseBinding(digest [32]byte, lic []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(LicenseBindingDomain))
	h.Write(digest[:])
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(lic))))
	h.Write(lic)
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// ParseLicenseBlock splits a license block's payload into the license and its
// binding signature. It does not verify them. Errors wrap sign.ErrMalformed.
func ParseLicenseBlock(payload []byte) (*sign.License, *sign.Signature, []byte, error) {
	if len(payload) < 5 || payload[0] != licenseBlockVersion {
		return nil, nil, nil, fmt.Errorf("%w: license block: unknown version or too short", sign.ErrMalformed)
	}
	n := binary.BigEndian.Uint32(payload[1:])
	if uint64(n) > uint64(len(payload)-5) {
		return nil, nil, nil, fmt.Errorf("%w: license block: license length %d beyond the block", sign.ErrMalformed, n)
	}
	lb := payload[5 : 5+n]
	lic, err := sign.ParseLicense(lb)
	if err != nil {
		return nil, nil, nil, err
	}
	binding, err := sign.ParseSignature(payload[5+n:])
	if err != nil {
		return nil, nil, nil, fmt.Errorf("license binding: %w", err)
	}
	return lic, binding, lb, nil
}

// Policy says which keys a verification trusts. At least one list must be given.
type Policy struct {
	// Signers: when not empty, a valid signature of the content by one of these
	// keys is required. A key found in the file is never trusted by itself.
	Signers []*sign.PublicKey
	// LicenseIssuers: when not empty, a valid, unexpired license issued by one of
	// these keys and bound to this content is required.
	LicenseIssuers []*sign.PublicKey
	// Now is the time licenses are checked at (zero: time.Now()).
	Now time.Time
	// Unsealer opens a sealed stream (NewUnsealer(identity)), whose signatures
	// cover the plaintext; nil for plain streams.
	Unsealer container.Unsealer
}

// SignatureCheck is the outcome for one signature block.
type SignatureCheck struct {
	Signature *sign.Signature // nil when the block does not parse
	Key       *sign.PublicKey // the trusted key that verified it; nil when it did not verify
	Err       error           // why it did not verify
}

// LicenseCheck is the outcome for a license block.
type LicenseCheck struct {
	License *sign.License   // nil when the block does not parse
	Issuer  *sign.PublicKey // the trusted issuer key; nil when it did not verify
	Err     error
}

// Verification is what a verification found.
type Verification struct {
	Digest     [32]byte // the content manifest digest
	Header     container.FileHeader
	Tensors    int
	Signatures []SignatureCheck // every signature block, in file order
	Licenses   []LicenseCheck   // every license block
	Signer     *SignatureCheck  // the first valid signature by a trusted signer
	License    *LicenseCheck    // the valid license, when issuers were given
}

// Verify reads a whole APR v2 stream (every checksum is verified on the way),
// computes its content digest and checks its blocks against p. It returns the
// Verification also on a policy failure, with an error wrapping
// sign.ErrSignatureInvalid (no trusted valid signature) or ErrLicenseInvalid.
func Verify(r io.Reader, p Policy) (*Verification, error) {
	if len(p.Signers) == 0 && len(p.LicenseIssuers) == 0 {
		return nil, errors.New("verification needs at least one trusted key")
	}
	var ro []container.ReaderOption
	if p.Unsealer != nil {
		ro = append(ro, container.WithUnsealer(p.Unsealer))
	}
	res, err := manifest.FromReader(r, ro...)
	if err != nil {
		return nil, err
	}
	return p.Check(res.Digest, res.Header, len(res.Entries), res.Blocks)
}

// Check checks blocks, those of a file whose content digest, header and tensor
// count are given, against p, as Verify does after reading a stream.
func (p Policy) Check(digest [32]byte, h container.FileHeader, tensors int, blocks []container.Block) (*Verification, error) {
	v := &Verification{Digest: digest, Header: h, Tensors: tensors}
	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	for _, b := range blocks {
		switch b.Kind {
		case container.BlockSignature:
			c := SignatureCheck{}
			c.Signature, c.Err = sign.ParseSignature(b.Payload)
			if c.Err == nil {
				if len(p.Signers) == 0 {
					c.Err = errors.New("not checked: no trusted signer keys given")
				} else {
					c.Key, c.Err = sign.Verify(c.Signature, digest, p.Signers)
				}
			}
			v.Signatures = append(v.Signatures, c)
		case container.BlockLicense:
			v.Licenses = append(v.Licenses, checkLicense(b.Payload, digest, p.LicenseIssuers, now))
		}
	}
	var errs []error
	if len(p.Signers) > 0 {
		for i := range v.Signatures {
			if v.Signatures[i].Key != nil {
				v.Signer = &v.Signatures[i]
				break
			}
		}
		if v.Signer == nil {
			errs = append(errs, noSignatureError(v.Signatures))
		}
	}
	if len(p.LicenseIssuers) > 0 {
		for i := range v.Licenses {
			if v.Licenses[i].Issuer != nil {
				v.License = &v.Licenses[i]
				break
			}
		}
		switch {
		case v.License != nil:
		case len(v.Licenses) == 0:
			errs = append(errs, fmt.Errorf("%w: %w", ErrLicenseInvalid, ErrLicenseMissing))
		default:
			errs = append(errs, fmt.Errorf("%w: %w", ErrLicenseInvalid, v.Licenses[0].Err))
		}
	}
	return v, errors.Join(errs...)
}

func checkLicense(payload []byte, digest [32]byte, issuers []*sign.PublicKey, now time.Time) LicenseCheck {
	lic, binding, lb, err := ParseLicenseBlock(payload)
	c := LicenseCheck{License: lic, Err: err}
	if err != nil {
		return c
	}
	if len(issuers) == 0 {
		c.Err = errors.New("not checked: no trusted issuer keys given")
		return c
	}
	issuer, err := sign.VerifyLicense(lic, issuers, now)
	if err != nil {
		c.Err = err
		return c
	}
	if _, err := sign.Verify(binding, licenseBinding(digest, lb), []*sign.PublicKey{issuer}); err != nil {
		c.Err = fmt.Errorf("the license was issued for other content: %w", err)
		return c
	}
	c.Issuer = issuer
	return c
}

func noSignatureError(checks []SignatureCheck) error {
	if len(checks) == 0 {
		return fmt.Errorf("%w: the file has no signature", sign.ErrSignatureInvalid)
	}
	var parts []string
	for _, c := range checks {
		id := "?"
		if c.Signature != nil {
			id = c.Signature.KeyID.String()
		}
		parts = append(parts, fmt.Sprintf("key %s: %s", id, reason(c.Err)))
	}
	return fmt.Errorf("%w: no valid signature from a trusted key (%s)", sign.ErrSignatureInvalid, strings.Join(parts, "; "))
}

// reason shortens a sign error for a one-line summary.
func reason(err error) string {
	switch {
	case errors.Is(err, sign.ErrUntrustedKey):
		return "key not trusted"
	case errors.Is(err, sign.ErrMalformed):
		return "malformed signature block"
	case errors.Is(err, sign.ErrSignatureInvalid):
		return "does not match the content"
	case err == nil:
		return "ok"
	}
	return err.Error()
}

// CheckOptions checks the options as a signature would (the comment included), so
// that a bad one fails before any byte is written.
func CheckOptions(opts ...Option) error {
	_, err := newSignConfigChecked(opts)
	return err
}

func newSignConfigChecked(opts []Option) (*signConfig, error) {
	c, err := newSignConfig(opts)
	if err != nil {
		return nil, err
	}
	if _, err := sign.StatementMessage([32]byte{}, &sign.Statement{Time: c.time, Comment: c.comment}); err != nil {
		return nil, fmt.Errorf("comment: %w", err)
	}
	return c, nil
}

// BlockInfo describes a signature or license block as it is written, without
// verifying it: nothing in it is trustworthy until Verify says so.
type BlockInfo struct {
	Kind    string    // "signature", "license", "seal MAC" or "unknown"
	Size    int       // payload bytes
	KeyID   string    // signing or issuing key id, as minisign prints ids
	Time    time.Time // signing time, or license issue time
	Comment string    // the signature's signed comment
	// License fields.
	Licensee  string
	Tier      string
	Seats     uint32
	ExpiresAt time.Time // zero: never
	Err       error     // the payload does not parse
}

// DescribeBlock decodes a block for display (apr-decode inspect), without
// verifying it.
func DescribeBlock(b container.Block) BlockInfo {
	bi := BlockInfo{Kind: "unknown", Size: len(b.Payload)}
	switch b.Kind {
	case container.BlockSignature:
		bi.Kind = "signature"
		s, err := sign.ParseSignature(b.Payload)
		if err != nil {
			bi.Err = err
			return bi
		}
		bi.KeyID, bi.Time, bi.Comment = s.KeyID.String(), s.Time, s.Comment
	case container.BlockSeal:
		bi.Kind = "seal MAC"
	case container.BlockLicense:
		bi.Kind = "license"
		l, _, _, err := ParseLicenseBlock(b.Payload)
		if err != nil {
			bi.Err = err
			return bi
		}
		bi.KeyID, bi.Time = l.IssuerKeyID.String(), l.IssuedAt
		bi.Licensee, bi.Tier, bi.Seats, bi.ExpiresAt = l.Licensee, l.Tier, l.Seats, l.ExpiresAt
	}
	return bi
}

// String is a one-line description, e.g.
//
//	signature by key 3F2A..., 2026-01-01T00:00:00Z, "release build" (unverified)
func (bi BlockInfo) String() string {
	if bi.Err != nil {
		return fmt.Sprintf("%s, %d bytes, unreadable: %v", bi.Kind, bi.Size, bi.Err)
	}
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch bi.Kind {
	case "signature":
		s := fmt.Sprintf("signature by key %s, %s", bi.KeyID, ts(bi.Time))
		if bi.Comment != "" {
			s += fmt.Sprintf(", %q", bi.Comment)
		}
		return s + " (unverified)"
	case "license":
		exp := "never expires"
		if !bi.ExpiresAt.IsZero() {
			exp = "expires " + ts(bi.ExpiresAt)
		}
		s := fmt.Sprintf("license for %q", bi.Licensee)
		if bi.Tier != "" {
			s += fmt.Sprintf(", tier %q", bi.Tier)
		}
		return s + fmt.Sprintf(", %d seats, issued %s, %s, issuer key %s (unverified)", bi.Seats, ts(bi.Time), exp, bi.KeyID)
	}
	return fmt.Sprintf("%s, %d bytes", bi.Kind, bi.Size)
}

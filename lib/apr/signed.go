package apr

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/sign"
	"github.com/apr-go/apr/lib/signed"
)

// Signatures and licenses are lib/signed; these are its names in the façade, and
// the model-level functions built on it.

// LicenseBindingDomain starts the binding digest of a license block.
const LicenseBindingDomain = signed.LicenseBindingDomain

var (
	// ErrLicenseInvalid is wrapped by every license failure (signed.ErrLicenseInvalid).
	ErrLicenseInvalid = signed.ErrLicenseInvalid
	// ErrLicenseMissing: a license is required and the file has none.
	ErrLicenseMissing = signed.ErrLicenseMissing
)

type (
	// SignOption configures a signature (signed.Option).
	SignOption = signed.Option
	// Policy says which keys a verification trusts (signed.Policy).
	Policy = signed.Policy
	// SignatureCheck is the outcome for one signature block.
	SignatureCheck = signed.SignatureCheck
	// LicenseCheck is the outcome for a license block.
	LicenseCheck = signed.LicenseCheck
	// Verification is what a verification found.
	Verification = signed.Verification
	// BlockInfo describes a signature or license block, unverified.
	BlockInfo = signed.BlockInfo
)

// WithComment sets the signed comment (signed.WithComment).
func WithComment(c string) SignOption { return signed.WithComment(c) }

// WithSignTime sets the signing time (signed.WithSignTime).
func WithSignTime(t time.Time) SignOption { return signed.WithSignTime(t) }

// WithSealedInput lets SignStream and LicenseStream sign a sealed stream
// (signed.WithSealedInput).
func WithSealedInput(u container.Unsealer) SignOption { return signed.WithSealedInput(u) }

// SignatureBlock signs a content digest and returns it as a signature block.
func SignatureBlock(key *sign.PrivateKey, digest [32]byte, opts ...SignOption) (container.Block, *sign.Signature, error) {
	return signed.SignatureBlock(key, digest, opts...)
}

// LicenseBlock issues lic for the content digest and returns it as a license block.
func LicenseBlock(lic sign.License, issuer *sign.PrivateKey, digest [32]byte) (container.Block, *sign.License, error) {
	return signed.LicenseBlock(lic, issuer, digest)
}

// ParseLicenseBlock splits a license block's payload (signed.ParseLicenseBlock).
func ParseLicenseBlock(payload []byte) (*sign.License, *sign.Signature, []byte, error) {
	return signed.ParseLicenseBlock(payload)
}

// Verify reads a whole APR v2 stream and checks its blocks against p (signed.Verify).
func Verify(r io.Reader, p Policy) (*Verification, error) { return signed.Verify(r, p) }

// DescribeBlock decodes a block for display, without verifying it.
func DescribeBlock(b container.Block) BlockInfo { return signed.DescribeBlock(b) }

// SignStream adds a signature block to an APR v2 stream (signed.SignStream).
func SignStream(dst io.Writer, src io.Reader, key *sign.PrivateKey, opts ...SignOption) (*sign.Signature, error) {
	return signed.SignStream(dst, src, key, opts...)
}

// LicenseStream adds a license block to an APR v2 stream (signed.LicenseStream).
func LicenseStream(dst io.Writer, src io.Reader, lic sign.License, issuer *sign.PrivateKey, opts ...SignOption) (*sign.License, bool, error) {
	return signed.LicenseStream(dst, src, lic, issuer, opts...)
}

// EncodeSigned writes m as an APR v2 stream to w, signed by key.
func EncodeSigned(w io.Writer, m model.Model, opts SaveOptions, key *sign.PrivateKey, sopts ...SignOption) error {
	if key == nil {
		return errors.New("no signing key")
	}
	if err := signed.CheckOptions(sopts...); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(Encode(pw, m, opts))
	}()
	_, err := SignStream(w, pr, key, sopts...)
	pr.CloseWithError(errors.New("signing stopped")) // unblocks Encode after a failure
	<-done
	return err
}

// SaveSigned writes m to path, signed by key, atomically.
func SaveSigned(path string, m model.Model, opts SaveOptions, key *sign.PrivateKey, sopts ...SignOption) error {
	return saveFile(path, func(w io.Writer) error { return EncodeSigned(w, m, opts, key, sopts...) })
}

// LoadVerified is Load for a signed file: it returns the model only if the file
// holds a valid signature by one of the trusted keys (at least one is required);
// otherwise the error wraps ErrSignatureInvalid. The file is read once: tensors
// are hashed as they are decoded.
func LoadVerified[M model.Model](path string, want modeltype.Type, trusted ...*sign.PublicKey) (M, error) {
	if len(trusted) == 0 {
		var zero M
		return zero, fmt.Errorf("%s: %w: LoadVerified needs a trusted key", path, ErrSignatureInvalid)
	}
	m, _, err := LoadWithPolicy[M](path, want, Policy{Signers: trusted})
	return m, err
}

// LoadLicensed is Load for a licensed file: it returns the model only if the file
// holds a license issued by one of the trusted issuer keys, bound to this content,
// valid now and not expired; otherwise the error wraps ErrLicenseInvalid (and
// sign.ErrLicenseExpired, sign.ErrLicenseUnknownIssuer, ErrLicenseMissing, ...).
func LoadLicensed[M model.Model](path string, want modeltype.Type, issuers ...*sign.PublicKey) (M, error) {
	if len(issuers) == 0 {
		var zero M
		return zero, fmt.Errorf("%s: %w: LoadLicensed needs a trusted issuer key", path, ErrLicenseInvalid)
	}
	m, _, err := LoadWithPolicy[M](path, want, Policy{LicenseIssuers: issuers})
	return m, err
}

// LoadWithPolicy loads the model at path only if its blocks satisfy p (signers,
// license issuers, or both), and reports what was verified.
func LoadWithPolicy[M model.Model](path string, want modeltype.Type, p Policy) (M, *Verification, error) {
	if len(p.Signers) == 0 && len(p.LicenseIssuers) == 0 {
		var zero M
		return zero, nil, fmt.Errorf("%s: %w: no trusted key given", path, ErrSignatureInvalid)
	}
	var v *Verification
	m, err := loadFile[M](path, want, func(r io.Reader) (m model.Model, err error) {
		m, v, err = ReadModel(r, ReadOptions{Accept: accepting(want), Policy: p})
		return m, err
	})
	return m, v, err
}

package oms

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/apr-go/apr/lib/printable"
)

// errKeyType says which keys the spec's key and certificate methods take
// (algorithm-registry.md): Ed25519 is not among them, so model_signing and other
// OMS verifiers would refuse its signatures.
func errKeyType(k any) error {
	if _, ok := k.(ed25519.PublicKey); ok {
		return errors.New("an Ed25519 key: OMS's key and certificate methods take ECDSA keys on P-256, P-384 or P-521 only (its algorithm registry), so no OMS verifier would accept the signature; make one with 'openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt'")
	}
	return fmt.Errorf("a %T key: OMS takes ECDSA keys on P-256, P-384 or P-521", k)
}

func checkCurve(k *ecdsa.PublicKey) (crypto.Hash, error) {
	// The hash that goes with each curve, as Sigstore's algorithm registry pairs them.
	switch k.Curve {
	case elliptic.P256():
		return crypto.SHA256, nil
	case elliptic.P384():
		return crypto.SHA384, nil
	case elliptic.P521():
		return crypto.SHA512, nil
	}
	return 0, fmt.Errorf("ECDSA key on %s: OMS takes P-256, P-384 or P-521", k.Curve.Params().Name)
}

// pemBlocks returns the PEM blocks of a file, skipping text around them (certtool
// writes a description before the key).
func pemBlocks(data []byte) []*pem.Block {
	var out []*pem.Block
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		out = append(out, b)
	}
}

// ParsePrivateKey reads a PEM ECDSA private key (PKCS #8 or SEC 1), as model_signing
// takes with --private-key. Encrypted keys are refused with a hint.
func ParsePrivateKey(data []byte) (*ecdsa.PrivateKey, error) {
	for _, b := range pemBlocks(data) {
		var k any
		var err error
		switch b.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(b.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("an encrypted private key: decrypt it first (openssl pkcs8 -in KEY -out PLAIN.pem)")
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Type, err)
		}
		if ed, ok := k.(ed25519.PrivateKey); ok {
			return nil, errKeyType(ed.Public())
		}
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, errKeyType(k)
		}
		if _, err := checkCurve(&ek.PublicKey); err != nil {
			return nil, err
		}
		return ek, nil
	}
	return nil, errors.New("no PEM private key (BEGIN PRIVATE KEY or BEGIN EC PRIVATE KEY) found")
}

// ParsePublicKey reads a PEM ECDSA public key (SubjectPublicKeyInfo).
func ParsePublicKey(data []byte) (*ecdsa.PublicKey, error) {
	for _, b := range pemBlocks(data) {
		if b.Type != "PUBLIC KEY" {
			continue
		}
		k, err := x509.ParsePKIXPublicKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PUBLIC KEY: %w", err)
		}
		ek, ok := k.(*ecdsa.PublicKey)
		if !ok {
			return nil, errKeyType(k)
		}
		if _, err := checkCurve(ek); err != nil {
			return nil, err
		}
		return ek, nil
	}
	return nil, errors.New("no PEM public key (BEGIN PUBLIC KEY) found")
}

// ParseCertificates reads every PEM certificate of a file.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, b := range pemBlocks(data) {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(out), err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate (BEGIN CERTIFICATE) found")
	}
	return out, nil
}

// KeyHint is the key method's key identifier: the hex SHA-256 of the key's PEM
// SubjectPublicKeyInfo, as model_signing computes it.
func KeyHint(k *ecdsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	return hex.EncodeToString(sum[:])
}

// Signer signs statements with a key, and for the certificate method carries the
// signing certificate and the chain to put in the bundle.
type Signer struct {
	key   *ecdsa.PrivateKey
	chain []*x509.Certificate // leaf first; empty for the key method
}

// NewKeySigner is the key method.
func NewKeySigner(k *ecdsa.PrivateKey) *Signer { return &Signer{key: k} }

// NewCertificateSigner is the certificate method: leaf must certify k's public key;
// chain (intermediates, optionally the root) goes into the bundle after it.
func NewCertificateSigner(k *ecdsa.PrivateKey, leaf *x509.Certificate, chain []*x509.Certificate) (*Signer, error) {
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&k.PublicKey) {
		return nil, errors.New("the signing certificate is not for the private key (their public keys differ)")
	}
	return &Signer{key: k, chain: append([]*x509.Certificate{leaf}, chain...)}, nil
}

// Sign returns the bundle (model.sig) of a statement.
func (s *Signer) Sign(statement []byte) ([]byte, error) {
	h, err := checkCurve(&s.key.PublicKey)
	if err != nil {
		return nil, err
	}
	d := h.New()
	d.Write(PAE(PayloadType, statement))
	sig, err := ecdsa.SignASN1(rand.Reader, s.key, d.Sum(nil))
	if err != nil {
		return nil, err
	}
	var vm vmOut
	if len(s.chain) == 0 {
		vm.PublicKey = &struct {
			Hint string `json:"hint"`
		}{KeyHint(&s.key.PublicKey)}
	} else {
		vm.X509CertificateChain = &chainOut{}
		for _, c := range s.chain {
			vm.X509CertificateChain.Certificates = append(vm.X509CertificateChain.Certificates, certOut{base64.StdEncoding.EncodeToString(c.Raw)})
		}
	}
	return encodeBundle(vm, statement, sig)
}

// Verifier checks a bundle's signature: the key method's public key, or the
// certificate method's trusted roots.
type Verifier struct {
	Key   *ecdsa.PublicKey
	Roots []*x509.Certificate
	// Time the certificate chain must be valid at; zero means now.
	Time time.Time
}

// Verified is a bundle whose signature checked out.
type Verified struct {
	Manifest *Manifest
	Method   string // "key" or "certificate"
	// Signer names who signed: the key's fingerprint (its hint), or the signing
	// certificate's subject and issuer.
	Signer string
	Leaf   *x509.Certificate // certificate method only
}

// Verify checks a bundle's signature with v and parses the statement it signs.
func (v *Verifier) Verify(bundle []byte) (*Verified, error) {
	b, err := ParseBundle(bundle)
	if err != nil {
		return nil, err
	}
	if b.Keyless != nil {
		return nil, ErrKeyless
	}
	var out Verified
	var pub *ecdsa.PublicKey
	switch {
	case v.Key != nil:
		if !b.KeyMaterial {
			return nil, errors.New("the bundle was made with the certificate method (it carries a certificate chain, not a key hint): verify it with 'oms verify certificate'")
		}
		hint := KeyHint(v.Key)
		if err := checkKeyMaterial(b, v.Key, hint); err != nil {
			return nil, err
		}
		pub, out.Method, out.Signer = v.Key, "key", "key "+hint
	case len(v.Roots) > 0:
		if b.Chain == nil {
			return nil, errors.New("the bundle was made with the key method (it carries no certificate chain): verify it with 'oms verify key'")
		}
		leaf, err := v.verifyChain(b.Chain)
		if err != nil {
			return nil, err
		}
		pub = leaf.PublicKey.(*ecdsa.PublicKey)
		out.Method, out.Leaf = "certificate", leaf
		out.Signer = fmt.Sprintf("certificate %q issued by %q", leaf.Subject.String(), leaf.Issuer.String())
	default:
		return nil, errors.New("no public key and no certificate roots to verify with")
	}
	m, err := signedManifest(pub, b)
	if err != nil {
		return nil, err
	}
	out.Manifest = m
	return &out, nil
}

// checkKeyMaterial refuses a bundle whose verificationMaterial names another key
// than pub: a hint other than pub's (compared exactly, as model_signing compares
// it), or rawBytes (the key itself, in bundles before model_signing v1.1.0) that are
// not pub, PEM or DER. Unreadable key material is refused too: it names no key
// that could be checked.
func checkKeyMaterial(b *Bundle, pub *ecdsa.PublicKey, hint string) error {
	if b.KeyHint != "" && b.KeyHint != hint {
		return fmt.Errorf("key mismatch: the bundle was signed by key %s, the public key given is %s", printable.String(b.KeyHint), hint)
	}
	if b.KeyRaw == nil {
		return nil
	}
	der := b.KeyRaw
	if blocks := pemBlocks(der); len(blocks) == 1 && blocks[0].Type == "PUBLIC KEY" {
		der = blocks[0].Bytes
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return fmt.Errorf("key mismatch: the bundle's publicKey.rawBytes is not a public key (%v), so it cannot be the public key given, %s", err, hint)
	}
	if ek, ok := k.(*ecdsa.PublicKey); !ok || !ek.Equal(pub) {
		named := fmt.Sprintf("a %T key", k)
		if ok {
			named = "key " + KeyHint(ek)
		}
		return fmt.Errorf("key mismatch: the bundle carries %s, the public key given is %s", named, hint)
	}
	return nil
}

// signedManifest checks the bundle's DSSE signature with pub and reads the statement
// it signs.
func signedManifest(pub *ecdsa.PublicKey, b *Bundle) (*Manifest, error) {
	if err := verifyDSSE(pub, b); err != nil {
		return nil, err
	}
	m, err := ParseStatement(b.Payload)
	if err != nil {
		return nil, fmt.Errorf("signed %w", err)
	}
	return m, nil
}

// verifyDSSE accepts a signature over the PAE with the curve's hash, or one that
// model_signing v0.2.0 made over its mistaken encoding (paeV02; its certificate
// method hashed with SHA-256 whatever the curve).
func verifyDSSE(pub *ecdsa.PublicKey, b *Bundle) error {
	h, err := checkCurve(pub)
	if err != nil {
		return err
	}
	type attempt struct {
		msg []byte
		h   crypto.Hash
	}
	tries := []attempt{{PAE(b.PayloadType, b.Payload), h}, {paeV02(b.Payload), h}}
	if h != crypto.SHA256 {
		tries = append(tries, attempt{paeV02(b.Payload), crypto.SHA256})
	}
	for _, sig := range b.Signatures {
		for _, t := range tries {
			d := t.h.New()
			d.Write(t.msg)
			if ecdsa.VerifyASN1(pub, d.Sum(nil), sig) {
				return nil
			}
		}
	}
	return errors.New("bad signature: the DSSE signature does not verify with the signer's key (the statement or the signature was changed, or another key signed it)")
}

func (v *Verifier) verifyChain(chain [][]byte) (*x509.Certificate, error) {
	certs := make([]*x509.Certificate, len(chain))
	for i, der := range chain {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("bundle certificate %d: %w", i, err)
		}
		certs[i] = c
	}
	leaf := certs[0]
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, r := range v.Roots {
		roots.AddCert(r)
	}
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	at := v.Time
	if at.IsZero() {
		at = time.Now()
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: at,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("signing certificate %q: %w", leaf.Subject.String(), err)
	}
	// As model_signing: the leaf must allow signing (digitalSignature or codeSigning).
	canSign := leaf.KeyUsage&x509.KeyUsageDigitalSignature != 0
	for _, u := range leaf.ExtKeyUsage {
		canSign = canSign || u == x509.ExtKeyUsageCodeSigning
	}
	if !canSign {
		return nil, fmt.Errorf("signing certificate %q allows neither digitalSignature nor codeSigning", leaf.Subject.String())
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("signing certificate %q: %w", leaf.Subject.String(), errKeyType(leaf.PublicKey))
	}
	if _, err := checkCurve(pub); err != nil {
		return nil, err
	}
	return leaf, nil
}

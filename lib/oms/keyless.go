package oms

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TrustedRoot is the part of a Sigstore trusted root (trusted_root.json, or the
// "trustedRoot" of model_signing's --trust-config) that offline keyless verification
// needs: Fulcio's certificate chains and Rekor's keys, each with its validity.
type TrustedRoot struct {
	CAs   []trustedCA
	Tlogs map[string]trustedLog // by hex key id
}

type trustedCA struct {
	root          *x509.Certificate
	intermediates []*x509.Certificate
	start, end    time.Time
}

type trustedLog struct {
	key        crypto.PublicKey
	start, end time.Time
}

type validFor struct {
	Start *time.Time `json:"start"`
	End   *time.Time `json:"end"`
}

func (v *validFor) times() (time.Time, time.Time) {
	var s, e time.Time
	if v != nil && v.Start != nil {
		s = *v.Start
	}
	if v != nil && v.End != nil {
		e = *v.End
	}
	return s, e
}

func within(t, start, end time.Time) bool {
	return (start.IsZero() || !t.Before(start)) && (end.IsZero() || !t.After(end))
}

// ParseTrustedRoot reads a Sigstore trusted root, or a client trust configuration
// that holds one under "trustedRoot".
func ParseTrustedRoot(data []byte) (*TrustedRoot, error) {
	var in struct {
		TrustedRoot *json.RawMessage `json:"trustedRoot"`
		Tlogs       []struct {
			PublicKey struct {
				RawBytes string    `json:"rawBytes"`
				ValidFor *validFor `json:"validFor"`
			} `json:"publicKey"`
			LogID struct {
				KeyID string `json:"keyId"`
			} `json:"logId"`
		} `json:"tlogs"`
		CertificateAuthorities []struct {
			CertChain struct {
				Certificates []struct {
					RawBytes string `json:"rawBytes"`
				} `json:"certificates"`
			} `json:"certChain"`
			ValidFor *validFor `json:"validFor"`
		} `json:"certificateAuthorities"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("trusted root: %w", err)
	}
	if in.TrustedRoot != nil {
		return ParseTrustedRoot(*in.TrustedRoot)
	}
	tr := &TrustedRoot{Tlogs: map[string]trustedLog{}}
	for i, l := range in.Tlogs {
		der, err := decodeB64(l.PublicKey.RawBytes)
		if err != nil {
			return nil, fmt.Errorf("trusted root: tlog %d key: %w", i, err)
		}
		k, err := x509.ParsePKIXPublicKey(der)
		if err != nil {
			return nil, fmt.Errorf("trusted root: tlog %d key: %w", i, err)
		}
		id, err := decodeB64(l.LogID.KeyID)
		if err != nil {
			return nil, fmt.Errorf("trusted root: tlog %d id: %w", i, err)
		}
		s, e := l.PublicKey.ValidFor.times()
		tr.Tlogs[hex.EncodeToString(id)] = trustedLog{key: k, start: s, end: e}
	}
	for i, ca := range in.CertificateAuthorities {
		var chain []*x509.Certificate
		for _, c := range ca.CertChain.Certificates {
			der, err := decodeB64(c.RawBytes)
			if err != nil {
				return nil, fmt.Errorf("trusted root: CA %d: %w", i, err)
			}
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, fmt.Errorf("trusted root: CA %d: %w", i, err)
			}
			chain = append(chain, cert)
		}
		if len(chain) == 0 {
			continue
		}
		s, e := ca.ValidFor.times()
		// The chain is listed leaf-most first, the root last.
		tr.CAs = append(tr.CAs, trustedCA{root: chain[len(chain)-1], intermediates: chain[:len(chain)-1], start: s, end: e})
	}
	if len(tr.CAs) == 0 || len(tr.Tlogs) == 0 {
		return nil, errors.New("trusted root: no certificate authority or no transparency log")
	}
	return tr, nil
}

// Keyless is who must have signed a keyless bundle: the certificate's identity (an
// e-mail or URI subject alternative name) and the OIDC issuer Fulcio recorded.
type Keyless struct {
	Root     *TrustedRoot
	Identity string
	Issuer   string
}

// Fulcio's certificate extensions for the OIDC issuer: v2 (a DER UTF8String) and v1
// (the raw string).
var (
	oidIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
	oidIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
)

// Verify is VerifyKeyless, for VerifyModel.
func (k *Keyless) Verify(bundle []byte) (*Verified, error) { return k.VerifyKeyless(bundle) }

// VerifyKeyless checks a keyless bundle offline: the Rekor entry's signed entry
// timestamp against a trusted log key, that the entry records this envelope's
// payload and signature and this certificate, the Fulcio chain at the entry's
// integrated time, the identity and issuer, and the DSSE signature; an inclusion proof,
// when present, up to its checkpoint signed by the log. It does not check certificate
// transparency (SCTs) or RFC 3161 timestamps.
func (k *Keyless) VerifyKeyless(bundle []byte) (*Verified, error) {
	if k.Root == nil {
		return nil, errors.New("no trusted root to verify a keyless signature with")
	}
	b, err := ParseBundle(bundle)
	if err != nil {
		return nil, err
	}
	if b.Keyless == nil {
		return nil, errors.New("not a keyless bundle: verify it with 'oms verify key' or 'oms verify certificate'")
	}
	leaf, err := x509.ParseCertificate(b.Keyless)
	if err != nil {
		return nil, fmt.Errorf("bundle certificate: %w", err)
	}
	var raw struct {
		VerificationMaterial struct {
			TlogEntries []tlogEntry `json:"tlogEntries"`
		} `json:"verificationMaterial"`
	}
	if err := json.Unmarshal(bundle, &raw); err != nil {
		return nil, err
	}
	var when time.Time
	var lastErr error
	for _, e := range raw.VerificationMaterial.TlogEntries {
		t, err := k.checkEntry(e, b, leaf)
		if err == nil {
			when = t
			break
		}
		lastErr = err
	}
	if when.IsZero() {
		return nil, fmt.Errorf("no transparency log entry checks out: %w", lastErr)
	}
	if err := k.checkCertificate(leaf, when); err != nil {
		return nil, err
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("Fulcio certificate: %w", errKeyType(leaf.PublicKey))
	}
	m, err := signedManifest(pub, b)
	if err != nil {
		return nil, err
	}
	return &Verified{Manifest: m, Method: "sigstore", Leaf: leaf,
		Signer: fmt.Sprintf("%s (issuer %s), logged %s", k.Identity, k.Issuer, when.UTC().Format(time.RFC3339))}, nil
}

type tlogEntry struct {
	LogIndex string `json:"logIndex"`
	LogID    struct {
		KeyID string `json:"keyId"`
	} `json:"logId"`
	KindVersion struct {
		Kind    string `json:"kind"`
		Version string `json:"version"`
	} `json:"kindVersion"`
	IntegratedTime   string `json:"integratedTime"`
	InclusionPromise *struct {
		SignedEntryTimestamp string `json:"signedEntryTimestamp"`
	} `json:"inclusionPromise"`
	InclusionProof *struct {
		LogIndex   string   `json:"logIndex"`
		RootHash   string   `json:"rootHash"`
		TreeSize   string   `json:"treeSize"`
		Hashes     []string `json:"hashes"`
		Checkpoint struct {
			Envelope string `json:"envelope"`
		} `json:"checkpoint"`
	} `json:"inclusionProof"`
	CanonicalizedBody string `json:"canonicalizedBody"`
}

// checkEntry verifies one Rekor entry and returns its integrated time.
func (k *Keyless) checkEntry(e tlogEntry, b *Bundle, leaf *x509.Certificate) (time.Time, error) {
	id, err := decodeB64(e.LogID.KeyID)
	if err != nil {
		return time.Time{}, fmt.Errorf("tlog entry log id: %w", err)
	}
	log, ok := k.Root.Tlogs[hex.EncodeToString(id)]
	if !ok {
		return time.Time{}, fmt.Errorf("tlog entry from log %x, which the trusted root does not list", id)
	}
	sec, err1 := strconv.ParseInt(e.IntegratedTime, 10, 64)
	index, err2 := strconv.ParseInt(e.LogIndex, 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, errors.New("tlog entry: bad integratedTime or logIndex")
	}
	when := time.Unix(sec, 0)
	if !within(when, log.start, log.end) {
		return time.Time{}, fmt.Errorf("tlog entry integrated at %s, outside its log key's validity", when.UTC())
	}
	if e.InclusionPromise == nil {
		return time.Time{}, errors.New("tlog entry has no inclusion promise (signed entry timestamp), which this offline check needs")
	}
	set, err := decodeB64(e.InclusionPromise.SignedEntryTimestamp)
	if err != nil {
		return time.Time{}, fmt.Errorf("tlog entry signed entry timestamp: %w", err)
	}
	// Rekor signs the canonical JSON (keys sorted, no spaces) of these four fields.
	payload := fmt.Sprintf(`{"body":%q,"integratedTime":%d,"logID":%q,"logIndex":%d}`, e.CanonicalizedBody, sec, hex.EncodeToString(id), index)
	lk, ok := log.key.(*ecdsa.PublicKey)
	if !ok {
		return time.Time{}, fmt.Errorf("tlog key is a %T; only ECDSA log keys are supported", log.key)
	}
	h := sha256.Sum256([]byte(payload))
	if !ecdsa.VerifyASN1(lk, h[:], set) {
		return time.Time{}, errors.New("tlog entry: the signed entry timestamp does not verify with the log's key")
	}
	body, err := decodeB64(e.CanonicalizedBody)
	if err != nil {
		return time.Time{}, fmt.Errorf("tlog entry body: %w", err)
	}
	if e.InclusionProof != nil {
		if err := checkInclusion(e, body, lk); err != nil {
			return time.Time{}, err
		}
	}
	if err := checkDSSEBody(body, b, leaf); err != nil {
		return time.Time{}, err
	}
	return when, nil
}

// checkDSSEBody: the logged entry (kind dsse) records this payload, one of this
// envelope's signatures, and this certificate as its verifier.
func checkDSSEBody(body []byte, b *Bundle, leaf *x509.Certificate) error {
	var entry struct {
		Kind string `json:"kind"`
		Spec struct {
			PayloadHash struct {
				Algorithm string `json:"algorithm"`
				Value     string `json:"value"`
			} `json:"payloadHash"`
			Signatures []struct {
				Signature string `json:"signature"`
				Verifier  string `json:"verifier"`
			} `json:"signatures"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &entry); err != nil {
		return fmt.Errorf("tlog entry body: %w", err)
	}
	if entry.Kind != "dsse" {
		return fmt.Errorf("tlog entry of kind %q, expected dsse", entry.Kind)
	}
	sum := sha256.Sum256(b.Payload)
	if entry.Spec.PayloadHash.Algorithm != "sha256" || entry.Spec.PayloadHash.Value != hex.EncodeToString(sum[:]) {
		return errors.New("tlog entry: it logs another payload than the bundle's")
	}
	for _, s := range entry.Spec.Signatures {
		sig, err1 := decodeB64(s.Signature)
		ver, err2 := decodeB64(s.Verifier)
		if err1 != nil || err2 != nil {
			continue
		}
		blk, _ := pem.Decode(ver)
		if blk == nil || !bytes.Equal(blk.Bytes, leaf.Raw) {
			continue
		}
		for _, bs := range b.Signatures {
			if bytes.Equal(bs, sig) {
				return nil
			}
		}
	}
	return errors.New("tlog entry: it logs another signature or certificate than the bundle's")
}

func (k *Keyless) checkCertificate(leaf *x509.Certificate, when time.Time) error {
	var errs []error
	ok := false
	for _, ca := range k.Root.CAs {
		if !within(when, ca.start, ca.end) {
			continue
		}
		roots, inter := x509.NewCertPool(), x509.NewCertPool()
		roots.AddCert(ca.root)
		for _, c := range ca.intermediates {
			inter.AddCert(c)
		}
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: when,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}})
		if err == nil {
			ok = true
			break
		}
		errs = append(errs, err)
	}
	if !ok {
		return fmt.Errorf("Fulcio certificate at %s: not issued by a trusted certificate authority: %w", when.UTC(), errors.Join(errs...))
	}
	sans := append(append([]string{}, leaf.EmailAddresses...), leaf.DNSNames...)
	for _, u := range leaf.URIs {
		sans = append(sans, u.String())
	}
	found := false
	for _, s := range sans {
		found = found || s == k.Identity
	}
	if !found {
		return fmt.Errorf("the certificate is for %q, not the identity %q", sans, k.Identity)
	}
	issuer := ""
	for _, ext := range leaf.Extensions {
		switch {
		case ext.Id.Equal(oidIssuerV2):
			var s string
			if _, err := asn1.Unmarshal(ext.Value, &s); err == nil {
				issuer = s
			}
		case ext.Id.Equal(oidIssuerV1) && issuer == "":
			issuer = string(ext.Value)
		}
	}
	if issuer != k.Issuer {
		return fmt.Errorf("the certificate's OIDC issuer is %q, not %q", issuer, k.Issuer)
	}
	return nil
}

// checkInclusion verifies an entry's inclusion proof (RFC 9162, 2.1.3.2) up to the
// root hash of its checkpoint, and the checkpoint's signature by the log's key.
func checkInclusion(e tlogEntry, body []byte, key *ecdsa.PublicKey) error {
	p := e.InclusionProof
	index, err1 := strconv.ParseUint(p.LogIndex, 10, 64)
	size, err2 := strconv.ParseUint(p.TreeSize, 10, 64)
	root, err3 := decodeB64(p.RootHash)
	if err1 != nil || err2 != nil || err3 != nil || index >= size {
		return errors.New("tlog entry: bad inclusion proof index, tree size or root hash")
	}
	leaf := sha256.Sum256(append([]byte{0}, body...))
	r := leaf[:]
	fn, sn := index, size-1
	node := func(l, r []byte) []byte {
		h := sha256.New()
		h.Write([]byte{1})
		h.Write(l)
		h.Write(r)
		return h.Sum(nil)
	}
	for _, hs := range p.Hashes {
		h, err := decodeB64(hs)
		if err != nil || sn == 0 {
			return errors.New("tlog entry: the inclusion proof is malformed")
		}
		if fn&1 == 1 || fn == sn {
			r = node(h, r)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			r = node(r, h)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 || !bytes.Equal(r, root) {
		return errors.New("tlog entry: the inclusion proof does not lead to its root hash")
	}
	// The checkpoint is a signed note: "origin\nsize\nbase64 root\n[...]\n\n— name sig\n".
	text, sigs, ok := strings.Cut(p.Checkpoint.Envelope, "\n\n")
	if !ok {
		return errors.New("tlog entry: the checkpoint is not a signed note")
	}
	text += "\n"
	lines := strings.Split(text, "\n")
	if len(lines) < 4 || lines[1] != p.TreeSize || lines[2] != p.RootHash {
		return errors.New("tlog entry: the checkpoint is for another tree than the inclusion proof's")
	}
	digest := sha256.Sum256([]byte(text))
	for _, line := range strings.Split(sigs, "\n") {
		f := strings.Fields(strings.TrimPrefix(line, "\u2014 "))
		if len(f) != 2 {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(f[1])
		if err == nil && len(raw) > 4 && ecdsa.VerifyASN1(key, digest[:], raw[4:]) {
			return nil
		}
	}
	return errors.New("tlog entry: the checkpoint's signature does not verify with the log's key")
}

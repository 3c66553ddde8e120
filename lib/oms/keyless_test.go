package oms

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

// keylessFixture is a small Sigstore of its own: a Fulcio-like CA, a log key, and a
// keyless bundle for a statement, built as Fulcio and Rekor build theirs.
type keylessFixture struct {
	root    []byte // trusted_root.json
	bundle  func(integrated time.Time, logKey *ecdsa.PrivateKey, payload []byte) []byte
	logKey  *ecdsa.PrivateKey
	issued  time.Time
	payload []byte
}

func newKeylessFixture(t testing.TB) *keylessFixture {
	t.Helper()
	caKey := newKey(t, elliptic.P384())
	issued := time.Now().Add(-time.Hour).Truncate(time.Second)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fulcio"},
		NotBefore: issued.Add(-24 * time.Hour), NotAfter: issued.Add(24 * time.Hour), BasicConstraintsValid: true, IsCA: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	leafKey := newKey(t, elliptic.P256())
	issuerExt, _ := asn1.MarshalWithParams("https://issuer.example", "utf8")
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: issued, NotAfter: issued.Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		EmailAddresses:  []string{"dev@example.com"},
		ExtraExtensions: []pkix.Extension{{Id: oidIssuerV2, Value: issuerExt}}}
	leafDER, _ := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	logKey := newKey(t, elliptic.P256())
	logDER, _ := x509.MarshalPKIXPublicKey(&logKey.PublicKey)
	logID := sha256.Sum256(logDER)
	b64 := base64.StdEncoding.EncodeToString
	root, _ := json.Marshal(map[string]any{
		"tlogs": []any{map[string]any{"publicKey": map[string]any{"rawBytes": b64(logDER)}, "logId": map[string]any{"keyId": b64(logID[:])}}},
		"certificateAuthorities": []any{map[string]any{"certChain": map[string]any{"certificates": []any{map[string]any{"rawBytes": b64(caDER)}}},
			"validFor": map[string]any{"start": issued.Add(-48 * time.Hour).Format(time.RFC3339)}}},
	})
	dir := writeModel(t, map[string]string{"f": "x"})
	m, err := Hash(dir, files(), HashOptions{})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := m.Statement()
	f := &keylessFixture{root: root, logKey: logKey, issued: issued, payload: payload}
	f.bundle = func(integrated time.Time, signer *ecdsa.PrivateKey, statement []byte) []byte {
		d := sha256.Sum256(PAE(PayloadType, statement))
		sig, _ := ecdsa.SignASN1(rand.Reader, leafKey, d[:])
		ph := sha256.Sum256(statement)
		body, _ := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "dsse", "spec": map[string]any{
			"payloadHash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(ph[:])},
			"signatures":  []any{map[string]any{"signature": b64(sig), "verifier": b64(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}))}}}})
		set := fmt.Sprintf(`{"body":%q,"integratedTime":%d,"logID":%q,"logIndex":%d}`, b64(body), integrated.Unix(), hex.EncodeToString(logID[:]), 7)
		sd := sha256.Sum256([]byte(set))
		setSig, _ := ecdsa.SignASN1(rand.Reader, signer, sd[:])
		out, _ := json.Marshal(map[string]any{
			"mediaType": BundleMediaType,
			"verificationMaterial": map[string]any{"certificate": map[string]any{"rawBytes": b64(leafDER)},
				"tlogEntries": []any{map[string]any{"logIndex": "7", "logId": map[string]any{"keyId": b64(logID[:])},
					"kindVersion": map[string]any{"kind": "dsse", "version": "0.0.1"}, "integratedTime": fmt.Sprint(integrated.Unix()),
					"inclusionPromise": map[string]any{"signedEntryTimestamp": b64(setSig)}, "canonicalizedBody": b64(body)}}},
			"dsseEnvelope": map[string]any{"payload": b64(statement), "payloadType": PayloadType, "signatures": []any{map[string]any{"sig": b64(sig)}}},
		})
		return out
	}
	return f
}

func TestKeyless(t *testing.T) {
	f := newKeylessFixture(t)
	tr, err := ParseTrustedRoot(f.root)
	if err != nil {
		t.Fatal(err)
	}
	k := &Keyless{Root: tr, Identity: "dev@example.com", Issuer: "https://issuer.example"}
	good := f.bundle(f.issued.Add(time.Minute), f.logKey, f.payload)
	v, err := k.VerifyKeyless(good)
	if err != nil {
		t.Fatal(err)
	}
	if v.Method != "sigstore" || !strings.HasPrefix(v.Signer, "dev@example.com (issuer https://issuer.example)") {
		t.Fatalf("%s %s", v.Method, v.Signer)
	}
	// A trusted root wrapped in a client trust configuration reads the same.
	wrapped := []byte(`{"mediaType":"application/vnd.dev.sigstore.clienttrustconfig.v0.1+json","trustedRoot":` + string(f.root) + `}`)
	if _, err := ParseTrustedRoot(wrapped); err != nil {
		t.Fatal(err)
	}
	for want, c := range map[string]struct {
		k      Keyless
		bundle []byte
	}{
		"not the identity":                  {Keyless{Root: tr, Identity: "evil@example.com", Issuer: k.Issuer}, good},
		"OIDC issuer":                       {Keyless{Root: tr, Identity: k.Identity, Issuer: "https://other"}, good},
		"signed entry timestamp":            {*k, f.bundle(f.issued.Add(time.Minute), newKey(t, elliptic.P256()), f.payload)},
		"not issued by a trusted":           {*k, f.bundle(f.issued.Add(time.Hour), f.logKey, f.payload)},
		"not a keyless bundle":              {*k, func() []byte { b, _ := NewKeySigner(newKey(t, elliptic.P256())).Sign(f.payload); return b }()},
		"another payload than the bundle's": {*k, []byte(strings.Replace(string(good), `"payload":"`+base64.StdEncoding.EncodeToString(f.payload), `"payload":"`+base64.StdEncoding.EncodeToString(append(f.payload, ' ')), 1))},
	} {
		if _, err := c.k.VerifyKeyless(c.bundle); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	if _, err := (&Verifier{Key: &f.logKey.PublicKey}).Verify(good); err == nil || !strings.Contains(err.Error(), "oms verify sigstore") {
		t.Fatalf("a key verifier on a keyless bundle: %v", err)
	}
}

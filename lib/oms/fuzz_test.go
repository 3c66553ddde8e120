package oms

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// seedBundle signs a two-file model with a fixed-curve key for the fuzz seeds.
func seedBundle(f *testing.F, s Serialization) ([]byte, []byte, *ecdsa.PrivateKey) {
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), []byte("0123456789abcdef0123"), 0o644)
	os.WriteFile(filepath.Join(dir, "b:1"), []byte("x"), 0o644)
	m, err := Hash(dir, s, HashOptions{})
	if err != nil {
		f.Fatal(err)
	}
	st, err := m.Statement()
	if err != nil {
		f.Fatal(err)
	}
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b, err := NewKeySigner(k).Sign(st)
	if err != nil {
		f.Fatal(err)
	}
	return b, st, k
}

// FuzzParseStatement: any payload is a manifest or an error, never a panic, and a
// manifest it gives writes a statement that reads back.
func FuzzParseStatement(f *testing.F) {
	_, files, _ := seedBundle(f, Serialization{Method: MethodFiles, HashType: SHA256, IgnorePaths: DefaultIgnores})
	_, shards, _ := seedBundle(f, Serialization{Method: MethodShards, HashType: BLAKE2b, ShardSize: 8})
	f.Add(files)
	f.Add(shards)
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","predicateType":"https://model_signing/Digests/v0.1","subject":[{"name":"f","digest":{"sha256":"00"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseStatement(data)
		if err != nil || m.Serialization.Method == "" {
			return
		}
		if len(m.Resources) > 0 {
			if _, err := m.Statement(); err != nil {
				t.Fatalf("a parsed manifest does not write: %v", err)
			}
		}
	})
}

// FuzzVerifyBundle: ParseBundle and a key verifier take any bytes without a panic.
func FuzzVerifyBundle(f *testing.F) {
	b, _, k := seedBundle(f, Serialization{Method: MethodFiles, HashType: SHA256})
	f.Add(b)
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"x509CertificateChain":{"certificates":[{"rawBytes":"MAA="}]}},"dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"MAA="}]}}`))
	v := &Verifier{Key: &k.PublicKey}
	kf := newKeylessFixture(f)
	f.Add(kf.bundle(kf.issued.Add(time.Minute), kf.logKey, kf.payload))
	tr, err := ParseTrustedRoot(kf.root)
	if err != nil {
		f.Fatal(err)
	}
	keyless := &Keyless{Root: tr, Identity: "dev@example.com", Issuer: "https://issuer.example"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ParseBundle(data); err != nil {
			return
		}
		v.Verify(data)
		(&Verifier{Roots: nil, Key: nil}).Verify(data)
		(&Keyless{}).VerifyKeyless(data)
		keyless.VerifyKeyless(data)
	})
}

// FuzzParseKeys: PEM key and certificate files of any content.
func FuzzParseKeys(f *testing.F) {
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte("text before\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ParsePrivateKey(data)
		ParsePublicKey(data)
		ParseCertificates(data)
		if tr, err := ParseTrustedRoot(data); err == nil {
			(&Keyless{Root: tr}).VerifyKeyless(data)
		}
	})
}

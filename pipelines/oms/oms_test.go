// Package oms checks apr's OpenSSF Model Signing bundles with other implementations:
// sigstore-go verifies them, and the spec's JSON schemas (schemas/v1.0) accept them.
// A module of its own, so that apr's go.mod keeps only the libraries apr needs.
package oms

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/oms"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
)

// model writes a small model folder and returns it.
func model(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny-llama")
	os.MkdirAll(filepath.Join(dir, "tokenizer"), 0o755)
	for name, content := range map[string]string{
		"config.json":              `{"model_type":"llama"}`,
		"model.safetensors":        strings.Repeat("weights!", 1000),
		"tokenizer/tokenizer.json": "{}",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func key(t *testing.T, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sign hashes dir as s says and signs it; it returns the bundle and the root digest.
func sign(t *testing.T, dir string, s oms.Serialization, signer *oms.Signer) ([]byte, []byte) {
	t.Helper()
	m, err := oms.Hash(dir, s, oms.HashOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Statement()
	if err != nil {
		t.Fatal(err)
	}
	b, err := signer.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	r := oms.RootDigest(m.Resources)
	return b, r[:]
}

var serializations = []oms.Serialization{
	{Method: oms.MethodFiles, HashType: oms.SHA256, IgnorePaths: oms.DefaultIgnores},
	{Method: oms.MethodShards, HashType: oms.SHA256, ShardSize: 1000},
	{Method: oms.MethodFiles, HashType: oms.BLAKE2b},
}

// TestSigstoreGoVerifiesKeyBundles: sigstore-go checks the bundle, the DSSE
// signature and that the statement's subject is the model's root digest.
func TestSigstoreGoVerifiesKeyBundles(t *testing.T) {
	for _, c := range []struct {
		curve elliptic.Curve
		hash  crypto.Hash
	}{{elliptic.P256(), crypto.SHA256}, {elliptic.P384(), crypto.SHA384}} {
		for _, s := range serializations {
			t.Run(fmt.Sprintf("%s/%s/%s", c.curve.Params().Name, s.Method, s.HashType), func(t *testing.T) {
				k := key(t, c.curve)
				data, digest := sign(t, model(t), s, oms.NewKeySigner(k))
				trusted := func(pub *ecdsa.PublicKey) root.TrustedMaterial {
					return root.NewTrustedPublicKeyMaterial(func(hint string) (root.TimeConstrainedVerifier, error) {
						if hint != oms.KeyHint(pub) {
							return nil, fmt.Errorf("unknown key %s", hint)
						}
						v, err := signature.LoadECDSAVerifier(pub, c.hash)
						if err != nil {
							return nil, err
						}
						return root.NewExpiringKey(v, time.Time{}, time.Time{}), nil
					})
				}
				var b bundle.Bundle
				if err := b.UnmarshalJSON(data); err != nil {
					t.Fatalf("sigstore-go refuses the bundle: %v\n%s", err, data)
				}
				v, err := verify.NewVerifier(trusted(&k.PublicKey), verify.WithNoObserverTimestamps())
				if err != nil {
					t.Fatal(err)
				}
				policy := verify.NewPolicy(verify.WithArtifactDigest("sha256", digest), verify.WithKey())
				res, err := v.Verify(&b, policy)
				if err != nil {
					t.Fatalf("sigstore-go: %v", err)
				}
				if res.Statement.GetPredicateType() != oms.PredicateType {
					t.Fatalf("predicate type %q", res.Statement.GetPredicateType())
				}
				// Another key, or another model digest: refused.
				other := key(t, c.curve)
				v2, _ := verify.NewVerifier(trusted(&other.PublicKey), verify.WithNoObserverTimestamps())
				if _, err := v2.Verify(&b, policy); err == nil {
					t.Fatal("sigstore-go accepted another key")
				}
				wrong := bytes.Clone(digest)
				wrong[0] ^= 1
				if _, err := v.Verify(&b, verify.NewPolicy(verify.WithArtifactDigest("sha256", wrong), verify.WithKey())); err == nil {
					t.Fatal("sigstore-go accepted another root digest")
				}
			})
		}
	}
}

// caMaterial is a certificate authority as sigstore-go takes one: a root and
// intermediates, no transparency log.
type caMaterial struct {
	root.BaseTrustedMaterial
	ca root.CertificateAuthority
}

func (m *caMaterial) FulcioCertificateAuthorities() []root.CertificateAuthority {
	return []root.CertificateAuthority{m.ca}
}

func testCA(t *testing.T) (rootCert, inter, leaf *x509.Certificate, leafKey *ecdsa.PrivateKey) {
	t.Helper()
	mk := func(cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ca bool) (*x509.Certificate, *ecdsa.PrivateKey) {
		k := key(t, elliptic.P256())
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			BasicConstraintsValid: true, IsCA: ca, KeyUsage: x509.KeyUsageCertSign,
		}
		if !ca {
			tmpl.KeyUsage = x509.KeyUsageDigitalSignature
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}
			// sigstore-go names the signer by a subject alternative name, and
			// refuses a certificate without one.
			tmpl.EmailAddresses = []string{"publisher@example.com"}
		}
		if parent == nil {
			parent, parentKey = tmpl, k
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c, k
	}
	rootCert, rk := mk("root", nil, nil, true)
	inter, ik := mk("intermediate", rootCert, rk, true)
	leaf, leafKey = mk("publisher", inter, ik, false)
	return
}

// TestSigstoreGoVerifiesCertificateBundles: the certificate method's
// x509CertificateChain in a v0.3 bundle, which sigstore-go takes with its
// AllowCertificateChain option (by default it wants a v0.3 bundle to carry a single
// certificate; model_signing's certificate bundles are the same).
func TestSigstoreGoVerifiesCertificateBundles(t *testing.T) {
	rootCert, inter, leaf, k := testCA(t)
	s, err := oms.NewCertificateSigner(k, leaf, []*x509.Certificate{inter})
	if err != nil {
		t.Fatal(err)
	}
	data, digest := sign(t, model(t), serializations[0], s)
	var strict bundle.Bundle
	if err := strict.UnmarshalJSON(data); err == nil || !strings.Contains(err.Error(), "certificate chain") {
		t.Fatalf("sigstore-go's default for a v0.3 bundle with a chain: %v", err)
	}
	path := filepath.Join(t.TempDir(), "model.sig")
	os.WriteFile(path, data, 0o644)
	b, err := bundle.LoadJSONFromPath(path, bundle.AllowCertificateChain())
	if err != nil {
		t.Fatal(err)
	}
	trusted := &caMaterial{ca: &root.FulcioCertificateAuthority{Root: rootCert, Intermediates: []*x509.Certificate{inter}}}
	v, err := verify.NewVerifier(trusted, verify.WithCurrentTime())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", digest), verify.WithoutIdentitiesUnsafe())); err != nil {
		t.Fatalf("sigstore-go: %v", err)
	}
	otherRoot, _, _, _ := testCA(t)
	v2, _ := verify.NewVerifier(&caMaterial{ca: &root.FulcioCertificateAuthority{Root: otherRoot, Intermediates: []*x509.Certificate{inter}}}, verify.WithCurrentTime())
	if _, err := v2.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", digest), verify.WithoutIdentitiesUnsafe())); err == nil {
		t.Fatal("sigstore-go accepted a chain to another root")
	}
}

// specDir is the copy of ossf/model-signing-spec (docs/SIGNING.md, "OMS test
// material"): testdata/oms.
func specDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "oms")
	p := filepath.Join(dir, "model-signing-spec")
	if _, err := os.Stat(filepath.Join(p, "schemas", "v1.0")); err != nil {
		t.Fatalf("the OMS spec's schemas are missing: %v", err)
	}
	return p
}

// schemas compiles the spec's bundle and statement schemas (draft 2020-12).
func schemas(t *testing.T, dir string) (bundleSchema, statementSchema *jsonschema.Schema) {
	t.Helper()
	c := jsonschema.NewCompiler()
	files, _ := filepath.Glob(filepath.Join(dir, "schemas", "v1.0", "*.schema.json"))
	if len(files) != 4 {
		t.Fatalf("%d schemas in %s, expected bundle, envelope, predicate and statement", len(files), dir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if bundleSchema, err = c.Compile("https://model_signing/bundle/v1.0/schema"); err != nil {
		t.Fatal(err)
	}
	if statementSchema, err = c.Compile("https://model_signing/statement/v1.0/schema"); err != nil {
		t.Fatal(err)
	}
	return
}

// validate checks a bundle and its decoded statement against the schemas, as the
// spec's oms_schemas.validate_bundle does.
func validate(bundleSchema, statementSchema *jsonschema.Schema, data []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	if err := bundleSchema.Validate(doc); err != nil {
		return err
	}
	b, err := oms.ParseBundle(data)
	if err != nil {
		return err
	}
	st, err := jsonschema.UnmarshalJSON(bytes.NewReader(b.Payload))
	if err != nil {
		return err
	}
	return statementSchema.Validate(st)
}

// TestBundlesPassSpecSchemas: every kind of bundle apr writes passes the spec's
// schemas; the schemas, as compiled here, give the spec's own test vectors the
// verdicts of their folders.
func TestBundlesPassSpecSchemas(t *testing.T) {
	dir := specDir(t)
	bs, ss := schemas(t, dir)
	_, inter, leaf, ck := testCA(t)
	cs, err := oms.NewCertificateSigner(ck, leaf, []*x509.Certificate{inter})
	if err != nil {
		t.Fatal(err)
	}
	for _, signer := range []*oms.Signer{oms.NewKeySigner(key(t, elliptic.P521())), cs} {
		for _, s := range serializations {
			data, _ := sign(t, model(t), s, signer)
			if err := validate(bs, ss, data); err != nil {
				t.Errorf("%s/%s: %v\n%s", s.Method, s.HashType, err, data)
			}
			var m map[string]any
			json.Unmarshal(data, &m)
			delete(m, "dsseEnvelope")
			broken, _ := json.Marshal(m)
			if validate(bs, ss, broken) == nil {
				t.Fatal("the schemas accepted a bundle without its envelope")
			}
		}
	}
	for folder, valid := range map[string]bool{"valid": true, "invalid": false, "invalid-payload": false} {
		files, _ := filepath.Glob(filepath.Join(dir, "test-vectors", "v1.0", folder, "*.json"))
		if len(files) == 0 {
			t.Fatalf("no test vectors in %s", folder)
		}
		for _, f := range files {
			data, _ := os.ReadFile(f)
			if err := validate(bs, ss, data); (err == nil) != valid {
				t.Errorf("%s/%s: %v", folder, filepath.Base(f), err)
			}
		}
	}
}

// keylessMaterial is model-transparency's test directory (its keyless cases are
// tests/vX-sigstore) and the path of the public-good trusted root that sigstore-go's
// module ships.
func keylessMaterial(t *testing.T) (tests, trustedRoot string) {
	tests = filepath.Join("..", "..", "testdata", "oms", "model-transparency", "scripts", "tests")
	if _, err := os.Stat(tests); err != nil {
		t.Fatalf("model-transparency's test material is missing: %v", err)
	}
	modDir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/sigstore/sigstore-go").Output()
	if err != nil {
		t.Fatal(err)
	}
	return tests, filepath.Join(strings.TrimSpace(string(modDir)), "examples", "trusted-root-public-good.json")
}

// TestKeylessOffline verifies model-transparency's keyless Sigstore cases (signed by
// model_signing v0.3.1 to v1.1.0 on Sigstore's public-good instance) offline: the
// trust material is the public-good trusted root that sigstore-go's module ships
// (examples/trusted-root-public-good.json), the identity the one test-verify-*.sh
// names; sigstore-go checks the Fulcio chain, the Rekor entry and its inclusion
// proof and the DSSE signature against the statement's subject, then apr's lib/oms
// checks the files against the statement. apr-sign itself does not do this (it
// carries no Sigstore trust root): docs/SIGNING.md.
func TestKeylessOffline(t *testing.T) {
	tests, trustedRoot := keylessMaterial(t)
	trusted, err := root.NewTrustedRootFromPath(trustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	v, err := verify.NewVerifier(trusted, verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1))
	if err != nil {
		t.Fatal(err)
	}
	id, err := verify.NewShortCertificateIdentity("https://sigstore.verify.ibm.com/oauth2", "", "stefanb@us.ibm.com", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"v0.3.1", "v1.0.0", "v1.0.1", "v1.1.0"} {
		t.Run(version, func(t *testing.T) {
			model := filepath.Join(tests, version+"-sigstore")
			sig := filepath.Join(model, "model.sig")
			data, err := os.ReadFile(sig)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := oms.ParseBundle(data)
			if err != nil {
				t.Fatal(err)
			}
			want, err := oms.ParseStatement(parsed.Payload)
			if err != nil {
				t.Fatal(err)
			}
			digest := oms.RootDigest(want.Resources)
			b, err := bundle.LoadJSONFromPath(sig)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", digest[:]), verify.WithCertificateIdentity(id))); err != nil {
				t.Fatalf("sigstore-go: %v", err)
			}
			other, _ := verify.NewShortCertificateIdentity("https://sigstore.verify.ibm.com/oauth2", "", "someone@example.com", "")
			if _, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", digest[:]), verify.WithCertificateIdentity(other))); err == nil {
				t.Fatal("sigstore-go accepted another identity")
			}
			got, err := oms.Hash(model, want.Serialization, oms.HashOptions{Exclude: []string{"model.sig", "ignore-me"}})
			if err != nil {
				t.Fatal(err)
			}
			if d := oms.Compare(want, got, ""); len(d) != 0 {
				t.Fatalf("the files differ from the statement: %v", d)
			}
		})
	}
}

// TestAprKeylessOffline: lib/oms's own offline keyless check gives model-transparency's
// keyless cases the same verdict as sigstore-go, against the same trusted root.
func TestAprKeylessOffline(t *testing.T) {
	tests, trustedRoot := keylessMaterial(t)
	data, err := os.ReadFile(trustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := oms.ParseTrustedRoot(data)
	if err != nil {
		t.Fatal(err)
	}
	k := &oms.Keyless{Root: tr, Identity: "stefanb@us.ibm.com", Issuer: "https://sigstore.verify.ibm.com/oauth2"}
	for _, version := range []string{"v0.3.1", "v1.0.0", "v1.0.1", "v1.1.0"} {
		sig, _ := os.ReadFile(filepath.Join(tests, version+"-sigstore", "model.sig"))
		if _, err := k.VerifyKeyless(sig); err != nil {
			t.Errorf("%s: %v", version, err)
		}
		other := *k
		other.Identity = "someone@example.com"
		if _, err := other.VerifyKeyless(sig); err == nil || !strings.Contains(err.Error(), "not the identity") {
			t.Errorf("%s: another identity: %v", version, err)
		}
		other = *k
		other.Issuer = "https://accounts.google.com"
		if _, err := other.VerifyKeyless(sig); err == nil || !strings.Contains(err.Error(), "OIDC issuer") {
			t.Errorf("%s: another issuer: %v", version, err)
		}
		// The statement edited: the log records another payload.
		var m map[string]any
		json.Unmarshal(sig, &m)
		env := m["dsseEnvelope"].(map[string]any)
		p, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
		env["payload"] = base64.StdEncoding.EncodeToString(bytes.Replace(p, []byte("signme-2"), []byte("signme-3"), 1))
		edited, _ := json.Marshal(m)
		if _, err := k.VerifyKeyless(edited); err == nil || !strings.Contains(err.Error(), "another payload") {
			t.Errorf("%s: edited statement: %v", version, err)
		}
		// The log entry's time moved: its signed entry timestamp no longer verifies.
		json.Unmarshal(sig, &m)
		e := m["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any)
		e["integratedTime"] = "1700000000"
		moved, _ := json.Marshal(m)
		if _, err := k.VerifyKeyless(moved); err == nil || !strings.Contains(err.Error(), "signed entry timestamp") {
			t.Errorf("%s: moved time: %v", version, err)
		}
		// A hash of the inclusion proof changed, or the checkpoint re-signed by another.
		json.Unmarshal(sig, &m)
		proof := m["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any)["inclusionProof"].(map[string]any)
		hashes := proof["hashes"].([]any)
		hashes[0] = base64.StdEncoding.EncodeToString(make([]byte, 32))
		broken, _ := json.Marshal(m)
		if _, err := k.VerifyKeyless(broken); err == nil || !strings.Contains(err.Error(), "inclusion proof does not lead") {
			t.Errorf("%s: proof changed: %v", version, err)
		}
		json.Unmarshal(sig, &m)
		proof = m["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any)["inclusionProof"].(map[string]any)
		cp := proof["checkpoint"].(map[string]any)
		note := cp["envelope"].(string)
		i := strings.LastIndex(note, " ")
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(note[i+1:]))
		raw[len(raw)-1] ^= 1
		cp["envelope"] = note[:i+1] + base64.StdEncoding.EncodeToString(raw) + "\n"
		forged, _ := json.Marshal(m)
		if _, err := k.VerifyKeyless(forged); err == nil || !strings.Contains(err.Error(), "checkpoint's signature") {
			t.Errorf("%s: checkpoint signature changed: %v", version, err)
		}
	}
}

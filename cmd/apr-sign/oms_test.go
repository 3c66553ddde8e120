package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/oms"
)

// omsFixtures is where copies of the OMS reference material live (docs/SIGNING.md,
// "OMS test material"): testdata/oms.
func omsFixtures(t *testing.T, sub string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "oms")
	p := filepath.Join(dir, sub)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("OMS reference material %s is missing: %v", p, err)
	}
	abs, _ := filepath.Abs(p)
	return abs
}

// copyTree copies a directory so a test can change files in it.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// modelSigningCommand pulls the model_signing invocations out of a test-verify-*.sh
// script: the arguments after "python -m model_signing" up to "; then".
var modelSigningCommand = regexp.MustCompile(`python -m model_signing((?:\s|\\\n)+[^;]*?);\s*then`)

// TestOMSModelTransparencyCases runs every verify command of model-transparency's
// scripts/tests (models signed by model_signing v0.2.0 to v1.1.0) through apr-sign,
// word for word but for the program name, in a copy of that folder; then changes a
// signed file and expects exit 1 naming it.
func TestOMSModelTransparencyCases(t *testing.T) {
	src := omsFixtures(t, "model-transparency/scripts/tests")
	scripts, _ := filepath.Glob(filepath.Join(src, "test-verify-*.sh"))
	if len(scripts) < 13 {
		t.Fatalf("%d test-verify scripts in %s, expected the 13 of v0.2.0..v1.1.0", len(scripts), src)
	}
	for _, script := range scripts {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(script), "test-verify-"), ".sh")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(script)
			if err != nil {
				t.Fatal(err)
			}
			cmds := modelSigningCommand.FindAllStringSubmatch(string(body), -1)
			if len(cmds) == 0 {
				t.Fatalf("%s: no model_signing command found", script)
			}
			work := t.TempDir()
			copyTree(t, src, work)
			caseDir := filepath.Join(work, name)
			for _, c := range cmds {
				args := append([]string{"oms"}, strings.Fields(strings.ReplaceAll(c[1], "\\\n", " "))...)
				// Commands "while in model directory" run from the case's folder.
				t.Chdir(work)
				if args[len(args)-1] == "." {
					t.Chdir(caseDir)
				}
				out, errs, code := runIt(t, nil, args...)
				if strings.Contains(name, "sigstore") {
					// Keyless: checked offline against a trusted root, which the
					// scripts leave to model_signing's default (the network).
					if code != 2 || !strings.Contains(errs, "give --trust-config") {
						t.Fatalf("apr-sign %s: exit %d, %s", strings.Join(args, " "), code, errs)
					}
					root := filepath.Join(src, "..", "..", "..", "sigstore", "trusted-root-public-good.json")
					args = append(args[:len(args)-1], "--trust-config", root, args[len(args)-1])
					out, errs, code = runIt(t, nil, args...)
				}
				if code != 0 || !strings.Contains(out, "good OMS signature") {
					t.Fatalf("apr-sign %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
				}
				// A signed file changed: refused, naming it.
				f := filepath.Join(caseDir, "signme-1")
				orig, _ := os.ReadFile(f)
				os.WriteFile(f, append(orig, '!'), 0o644)
				_, errs, code = runIt(t, nil, args...)
				if code != 1 || !strings.Contains(errs, "changed: signme-1") {
					t.Fatalf("signme-1 changed: exit %d, %s", code, errs)
				}
				os.WriteFile(f, orig, 0o644)
			}
		})
	}
}

// TestOMSSpecVectors gives the spec's test vectors (test-vectors/v1.0) the verdicts
// of their folders: valid bundles parse and their signatures verify (the key and
// certificate ones against model-transparency's keys, over the files they list,
// which are v1.1.0-elliptic-key's); invalid ones are refused.
func TestOMSSpecVectors(t *testing.T) {
	vec := omsFixtures(t, "model-signing-spec/test-vectors/v1.0")
	keys := omsFixtures(t, "model-transparency/scripts/tests/keys/certificate")
	model := filepath.Join(t.TempDir(), "model")
	copyTree(t, omsFixtures(t, "model-transparency/scripts/tests/v1.1.0-elliptic-key"), model)
	os.Remove(filepath.Join(model, "model.sig"))
	t.Chdir(t.TempDir())
	for _, c := range []struct{ file, method, trust string }{
		{"valid/key.bundle.json", "key", "--public-key"},
		{"valid/certificate.bundle.json", "certificate", "--certificate-chain"},
	} {
		trust := filepath.Join(keys, "signing-key-pub.pem")
		if c.method == "certificate" {
			trust = filepath.Join(keys, "ca-cert.pem")
		}
		out, errs, code := runIt(t, nil, "oms", "verify", c.method, c.trust, trust, "--signature", filepath.Join(vec, c.file), model)
		if code != 0 {
			t.Errorf("%s: exit %d %s%s", c.file, code, out, errs)
		}
	}
	data, err := os.ReadFile(filepath.Join(vec, "valid/sigstore.bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := oms.ParseBundle(data); err != nil || b.Keyless == nil {
		t.Errorf("valid/sigstore.bundle.json: %v", err)
	}
	invalid, _ := filepath.Glob(filepath.Join(vec, "invalid", "*.json"))
	for _, f := range invalid {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := oms.ParseBundle(data); err == nil {
			t.Errorf("%s: accepted", f)
		}
	}
	bad, _ := filepath.Glob(filepath.Join(vec, "invalid-payload", "*.json"))
	for _, f := range bad {
		_, errs, code := runIt(t, nil, "oms", "verify", "key", "--public-key", filepath.Join(keys, "signing-key-pub.pem"), "--signature", f, model)
		if code != 1 || !strings.Contains(errs, "statement") {
			t.Errorf("%s: exit %d, %s", f, code, errs)
		}
	}
	if len(invalid) < 4 || len(bad) < 1 {
		t.Fatalf("%d invalid and %d invalid-payload vectors", len(invalid), len(bad))
	}
}

// writeECKey writes a P-256 key pair as PEM files (PKCS #8 and SubjectPublicKeyInfo).
func writeECKey(t *testing.T, dir string) (priv, pub string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	pder, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	priv, pub = filepath.Join(dir, "key.pem"), filepath.Join(dir, "pub.pem")
	os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder}), 0o644)
	return priv, pub
}

// TestOMSSignVerifyCLI: model_signing's default signature (model.sig in the current
// directory, here the model's own folder), excluded from the files it signs.
func TestOMSSignVerifyCLI(t *testing.T) {
	keys := t.TempDir()
	priv, pub := writeECKey(t, keys)
	model := t.TempDir()
	os.WriteFile(filepath.Join(model, "config.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(model, "weights.bin"), make([]byte, 5000), 0o644)
	os.WriteFile(filepath.Join(model, "notes.txt"), []byte("left out"), 0o644)
	t.Chdir(model)
	_, errs := mustRun(t, nil, "oms", "sign", "key", "--private_key", priv, "--ignore-paths", "notes.txt", "--method", "shards", "--shard-size", "1024", ".")
	if !strings.Contains(errs, "signed 2 files (5002 bytes) as 6 resources (shards, sha256)") {
		t.Fatalf("sign report: %s", errs)
	}
	first, _ := os.ReadFile("model.sig")
	out, _ := mustRun(t, nil, "oms", "verify", "key", "--public-key", pub, ".")
	if !strings.Contains(out, "good OMS signature (key method) by key ") || !strings.Contains(out, "; 2 files, 6 resources (shards, sha256)") {
		t.Fatalf("verify report: %s", out)
	}
	// Signed again: the same statement bytes (the signature differs: ECDSA is randomized).
	mustRun(t, nil, "oms", "sign", "key", "--private-key", priv, "--ignore-paths", "notes.txt", "--method", "shards", "--shard-size", "1024", ".")
	second, _ := os.ReadFile("model.sig")
	b1, _ := oms.ParseBundle(first)
	b2, _ := oms.ParseBundle(second)
	if string(b1.Payload) != string(b2.Payload) {
		t.Fatal("signing twice gave different statements")
	}
	f, _ := os.OpenFile("weights.bin", os.O_WRONLY, 0)
	f.WriteAt([]byte{1}, 3000)
	f.Close()
	_, errs, code := runIt(t, nil, "oms", "verify", "key", "--public-key", pub, ".")
	if code != 1 || !strings.Contains(errs, "changed: weights.bin bytes 2048-3072 (the shard at offset 2048)") {
		t.Fatalf("changed shard: exit %d %s", code, errs)
	}
	_, errs, code = runIt(t, nil, "oms", "sign", "key", "--private-key", priv, "--shard-size", "1024", ".")
	if code != 2 || !strings.Contains(errs, "--shard-size is for --method shards") {
		t.Fatalf("--shard-size without shards: exit %d %s", code, errs)
	}
	_, errs, code = runIt(t, nil, "oms", "verify", "key", "--public-key", priv, ".")
	if code != 1 || !strings.Contains(errs, "no PEM public key") {
		t.Fatalf("a private key as public: exit %d %s", code, errs)
	}
}

// TestOMSCertificateCLI: the certificate method through the CLI with PEM files, the
// chain checked against the given root; apr-sign's own Ed25519 keys are refused
// with the reason, and the keyless command says what it does not do.
func TestOMSCertificateCLI(t *testing.T) {
	dir := t.TempDir()
	var parent *x509.Certificate
	var parentKey *ecdsa.PrivateKey
	pemFile := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
		return p
	}
	var files []string
	for i, cn := range []string{"root", "intermediate", "publisher"} {
		k, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 1)), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			BasicConstraintsValid: true, IsCA: i < 2, KeyUsage: x509.KeyUsageCertSign}
		if i == 2 {
			tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		}
		if parent == nil {
			parent, parentKey = tmpl, k
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		parent, _ = x509.ParseCertificate(der)
		parentKey = k
		files = append(files, pemFile(cn+".pem", "CERTIFICATE", der))
		if i == 2 {
			kd, _ := x509.MarshalECPrivateKey(k) // SEC 1, as openssl ecparam writes it
			files = append(files, pemFile("publisher.key", "EC PRIVATE KEY", kd))
		}
	}
	model := filepath.Join(dir, "model")
	os.Mkdir(model, 0o755)
	os.WriteFile(filepath.Join(model, "model.gguf"), []byte("GGUF"), 0o644)
	sig := filepath.Join(dir, "model.sig")
	mustRun(t, nil, "oms", "sign", "certificate", "--private-key", files[3], "--signing-certificate", files[2],
		"--certificate-chain", files[1], "--signature", sig, model)
	out, _ := mustRun(t, nil, "oms", "verify", "certificate", "--certificate_chain", files[0], "--signature", sig, model)
	if !strings.Contains(out, `by certificate "CN=publisher" issued by "CN=intermediate"; 1 file, 1 resource`) {
		t.Fatalf("verify: %s", out)
	}
	// A root that did not issue the chain.
	ok, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otmpl := &x509.Certificate{SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: "root"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true, IsCA: true, KeyUsage: x509.KeyUsageCertSign}
	oder, _ := x509.CreateCertificate(rand.Reader, otmpl, otmpl, &ok.PublicKey, ok)
	_, errs, code := runIt(t, nil, "oms", "verify", "certificate", "--certificate-chain", pemFile("other.pem", "CERTIFICATE", oder), "--signature", sig, model)
	if code != 1 || !strings.Contains(errs, "unknown authority") {
		t.Fatalf("another root: exit %d %s", code, errs)
	}
	_, errs, code = runIt(t, nil, "oms", "verify", "key", "--public-key", files[2], "--signature", sig, model)
	if code != 1 || !strings.Contains(errs, "no PEM public key") {
		t.Fatalf("a certificate as a key: exit %d %s", code, errs)
	}

	priv, _ := keygen(t, dir, "author")
	_, errs, code = runIt(t, nil, "oms", "sign", "key", "--private-key", priv, "--signature", sig, model)
	if code != 1 || !strings.Contains(errs, "Ed25519 key: OMS's key and certificate methods take ECDSA keys") {
		t.Fatalf("an Ed25519 key: exit %d %s", code, errs)
	}
	_, errs, code = runIt(t, nil, "oms", "verify", "sigstore", "--identity", "a@b", "--identity_provider", "https://x", "--signature", sig, model)
	if code != 2 || !strings.Contains(errs, "give --trust-config") {
		t.Fatalf("verify sigstore without a trusted root: exit %d %s", code, errs)
	}
}

package oms

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeModel makes a small checkpoint-like directory and returns its path.
func writeModel(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "model")
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var sampleFiles = map[string]string{
	"config.json":                      `{"a":1}`,
	"model-00001-of-00002.safetensors": strings.Repeat("abcdefgh", 5) + "xyz",
	"model-00002-of-00002.safetensors": strings.Repeat("01234567", 3),
	"tokenizer/tokenizer.json":         "{}",
	"a-b":                              "sorts after a/ by component, before it as a string",
	"a/x":                              "1",
	".git/HEAD":                        "ref: refs/heads/main",
	".gitattributes":                   "*.safetensors filter=lfs",
	"sub/.git":                         "only the top-level .git is left out",
}

func newKey(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func signDir(t *testing.T, dir string, s Serialization, signer *Signer) ([]byte, *Manifest) {
	t.Helper()
	m, err := Hash(dir, s, HashOptions{})
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
	return b, m
}

func files() Serialization { return Serialization{Method: MethodFiles, HashType: SHA256} }

func TestHashOrderAndExclusions(t *testing.T) {
	dir := writeModel(t, sampleFiles)
	m, err := Hash(dir, files(), HashOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range m.Resources {
		names = append(names, r.Name)
	}
	// Python's PurePosixPath order: "a/x" (component "a") before "a-b".
	want := "a/x a-b config.json model-00001-of-00002.safetensors model-00002-of-00002.safetensors sub/.git tokenizer/tokenizer.json"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("resources\n got %s\nwant %s", got, want)
	}
	sum := sha256.Sum256([]byte(sampleFiles["config.json"]))
	if !bytes.Equal(m.Resources[2].Digest, sum[:]) {
		t.Fatalf("config.json digest %x, want %x", m.Resources[2].Digest, sum)
	}
	if m.ModelName != "model" || m.Files != 7 {
		t.Fatalf("name %q files %d", m.ModelName, m.Files)
	}
}

func TestShardsNumericOrder(t *testing.T) {
	content := strings.Repeat("0123456789", 12) // 120 bytes: 12 shards of 10
	dir := writeModel(t, map[string]string{"w": content, "e": ""})
	m, err := Hash(dir, Serialization{Method: MethodShards, HashType: SHA256, ShardSize: 10}, HashOptions{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Resources) != 12 || m.Files != 2 {
		t.Fatalf("%d resources, %d files: an empty file has no shards, 120 bytes have 12", len(m.Resources), m.Files)
	}
	// Ordered by offset, not as strings ("w:100:110" would sort before "w:20:30").
	if m.Resources[2].Name != "w:20:30" || m.Resources[11].Name != "w:110:120" {
		t.Fatalf("order: %s ... %s", m.Resources[2].Name, m.Resources[11].Name)
	}
	sum := sha256.Sum256([]byte("0123456789"))
	if !bytes.Equal(m.Resources[5].Digest, sum[:]) {
		t.Fatal("shard digest")
	}
}

// TestStatementDeterministic: the same model gives the same statement bytes, with
// any number of workers, and the statement reads back to the same manifest.
func TestStatementDeterministic(t *testing.T) {
	dir := writeModel(t, sampleFiles)
	s := Serialization{Method: MethodShards, HashType: BLAKE2b, ShardSize: 16, IgnorePaths: []string{".git", "ignored"}}
	var first []byte
	for _, w := range []int{1, 2, 7} {
		m, err := Hash(dir, s, HashOptions{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		st, err := m.Statement()
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = st
		} else if !bytes.Equal(st, first) {
			t.Fatalf("workers %d: statement differs", w)
		}
	}
	back, err := ParseStatement(first)
	if err != nil {
		t.Fatal(err)
	}
	again, err := back.Statement()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, first) {
		t.Fatalf("round trip differs:\n%s\n%s", again, first)
	}
	if !strings.Contains(string(first), `"shard_size": 16,`) || !strings.Contains(string(first), `"algorithm": "blake2b"`) {
		t.Fatalf("statement:\n%s", first)
	}
}

func TestSymlinks(t *testing.T) {
	dir := writeModel(t, map[string]string{"real": "data", "d/f": "x"})
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if _, err := Hash(dir, files(), HashOptions{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a symlink without allow_symlinks: %v", err)
	}
	s := files()
	s.AllowSymlinks = true
	if err := os.Symlink(".", filepath.Join(dir, "d", "loop")); err != nil {
		t.Fatal(err)
	}
	var warned []string
	m, err := Hash(dir, s, HashOptions{Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range m.Resources {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, " "); got != "d/f link real" || len(warned) != 1 || !strings.Contains(warned[0], "cycle") {
		t.Fatalf("resources %s, warnings %q", got, warned)
	}
	if !bytes.Equal(m.Resources[1].Digest, m.Resources[2].Digest) {
		t.Fatal("a link hashes its target")
	}
}

func TestRefusals(t *testing.T) {
	empty := t.TempDir()
	if _, err := Hash(empty, files(), HashOptions{}); err == nil || !strings.Contains(err.Error(), "no files") {
		t.Fatalf("empty model: %v", err)
	}
	dir := writeModel(t, map[string]string{"f": "x"})
	for _, s := range []Serialization{
		{Method: "tensors", HashType: SHA256},
		{Method: MethodShards, HashType: SHA256},
		{Method: MethodFiles, HashType: "blake3"},
		{Method: MethodFiles, HashType: SHA256, IgnorePaths: []string{"../x"}},
	} {
		if _, err := Hash(dir, s, HashOptions{}); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

func TestKeyRoundTripAndTampering(t *testing.T) {
	for _, c := range []elliptic.Curve{elliptic.P256(), elliptic.P384(), elliptic.P521()} {
		t.Run(c.Params().Name, func(t *testing.T) {
			k := newKey(t, c)
			dir := writeModel(t, sampleFiles)
			s := Serialization{Method: MethodShards, HashType: SHA256, ShardSize: 16}
			bundle, _ := signDir(t, dir, s, NewKeySigner(k))
			v := &Verifier{Key: &k.PublicKey}
			rep, err := VerifyModel(dir, v, bundle, VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Signer != "key "+KeyHint(&k.PublicKey) || rep.Actual.Files != 7 {
				t.Fatalf("signer %q files %d", rep.Signer, rep.Actual.Files)
			}
			checkTampering(t, dir, v, bundle, "changed: model-00001-of-00002.safetensors bytes 16-32 (the shard at offset 16)")
		})
	}
}

// checkTampering changes the model and the bundle in each way a verifier must
// notice and checks that the error names what changed.
func checkTampering(t *testing.T, dir string, v *Verifier, bundle []byte, changedMsg string) {
	t.Helper()
	mismatch := func(what string, want ...string) {
		t.Helper()
		_, err := VerifyModel(dir, v, bundle, VerifyOptions{})
		var mm *MismatchError
		if !errors.As(err, &mm) {
			t.Fatalf("%s: %v", what, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: %v\nlacks %q", what, err, w)
			}
		}
	}
	f := filepath.Join(dir, "model-00001-of-00002.safetensors")
	orig, _ := os.ReadFile(f)
	changed := bytes.Clone(orig)
	changed[20] ^= 1
	os.WriteFile(f, changed, 0o644)
	mismatch("a byte changed", changedMsg)
	os.WriteFile(f, orig, 0o644)

	os.WriteFile(filepath.Join(dir, "added.bin"), []byte("new"), 0o644)
	mismatch("a file added", "extra: added.bin")
	os.Remove(filepath.Join(dir, "added.bin"))

	cfg := filepath.Join(dir, "config.json")
	os.Rename(cfg, cfg+".old")
	mismatch("a file renamed", "missing: config.json", "extra: config.json.old")
	os.Rename(cfg+".old", cfg)
	if _, err := VerifyModel(dir, v, bundle, VerifyOptions{}); err != nil {
		t.Fatalf("restored: %v", err)
	}
	// With --ignore-unsigned-files an extra file is no error; a missing one still is.
	os.WriteFile(filepath.Join(dir, "added.bin"), []byte("new"), 0o644)
	if _, err := VerifyModel(dir, v, bundle, VerifyOptions{IgnoreUnsigned: true}); err != nil {
		t.Fatalf("ignore unsigned: %v", err)
	}
	if _, err := VerifyModel(dir, v, bundle, VerifyOptions{IgnorePaths: []string{"added.bin"}}); err != nil {
		t.Fatalf("ignore path: %v", err)
	}
	// Every signed file gone, only unsigned ones left: each named missing.
	if _, err := VerifyModel(dir, v, bundle, VerifyOptions{IgnoreUnsigned: true, IgnorePaths: []string{"a", "a-b", "config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "sub", "tokenizer"}}); err == nil || !strings.Contains(err.Error(), "missing: config.json") {
		t.Fatalf("all signed files excluded: %v", err)
	}
	os.Remove(filepath.Join(dir, "added.bin"))

	// The statement edited (a digest replaced): the signature no longer covers it.
	var raw map[string]any
	json.Unmarshal(bundle, &raw)
	env := raw["dsseEnvelope"].(map[string]any)
	payload, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
	edited := bytes.Replace(payload, []byte(`"config.json`), []byte(`"config.jsom`), 1)
	if bytes.Equal(edited, payload) {
		t.Fatal("no edit")
	}
	env["payload"] = base64.StdEncoding.EncodeToString(edited)
	forged, _ := json.Marshal(raw)
	if _, err := VerifyModel(dir, v, forged, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "bad signature") {
		t.Fatalf("edited statement: %v", err)
	}
}

func TestKeySwapped(t *testing.T) {
	k, other := newKey(t, elliptic.P256()), newKey(t, elliptic.P256())
	dir := writeModel(t, map[string]string{"f": "x"})
	bundle, _ := signDir(t, dir, files(), NewKeySigner(k))
	_, err := VerifyModel(dir, &Verifier{Key: &other.PublicKey}, bundle, VerifyOptions{})
	if err == nil || !strings.Contains(err.Error(), "key mismatch") {
		t.Fatalf("another key: %v", err)
	}
	// The bundle's hint swapped for the other key's: the signature still fails.
	swapped := bytes.Replace(bundle, []byte(KeyHint(&k.PublicKey)), []byte(KeyHint(&other.PublicKey)), 1)
	_, err = VerifyModel(dir, &Verifier{Key: &other.PublicKey}, swapped, VerifyOptions{})
	if err == nil || !strings.Contains(err.Error(), "bad signature") {
		t.Fatalf("hint swapped: %v", err)
	}
	// Signed again by the other key: right for its key, wrong for k's.
	resigned, _ := signDir(t, dir, files(), NewKeySigner(other))
	if _, err := VerifyModel(dir, &Verifier{Key: &k.PublicKey}, resigned, VerifyOptions{}); err == nil {
		t.Fatal("a bundle re-signed by another key verified with the first")
	}
}

// testCA makes a root, an intermediate and a leaf for code signing.
func testCA(t *testing.T) (root, inter, leaf *x509.Certificate, leafKey *ecdsa.PrivateKey) {
	t.Helper()
	mk := func(cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ca bool) (*x509.Certificate, *ecdsa.PrivateKey) {
		k := newKey(t, elliptic.P384())
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			BasicConstraintsValid: true, IsCA: ca,
		}
		if ca {
			tmpl.KeyUsage = x509.KeyUsageCertSign
		} else {
			tmpl.KeyUsage = x509.KeyUsageDigitalSignature
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}
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
	root, rk := mk("test root", nil, nil, true)
	inter, ik := mk("test intermediate", root, rk, true)
	leaf, leafKey = mk("model publisher", inter, ik, false)
	return
}

func TestCertificateRoundTrip(t *testing.T) {
	root, inter, leaf, key := testCA(t)
	dir := writeModel(t, sampleFiles)
	s, err := NewCertificateSigner(key, leaf, []*x509.Certificate{inter})
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := signDir(t, dir, files(), s)
	v := &Verifier{Roots: []*x509.Certificate{root}}
	rep, err := VerifyModel(dir, v, bundle, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Signer, `"CN=model publisher" issued by "CN=test intermediate"`) {
		t.Fatalf("signer %q", rep.Signer)
	}
	// Another root does not vouch for the chain; nor does the key method take it.
	other, _, _, _ := testCA(t)
	if _, err := VerifyModel(dir, &Verifier{Roots: []*x509.Certificate{other}}, bundle, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("untrusted root: %v", err)
	}
	if _, err := VerifyModel(dir, &Verifier{Key: &key.PublicKey}, bundle, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "certificate method") {
		t.Fatalf("key method on a certificate bundle: %v", err)
	}
	// After the leaf expired.
	if _, err := VerifyModel(dir, &Verifier{Roots: []*x509.Certificate{root}, Time: time.Now().Add(2 * time.Hour)}, bundle, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired: %v", err)
	}
	if _, err := NewCertificateSigner(newKey(t, elliptic.P384()), leaf, nil); err == nil {
		t.Fatal("a certificate for another key accepted")
	}
	checkTampering(t, dir, v, bundle, "changed: model-00001-of-00002.safetensors (content differs)")
}

func TestParseBundleRefusals(t *testing.T) {
	k := newKey(t, elliptic.P256())
	dir := writeModel(t, map[string]string{"f": "x"})
	good, _ := signDir(t, dir, files(), NewKeySigner(k))
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		json.Unmarshal(good, &m)
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	vm := func(m map[string]any) map[string]any { return m["verificationMaterial"].(map[string]any) }
	env := func(m map[string]any) map[string]any { return m["dsseEnvelope"].(map[string]any) }
	cases := map[string][]byte{
		"not a Sigstore bundle v0.1-v0.3": edit(func(m map[string]any) { m["mediaType"] = "application/json" }),
		"no dsseEnvelope":                 edit(func(m map[string]any) { delete(m, "dsseEnvelope") }),
		"no verificationMaterial":         edit(func(m map[string]any) { delete(m, "verificationMaterial") }),
		"expected one": edit(func(m map[string]any) {
			vm(m)["certificate"] = map[string]any{"rawBytes": "AAAA"}
			vm(m)["tlogEntries"] = []any{map[string]any{}}
		}),
		"payloadType":       edit(func(m map[string]any) { env(m)["payloadType"] = "text/plain" }),
		"no signatures":     edit(func(m map[string]any) { env(m)["signatures"] = []any{} }),
		"not a JSON object": []byte("{"),
	}
	for want, b := range cases {
		if _, err := ParseBundle(b); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	keyless := edit(func(m map[string]any) {
		delete(vm(m), "publicKey")
		vm(m)["certificate"] = map[string]any{"rawBytes": "AAAA"}
		vm(m)["tlogEntries"] = []any{map[string]any{}}
	})
	if _, err := (&Verifier{Key: &k.PublicKey}).Verify(keyless); !errors.Is(err, ErrKeyless) {
		t.Fatalf("keyless: %v", err)
	}
}

func TestParseStatementRefusals(t *testing.T) {
	dir := writeModel(t, map[string]string{"f": "x", "g": "y"})
	m, _ := Hash(dir, files(), HashOptions{})
	st, _ := m.Statement()
	d0 := hex.EncodeToString(m.Resources[0].Digest)
	cases := map[string]string{
		"_type":                   strings.Replace(string(st), "Statement/v1", "Statement/v0.1", 1),
		"predicateType":           strings.Replace(string(st), "signature/v1.0", "signature/v2", 1),
		"not the root digest":     strings.Replace(string(st), d0, strings.Repeat("0", 64), 1),
		"listed twice":            strings.Replace(string(st), `"name": "g"`, `"name": "f"`, 1),
		"leaves the model root":   strings.Replace(string(st), `"name": "g"`, `"name": "../g"`, 1),
		"hash_type":               strings.Replace(string(st), `"algorithm": "sha256"`, `"algorithm": "md5"`, 1),
		"not JSON":                "[",
		"needs method, hash_type": strings.Replace(string(st), `"allow_symlinks": false`, `"allow_symlinkz": false`, 1),
	}
	for want, s := range cases {
		if _, err := ParseStatement([]byte(s)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

func TestSingleFileModel(t *testing.T) {
	dir := writeModel(t, map[string]string{"m.gguf": "GGUF...."})
	f := filepath.Join(dir, "m.gguf")
	k := newKey(t, elliptic.P256())
	bundle, m := signDir(t, f, files(), NewKeySigner(k))
	if m.Resources[0].Name != "m.gguf" || m.ModelName != "m.gguf" {
		t.Fatalf("single file: %q %q", m.Resources[0].Name, m.ModelName)
	}
	if _, err := VerifyModel(f, &Verifier{Key: &k.PublicKey}, bundle, VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f, []byte("GGUF...!"), 0o644)
	if _, err := VerifyModel(f, &Verifier{Key: &k.PublicKey}, bundle, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "changed: m.gguf") {
		t.Fatalf("changed single file: %v", err)
	}
}

func TestPyBytesRepr(t *testing.T) {
	for in, want := range map[string]string{
		"{\n  \"a\": 1\n}": `b'{\n  "a": 1\n}'`,
		"it's":             `b"it's"`,
		"'\"\\\x00\xff":    `b'\'"\\\x00\xff'`,
	} {
		if got := pyBytesRepr([]byte(in)); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

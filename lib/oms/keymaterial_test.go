package oms

import (
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
)

// TestBundleKeyMaterialMustNameTheGivenKey: whatever key a bundle's
// verificationMaterial names (a hint, or the key itself in rawBytes as model_signing
// wrote it before v1.1.0) must be the key given to verify with; a bundle that names
// another key, or key material apr cannot read, is refused even though its DSSE
// signature is good for the given key.
func TestBundleKeyMaterialMustNameTheGivenKey(t *testing.T) {
	k, other := newKey(t, elliptic.P256()), newKey(t, elliptic.P384())
	dir := writeModel(t, map[string]string{"f": "x"})
	good, _ := signDir(t, dir, files(), NewKeySigner(k))
	withKey := func(pk map[string]any) []byte {
		var m map[string]any
		json.Unmarshal(good, &m)
		m["verificationMaterial"].(map[string]any)["publicKey"] = pk
		b, _ := json.Marshal(m)
		return b
	}
	der := func(pub any) []byte {
		d, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	pemOf := func(d []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: d}) }
	b64 := base64.StdEncoding.EncodeToString
	edPub, _, _ := ed25519.GenerateKey(nil)
	hint := KeyHint(&k.PublicKey)
	cases := []struct {
		name string
		pk   map[string]any
		want string // "" verifies
	}{
		{"the hint of the key", map[string]any{"hint": hint}, ""},
		{"the key as PEM", map[string]any{"rawBytes": b64(pemOf(der(&k.PublicKey)))}, ""},
		{"the key as DER", map[string]any{"rawBytes": b64(der(&k.PublicKey))}, ""},
		{"another key's hint", map[string]any{"hint": KeyHint(&other.PublicKey)}, "key mismatch"},
		{"the hint in capitals", map[string]any{"hint": strings.ToUpper(hint)}, "key mismatch"},
		{"another key as PEM", map[string]any{"rawBytes": b64(pemOf(der(&other.PublicKey)))}, "key mismatch"},
		{"another key as DER", map[string]any{"rawBytes": b64(der(&other.PublicKey))}, "key mismatch"},
		{"an Ed25519 key as PEM", map[string]any{"rawBytes": b64(pemOf(der(edPub)))}, "key mismatch"},
		{"not a key", map[string]any{"rawBytes": b64([]byte("hello"))}, "key mismatch"},
		{"the hint of the key, another key's bytes", map[string]any{"hint": hint, "rawBytes": b64(der(&other.PublicKey))}, "key mismatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := VerifyModel(dir, &Verifier{Key: &k.PublicKey}, withKey(c.pk), VerifyOptions{})
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("want %q: %v", c.want, err)
			}
		})
	}
}

// TestBundleSizeCap: ParseBundle refuses more than MaxBundle bytes before parsing
// them, and Sign refuses to write a bundle that no verifier would read.
func TestBundleSizeCap(t *testing.T) {
	if _, err := ParseBundle(make([]byte, MaxBundle+1)); err == nil || !strings.Contains(err.Error(), "more than the 16777216 accepted") {
		t.Fatalf("over the cap: %v", err)
	}
	k := newKey(t, elliptic.P256())
	st := []byte(`{"` + strings.Repeat("x", MaxBundle*3/4) + `":1}`)
	if _, err := NewKeySigner(k).Sign(st); err == nil || !strings.Contains(err.Error(), "a larger --shard-size") {
		t.Fatalf("a bundle over the cap written: %v", err)
	}
	if _, err := NewKeySigner(k).Sign(st[MaxBundle/4:]); err != nil {
		t.Fatalf("under the cap: %v", err)
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/sign"
)

// A malignant and a benign row of the Wisconsin data set (its first rows).
const rows = `17.99,10.38,122.8,1001,0.1184,0.2776,0.3001,0.1471,0.2419,0.07871,1.095,0.9053,8.589,153.4,0.006399,0.04904,0.05373,0.01587,0.03003,0.006193,25.38,17.33,184.6,2019,0.1622,0.6656,0.7119,0.2654,0.4601,0.1189
13.54,14.36,87.46,566.3,0.09779,0.08129,0.06664,0.04781,0.1885,0.05766,0.2699,0.7886,2.058,23.56,0.008462,0.0146,0.02387,0.01315,0.0198,0.0023,15.11,19.26,99.7,711.2,0.144,0.1773,0.239,0.1288,0.2977,0.07259
`

func TestEmbeddedModel(t *testing.T) {
	p, err := load(modelFile, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(&out, strings.NewReader(rows), p, false); err != nil {
		t.Fatal(err)
	}
	// The data set's labels: 0 malignant, 1 benign (scikit-learn's convention).
	if out.String() != "0\n1\n" {
		t.Fatalf("predictions %q, want the data set's labels 0 and 1", out.String())
	}
}

// TestEmbeddedRefusesOthers: a model with a flipped byte, or signed by another key,
// does not load.
func TestEmbeddedRefusesOthers(t *testing.T) {
	bad := bytes.Clone(modelFile)
	bad[len(bad)/2] ^= 1
	if _, err := load(bad, signerKey); err == nil {
		t.Error("a damaged model loads")
	}
	other, err := sign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := sign.MarshalPublicKeyPEM(other.Public())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load(modelFile, pem); err == nil || !strings.Contains(err.Error(), apr.ErrSignatureInvalid.Error()) {
		t.Errorf("a model signed by another key: %v", err)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/sign"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

func runIt(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// features are three rows of y = 1 + 2a + 3b's features, and want its predictions.
const features, want = "a,b\n0,0\n1,0\n2,1\n", "1\n3\n8\n"

func linear() *model.LinearRegressionModel {
	m := model.NewLinearRegression()
	m.Coefficients, m.Intercept = []float32{2, 3}, 1
	return m
}

func write(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func encoded(t *testing.T, m model.Model) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := apr.Encode(&b, m, apr.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPredict(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "linear.apr", encoded(t, linear()))
	out, stderr, code := runIt(t, features, path)
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout %q (want %q), stderr %s", code, out, want, stderr)
	}
	// a file of features, and -o FILE whose extension picks the format
	fpath := write(t, dir, "x.csv", []byte(features))
	if _, stderr, code := runIt(t, "", path, fpath, "-o", filepath.Join(dir, "y.npy")); code != 0 {
		t.Fatalf("-o y.npy: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "y.npy")); !bytes.HasPrefix(b, []byte("\x93NUMPY")) {
		t.Errorf("-o y.npy wrote %q, not an .npy file", b)
	}
}

// TestSignature: --require-signature -p accepts a model signed by the key and
// refuses an unsigned one, one signed by another key and a tampered one.
func TestSignature(t *testing.T) {
	dir := t.TempDir()
	key, _ := sign.GenerateKey(nil)
	other, _ := sign.GenerateKey(nil)
	pub, _ := sign.MarshalPublicKeyPEM(key.Public())
	pubPath := write(t, dir, "ci.pub", pub)
	plain := encoded(t, linear())
	var signed bytes.Buffer
	if _, err := apr.SignStream(&signed, bytes.NewReader(plain), key); err != nil {
		t.Fatal(err)
	}
	var foreign bytes.Buffer
	if _, err := apr.SignStream(&foreign, bytes.NewReader(plain), other); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runIt(t, features, "--require-signature", "-p", pubPath, write(t, dir, "signed.apr", signed.Bytes()))
	if code != 0 || out != want {
		t.Fatalf("signed model: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	// the coefficient 2 (0x40000000) becomes 2.5 (0x40200000), CRCs and all
	// recomputed would be the attacker's job; here the CRC catches it, and a
	// signature check must refuse it either way
	tampered := bytes.Clone(signed.Bytes())
	i := bytes.Index(tampered, []byte{0, 0, 0, 0x40, 0, 0, 0x40, 0x40})
	if i < 0 {
		t.Fatal("coefficients not found in the file")
	}
	tampered[i+2] = 0x20
	for name, c := range map[string]struct {
		file []byte
		msg  string
	}{
		"unsigned": {plain, "signature"},
		"foreign":  {foreign.Bytes(), "signature"},
		"tampered": {tampered, "checksum"},
	} {
		out, stderr, code := runIt(t, features, "--require-signature", "-p", pubPath, write(t, dir, name+".apr", c.file))
		if code != 1 || out != "" || !strings.Contains(stderr, c.msg) {
			t.Errorf("%s model: exit %d, stdout %q, stderr %q; want exit 1, nothing predicted, an error about the %s", name, code, out, stderr, c.msg)
		}
	}
	if _, stderr, code := runIt(t, features, "--require-signature", filepath.Join(dir, "signed.apr")); code != 2 {
		t.Errorf("--require-signature without -p: exit %d (%s), want 2", code, stderr)
	}
}

// TestSealed: a sealed model predicts with -i, and without it fails saying so.
func TestSealed(t *testing.T) {
	dir := t.TempDir()
	id, _ := seal.GenerateX25519Identity()
	idPath := write(t, dir, "alice.key", []byte(id.String()+"\n"))
	var sealed bytes.Buffer
	if err := apr.EncodeSealed(&sealed, linear(), apr.SaveOptions{}, id.Recipient()); err != nil {
		t.Fatal(err)
	}
	path := write(t, dir, "sealed.apr", sealed.Bytes())
	out, stderr, code := runIt(t, features, "-i", idPath, path)
	if code != 0 || out != want {
		t.Fatalf("sealed model with -i: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	if _, stderr, code := runIt(t, features, path); code != 1 || !strings.Contains(stderr, "sealed") {
		t.Errorf("sealed model without -i: exit %d, stderr %q", code, stderr)
	}
	other, _ := seal.GenerateX25519Identity()
	if _, stderr, code := runIt(t, features, "-i", write(t, dir, "bob.key", []byte(other.String()+"\n")), path); code != 1 {
		t.Errorf("sealed model, another identity: exit %d, stderr %q", code, stderr)
	}
}

// TestUnsupportedType: a model type without a predict is refused by name.
func TestUnsupportedType(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []modeltype.Type{modeltype.KMeans, modeltype.Custom} {
		var b bytes.Buffer
		s := stream.FromTensors(typ, container.Metadata{}, []tensor.Tensor{tensor.F32("centroids", []float32{0, 1, 2, 3})})
		if err := stream.Reencode(&b, s, nil, false); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runIt(t, features, write(t, dir, typ.String()+".apr", b.Bytes()))
		if code != 1 || !strings.Contains(stderr, "apr-predict: ") || !strings.Contains(stderr, "a "+typ.String()+" model has no predict") {
			t.Errorf("%v model: exit %d, stderr %q", typ, code, stderr)
		}
	}
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "linear.apr", encoded(t, linear()))
	for _, args := range [][]string{{path, "--proba"}, {path, "--format", "xml"}, {"-"}, {path, "--batch-size", "-1"}} {
		if _, stderr, code := runIt(t, features, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, stderr)
		}
	}
}

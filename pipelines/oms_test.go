package pipelines

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ecKey writes a P-256 key pair (PKCS #8, SubjectPublicKeyInfo PEM) for OMS, as
// 'openssl ecparam -genkey | openssl pkcs8 -topk8 -nocrypt' makes them.
func ecKey(t *testing.T, dir string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	pub, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	os.WriteFile(filepath.Join(dir, "ec.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, "ec.pub.pem"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// TestOMSSignsAPipedAPR: an .apr made by a pipe carries APR's own signature and is
// released with an OMS model.sig beside it; both verify, and both refuse an edit.
func TestOMSSignsAPipedAPR(t *testing.T) {
	needPrograms(t, "apr-encode", "apr-sign")
	dir := t.TempDir()
	ecKey(t, dir)
	src, _ := filepath.Abs("../testdata/aprender/mnist_784x2.apr")
	out, errs, code := sh(t, dir, `
apr-sign keygen -o author
mkdir release
apr-encode -c zstd <'`+src+`' | apr-sign -k author.key --comment v1 >release/model.apr
apr-sign oms sign key --private-key ec.pem --signature release/model.sig release
apr-sign verify -p author.pub release/model.apr
apr-sign oms verify key --public-key ec.pub.pem --signature release/model.sig release
apr-encode --metric accuracy=0.5 <release/model.apr >edited.apr && mv edited.apr release/model.apr
if apr-sign verify -p author.pub release/model.apr; then exit 3; fi
apr-sign oms verify key --public-key ec.pub.pem --signature release/model.sig release
`)
	if code != 1 || !strings.Contains(out, "good signature by key") || !strings.Contains(out, "release: good OMS signature (key method)") ||
		!strings.Contains(errs, "changed: model.apr (content differs)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// TestOMSSignsAGGUFSplitSet: apr-gguf export --split-max-tensors writes a split set
// into a folder; OMS signs the set as one model and names the part that changed.
func TestOMSSignsAGGUFSplitSet(t *testing.T) {
	needPrograms(t, "apr-gguf", "apr-sign")
	dir := t.TempDir()
	ecKey(t, dir)
	src, _ := filepath.Abs("../testdata/gguf/tiny-llama.Q8_0.gguf")
	out, errs, code := sh(t, dir, `
mkdir set
apr-gguf import <'`+src+`' | apr-gguf export --split-max-tensors 4 -o set/tiny-llama
apr-sign oms sign key --private-key ec.pem --method shards --shard-size 4096 --signature tiny-llama.sig set
apr-sign oms verify key --public-key ec.pub.pem --signature tiny-llama.sig set
printf 'X' | dd of=set/tiny-llama-00002-of-00006.gguf bs=1 seek=5000 conv=notrunc 2>/dev/null
apr-sign oms verify key --public-key ec.pub.pem --signature tiny-llama.sig set
`)
	if code != 1 || !strings.Contains(out, "set: good OMS signature (key method)") || !strings.Contains(out, "; 6 files,") ||
		!strings.Contains(errs, "changed: tiny-llama-00002-of-00006.gguf bytes 4096-8192 (the shard at offset 4096)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

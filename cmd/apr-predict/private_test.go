package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/sign"
	"github.com/apr-go/apr/lib/stream"
)

// published is the linear model with metadata inference_recipient = r (as apr-encode
// --inference-recipient writes it).
func published(t *testing.T, r string) []byte {
	t.Helper()
	src, err := stream.Open(bytes.NewReader(encoded(t, linear())))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = stream.Reencode(&out, src, func(h *container.Header) {
		h.Metadata.Extra = map[string]any{"inference_recipient": r}
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func keyFile(t *testing.T, dir, name string) (*seal.X25519Identity, string) {
	id, _ := seal.GenerateX25519Identity()
	return id, write(t, dir, name, []byte(id.String()+"\n"))
}

// TestPrivateInference: request, serve, open; and every refusal of the brief: wrong
// key, tampered, truncated and replayed requests, another model, a reply to another
// request, a reply opened by anyone but the requester, an unsigned recipient under -p.
func TestPrivateInference(t *testing.T) {
	dir := t.TempDir()
	owner, ownerKey := keyFile(t, dir, "owner.key")
	user, userKey := keyFile(t, dir, "user.key")
	_, eveKey := keyFile(t, dir, "eve.key")
	model := write(t, dir, "m.apr", published(t, owner.Recipient().String()))
	seen := filepath.Join(dir, "seen")
	os.Mkdir(seen, 0o700)

	request, stderr, code := runIt(t, features, "--request", model, "--reply-to", user.Recipient().String())
	if code != 0 || !strings.HasPrefix(request, "age-encryption.org/v1\n") {
		t.Fatalf("--request: exit %d, stderr %s", code, stderr)
	}
	reqPath := write(t, dir, "request", []byte(request))
	serve := func(req string, key string) (string, string, int) {
		return runIt(t, req, model, "-i", key, "--serve-request", "--replay-dir", seen)
	}
	// wrong key first: refused, and the id is not burnt
	if out, stderr, code := serve(request, eveKey); code != 1 || out != "" || !strings.Contains(stderr, "inference recipient") {
		t.Errorf("served with another key: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	tampered := []byte(request)
	tampered[len(tampered)-5] ^= 1
	if out, stderr, code := serve(string(tampered), ownerKey); code != 1 || strings.Contains(out, "age") || !strings.Contains(stderr, "decryption failed") {
		t.Errorf("tampered request: exit %d, stderr %s", code, stderr)
	}
	reply, stderr, code := serve(request, ownerKey)
	if code != 0 {
		t.Fatalf("--serve-request: exit %d, stderr %s", code, stderr)
	}
	replyPath := write(t, dir, "reply", []byte(reply))
	out, stderr, code := runIt(t, reply, "--open-reply", reqPath, "-i", userKey)
	if code != 0 || out != want {
		t.Fatalf("--open-reply: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	if out, _, code := runIt(t, "", "--open-reply", reqPath, "-i", userKey, replyPath); code != 0 || out != want {
		t.Fatalf("--open-reply FILE: exit %d, stdout %q", code, out)
	}
	if out, stderr, code := serve(request, ownerKey); code != 1 || out != "" || !strings.Contains(stderr, "replayed") {
		t.Errorf("replayed request: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	if _, stderr, code := runIt(t, reply, "--open-reply", reqPath, "-i", ownerKey); code != 1 || !strings.Contains(stderr, "decryption failed") {
		t.Errorf("reply opened by the owner: exit %d, stderr %s", code, stderr)
	}
	other, _, _ := runIt(t, "x,y\n5,5\n", "--request", model, "--reply-to", user.Recipient().String(), "--proba")
	if _, stderr, code := serve(other, ownerKey); code != 1 || !strings.Contains(stderr, "proba") {
		t.Errorf("--proba of a regression model: exit %d, stderr %s", code, stderr)
	}
	other, _, _ = runIt(t, "x,y\n5,5\n", "--request", model, "--reply-to", user.Recipient().String())
	otherReply, _, code := serve(other, ownerKey)
	if code != 0 {
		t.Fatal("second request not served")
	}
	if out, stderr, code := runIt(t, otherReply, "--open-reply", reqPath, "-i", userKey); code != 1 || out != "" || !strings.Contains(stderr, "another request") {
		t.Errorf("reply to another request: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	if out, _, code := runIt(t, reply[:len(reply)-3], "--open-reply", reqPath, "-i", userKey); code != 1 || out != "" {
		t.Errorf("truncated reply: exit %d, stdout %q", code, out)
	}
	// bad rows: a clear error, no reply
	bad, _, _ := runIt(t, "1,2,3\n", "--request", model, "--reply-to", user.Recipient().String())
	if out, stderr, code := serve(bad, ownerKey); code != 1 || out != "" || !strings.Contains(stderr, "features") {
		t.Errorf("three features for two: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	nan, _, _ := runIt(t, "1,NaN\n", "--request", model, "--reply-to", user.Recipient().String())
	if out, stderr, code := serve(nan, ownerKey); code != 1 || out != "" || !strings.Contains(stderr, "NaN") {
		t.Errorf("NaN: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	// another model (same owner key, other metadata) refuses the request
	src, _ := stream.Open(bytes.NewReader(published(t, owner.Recipient().String())))
	var renamed bytes.Buffer
	stream.Reencode(&renamed, src, func(h *container.Header) { h.Metadata.Name = "other" }, false)
	otherModel := write(t, dir, "other.apr", renamed.Bytes())
	fresh, _, _ := runIt(t, features, "--request", model, "--reply-to", user.Recipient().String())
	if _, stderr, code := runIt(t, fresh, otherModel, "-i", ownerKey, "--serve-request", "--replay-dir", seen); code != 1 || !strings.Contains(stderr, "another model") {
		t.Errorf("request for another model: exit %d, stderr %s", code, stderr)
	}
	// a model without a recipient
	if _, stderr, code := runIt(t, features, "--request", write(t, dir, "plain.apr", encoded(t, linear())), "--reply-to", user.Recipient().String()); code != 1 || !strings.Contains(stderr, "inference_recipient") {
		t.Errorf("no recipient: exit %d, stderr %s", code, stderr)
	}

	// signatures: -p at request time refuses an unsigned recipient, accepts a signed one
	key, _ := sign.GenerateKey(nil)
	pub, _ := sign.MarshalPublicKeyPEM(key.Public())
	pubPath := write(t, dir, "ci.pub", pub)
	if out, stderr, code := runIt(t, features, "--request", model, "--reply-to", user.Recipient().String(), "-p", pubPath); code != 1 || out != "" || !strings.Contains(stderr, "signature") {
		t.Errorf("unsigned recipient under -p: exit %d, stderr %s", code, stderr)
	}
	var signed bytes.Buffer
	if _, err := apr.SignStream(&signed, bytes.NewReader(published(t, owner.Recipient().String())), key); err != nil {
		t.Fatal(err)
	}
	signedPath := write(t, dir, "signed.apr", signed.Bytes())
	sreq, stderr, code := runIt(t, features, "--request", signedPath, "--reply-to", user.Recipient().String(), "-p", pubPath)
	if code != 0 {
		t.Fatalf("signed recipient under -p: exit %d, stderr %s", code, stderr)
	}
	sreply, stderr, code := runIt(t, sreq, signedPath, "-i", ownerKey, "-p", pubPath, "--serve-request", "--replay-dir", seen)
	if code != 0 {
		t.Fatalf("serving with -p: exit %d, stderr %s", code, stderr)
	}
	// age -d opens the reply as it is (the interop the format was chosen for)
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		return
	}
	if _, err := exec.LookPath("age"); err != nil {
		if os.Getenv("APR_REQUIRE_PEERS") == "1" {
			t.Fatal("required peer missing (APR_REQUIRE_PEERS=1): age is not installed (apt-get install -y age)")
		}
		t.Skip("peer test skipped: age is not installed (apt-get install -y age)")
	}
	cmd := exec.Command("age", "-d", "-i", userKey)
	cmd.Stdin = strings.NewReader(sreply)
	got, err := cmd.Output()
	if err != nil || string(got) != want {
		t.Fatalf("age -d of the reply: %q, %v", got, err)
	}
}

func TestPrivateUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--request", "m.apr"},                            // no --reply-to
		{"m.apr", "--serve-request", "-i", "k"},           // no --replay-dir
		{"m.apr", "--serve-request", "--replay-dir", "d"}, // no -i
		{"--request", "--serve-request", "m.apr"},         // two steps
		{"m.apr", "--reply-to", "age1x"},                  // --reply-to alone
		{"m.apr", "--replay-dir", "d"},                    // --replay-dir alone
		{"--open-reply", "r", "-i", "k", "--proba"},       // the request decides
		{"m.apr", "--serve-request", "--replay-dir", "d", "-i", "k", "--format", "npy"},
		{"--open-reply", "r", "-i", "k", "a", "b"}, // one argument
	} {
		if _, stderr, code := runIt(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}

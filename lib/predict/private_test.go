package predict

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/seal"
)

func privateFixture(t *testing.T) (owner, user *seal.X25519Identity, id [32]byte, md *container.Metadata) {
	t.Helper()
	owner, _ = seal.GenerateX25519Identity()
	user, _ = seal.GenerateX25519Identity()
	md = &container.Metadata{Name: "m", Extra: map[string]any{RecipientKey: owner.Recipient().String()}}
	id, err := ModelID(modeltype.LinearRegression, md, []container.TensorInfo{{Name: "coefficients", DType: dtype.F32, Shape: []int64{3}}})
	if err != nil {
		t.Fatal(err)
	}
	return
}

func makeRequest(t *testing.T, owner, user *seal.X25519Identity, id [32]byte, features string) (*Request, []byte) {
	t.Helper()
	req, err := NewRequest(id, user.Recipient(), false, "auto")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteRequest(&buf, owner.Recipient(), req, strings.NewReader(features)); err != nil {
		t.Fatal(err)
	}
	return req, buf.Bytes()
}

func TestPrivateRoundTrip(t *testing.T) {
	owner, user, id, md := privateFixture(t)
	r, err := InferenceRecipient(md)
	if err != nil || r.String() != owner.Recipient().String() {
		t.Fatalf("recipient %v, %v", r, err)
	}
	req, file := makeRequest(t, owner, user, id, "1,2,3\n4,5,6\n")
	got, feats, err := OpenRequest(bytes.NewReader(file), []*seal.X25519Identity{owner})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != req.ID || got.Secret != req.Secret || got.Model != id || got.ReplyTo.String() != user.Recipient().String() || !got.Time.Equal(req.Time) {
		t.Fatalf("request changed: %+v vs %+v", got, req)
	}
	b, err := io.ReadAll(feats)
	if err != nil || string(b) != "1,2,3\n4,5,6\n" {
		t.Fatalf("features %q, %v", b, err)
	}
	if err := got.Check(id, time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	// The requester reads its own request back.
	mine, _, err := OpenRequest(bytes.NewReader(file), []*seal.X25519Identity{user})
	if err != nil || mine.Secret != req.Secret {
		t.Fatalf("requester cannot read its request: %v", err)
	}
	var reply bytes.Buffer
	w, err := CreateReply(&reply, got)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "14\n32\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pr, err := OpenReply(bytes.NewReader(reply.Bytes()), mine, []*seal.X25519Identity{user})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(pr); err != nil || string(b) != "14\n32\n" {
		t.Fatalf("predictions %q, %v", b, err)
	}

	// The owner cannot open the reply; a reply to another request is refused;
	// a plain age file to the user is not a reply.
	if _, err := OpenReply(bytes.NewReader(reply.Bytes()), mine, []*seal.X25519Identity{owner}); !errors.Is(err, seal.ErrNoIdentityMatched) {
		t.Fatalf("reply opened by the owner: %v", err)
	}
	other, _ := makeRequest(t, owner, user, id, "1,2,3\n")
	if _, err := OpenReply(bytes.NewReader(reply.Bytes()), other, []*seal.X25519Identity{user}); !errors.Is(err, ErrReply) {
		t.Fatalf("reply to another request: %v", err)
	}
	var plain bytes.Buffer
	pw, _ := seal.CreateAge(&plain, []*seal.X25519Recipient{user.Recipient()}, nil)
	io.WriteString(pw, "99\n")
	pw.Close()
	if _, err := OpenReply(bytes.NewReader(plain.Bytes()), mine, []*seal.X25519Identity{user}); !errors.Is(err, ErrReply) {
		t.Fatalf("forged reply: %v", err)
	}
	// A truncated reply releases nothing past what verified and fails.
	tr, err := OpenReply(bytes.NewReader(reply.Bytes()[:reply.Len()-1]), mine, []*seal.X25519Identity{user})
	if err == nil {
		_, err = io.ReadAll(tr)
	}
	if !errors.Is(err, seal.ErrDecryptionFailed) {
		t.Fatalf("truncated reply: %v", err)
	}
}

func TestPrivateRefusals(t *testing.T) {
	owner, user, id, _ := privateFixture(t)
	eve, _ := seal.GenerateX25519Identity()
	req, file := makeRequest(t, owner, user, id, "1,2,3\n")
	if _, _, err := OpenRequest(bytes.NewReader(file), []*seal.X25519Identity{eve}); !errors.Is(err, seal.ErrDecryptionFailed) {
		t.Fatalf("wrong key: %v", err)
	}
	bad := bytes.Clone(file)
	bad[len(bad)-20] ^= 1
	_, feats, err := OpenRequest(bytes.NewReader(bad), []*seal.X25519Identity{owner})
	if err == nil {
		_, err = io.ReadAll(feats)
	}
	if !errors.Is(err, seal.ErrDecryptionFailed) {
		t.Fatalf("tampered request: %v", err)
	}
	var other [32]byte
	if err := req.Check(other, time.Now(), time.Hour); !errors.Is(err, ErrRequest) {
		t.Fatalf("another model: %v", err)
	}
	if err := req.Check(id, time.Now().Add(2*time.Hour), time.Hour); !errors.Is(err, ErrRequest) {
		t.Fatalf("old request: %v", err)
	}
	if err := req.Check(id, time.Now().Add(-time.Hour), 2*time.Hour); !errors.Is(err, ErrRequest) {
		t.Fatalf("request from the future: %v", err)
	}
	dir := t.TempDir()
	if err := req.Record(dir); err != nil {
		t.Fatal(err)
	}
	if err := req.Record(dir); !errors.Is(err, ErrReplay) {
		t.Fatalf("replay: %v", err)
	}
}

func FuzzRequestHeader(f *testing.F) {
	owner, _ := seal.GenerateX25519Identity()
	req, _ := NewRequest([32]byte{1}, owner.Recipient(), true, "npy")
	f.Add(req.header())
	f.Add([]byte(requestMagic + "\nmodel: 00\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseRequestHeader(bufio.NewReaderSize(bytes.NewReader(b), maxRequestHeader))
		if err != nil {
			return
		}
		if !bytes.Equal(r.header(), b[:len(r.header())]) {
			t.Fatalf("accepted a header that does not re-encode to itself: %q", b)
		}
	})
}

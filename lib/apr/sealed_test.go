package apr

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/seal"
)

func newIdentity(t testing.TB) *seal.X25519Identity {
	t.Helper()
	id, err := seal.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// cheapPassword is a password recipient with small Argon2id parameters, for tests.
func cheapPassword(t testing.TB, pw string) seal.Recipient {
	t.Helper()
	r, err := seal.NewPasswordRecipient([]byte(pw), seal.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealedRoundTripX25519(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lr.apr")
	alice, bob, eve := newIdentity(t), newIdentity(t), newIdentity(t)
	m := fitted(t)
	if err := SaveForRecipient(path, m, SaveOptions{Name: "secret", Compression: container.CompressZstd}, alice.Recipient(), bob.Recipient()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []*seal.X25519Identity{alice, bob} {
		got, err := LoadAsRecipient[*model.LinearRegressionModel](path, modeltype.LinearRegression, eve, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Coefficients[0] != m.Coefficients[0] || got.Intercept != m.Intercept {
			t.Fatal("model changed through sealing")
		}
	}
	_, err := LoadAsRecipient[*model.LinearRegressionModel](path, modeltype.LinearRegression, eve)
	if !errors.Is(err, ErrDecryptionFailed) || !errors.Is(err, seal.ErrNoIdentityMatched) {
		t.Fatalf("wrong identity: got %v, want a decryption failure", err)
	}
	if _, err := LoadAsRecipient[*model.LinearRegressionModel](path, modeltype.LinearRegression); !errors.Is(err, ErrDecryptionFailed) {
		t.Fatalf("no identity: got %v", err)
	}
	// The type check still comes first, and plain Load refuses sealed data.
	var mm *ModelTypeMismatch
	if _, err := LoadAsRecipient[*model.LogisticRegressionModel](path, modeltype.LogisticRegression, alice); !errors.As(err, &mm) {
		t.Fatalf("type mismatch: got %v", err)
	}
	if _, err := Load[*model.LinearRegressionModel](path, modeltype.LinearRegression); !errors.Is(err, container.ErrEncrypted) {
		t.Fatalf("Load of a sealed file: got %v, want ErrEncrypted", err)
	}
	// A file that is not sealed is not loaded as one.
	plain := filepath.Join(dir, "plain.apr")
	if err := Save(plain, m, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAsRecipient[*model.LinearRegressionModel](plain, modeltype.LinearRegression, alice); !errors.Is(err, ErrNotSealed) {
		t.Fatalf("plain file: got %v, want ErrNotSealed", err)
	}
}

func TestSealedPassword(t *testing.T) {
	if testing.Short() && (runtime.GOARCH == "wasm") {
		t.Skip("Argon2id with 64 MiB is slow under wasm")
	}
	path := filepath.Join(t.TempDir(), "lr.apr")
	m := fitted(t)
	if err := SaveEncrypted(path, m, []byte("correct horse"), SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := LoadEncrypted[*model.LinearRegressionModel](path, modeltype.LinearRegression, []byte("correct horse"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Intercept != m.Intercept {
		t.Fatal("model changed")
	}
	if _, err := LoadEncrypted[*model.LinearRegressionModel](path, modeltype.LinearRegression, []byte("battery staple")); !errors.Is(err, ErrDecryptionFailed) {
		t.Fatalf("wrong password: got %v", err)
	}
	info, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	si, err := ParseSealInfo(info.Seal)
	if err != nil {
		t.Fatal(err)
	}
	if !si.Password || si.X25519 != 0 || si.Stanzas != 1 || si.Argon2id == nil || *si.Argon2id != seal.DefaultArgon2Params {
		t.Fatalf("seal info %+v", si)
	}
	if err := SaveEncrypted(path, m, nil, SaveOptions{}); err == nil {
		t.Fatal("empty password accepted")
	}
}

func TestSealedInspectAndVerifyWithoutKey(t *testing.T) {
	var buf bytes.Buffer
	id := newIdentity(t)
	if err := EncodeSealed(&buf, fitted(t), SaveOptions{Name: "visible"}, id.Recipient(), cheapPassword(t, "pw")); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	f, err := container.NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	h := f.Header()
	if h.Metadata.Name != "visible" || h.Flags&container.FlagEncrypted == 0 || len(f.Entries()) != 2 || !f.Entries()[0].Encrypted {
		t.Fatalf("header, metadata or index not readable: %+v %+v", h, f.Entries())
	}
	if err := f.Verify(); err != nil {
		t.Fatalf("verify without key: %v", err)
	}
	if _, err := f.TensorBytes("coefficients"); !errors.Is(err, container.ErrEncrypted) {
		t.Fatalf("TensorBytes without key: got %v", err)
	}
	si, err := ParseSealInfo(h.Seal)
	if err != nil || si.Stanzas != 2 || si.X25519 != 1 || !si.Password {
		t.Fatalf("seal info %+v, %v", si, err)
	}
	if _, err := InspectReader(bytes.NewReader(b)); err != nil {
		t.Fatalf("inspect a sealed stream: %v", err)
	}
	// With the password, File decrypts and Verify checks every tag.
	f, err = container.NewFile(bytes.NewReader(b), int64(len(b)), container.WithUnsealer(NewUnsealer(seal.NewPasswordIdentity([]byte("pw")))))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.TensorBytes("intercept"); err != nil || len(got) != 4 {
		t.Fatalf("TensorBytes with the key: %d bytes, %v", len(got), err)
	}
	if err := f.Verify(); err != nil {
		t.Fatal(err)
	}
}

// The tests below follow the families of C2SP's CCTV age test vectors (stream_no_final,
// stream_trailing_garbage, stream_two_final_chunks, stream_bad_tag, header and stanza
// corruption), adapted to sealed APR files. The attacker is modelled exactly: it can
// rearrange, drop, repeat or alter any bytes of a sealed file and recompute every CRC
// (the container writer does that for us), but it has no key, so every ciphertext, seal
// section and seal MAC it writes is one recorded from a genuine sealing.

func TestSealedFileOnDiskMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.apr")
	id := newIdentity(t)
	if err := SaveForRecipient(path, fitted(t), SaveOptions{}, id.Recipient()); err != nil {
		t.Fatal(err)
	}
	f, err := container.Open(path, container.WithUnsealer(NewUnsealer(id)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.TensorBytes("coefficients")
	if err != nil || len(got) != 8 {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

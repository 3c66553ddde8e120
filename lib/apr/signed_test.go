package apr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/sign"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

func newKey(t *testing.T) *sign.PrivateKey {
	t.Helper()
	k, err := sign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func encoded(t *testing.T, opts SaveOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Encode(&b, fitted(t), opts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func signedBytes(t *testing.T, in []byte, k *sign.PrivateKey, opts ...SignOption) []byte {
	t.Helper()
	var out bytes.Buffer
	if _, err := SignStream(&out, bytes.NewReader(in), k, opts...); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func verify(in []byte, p Policy) (*Verification, error) { return Verify(bytes.NewReader(in), p) }

func reencode(t *testing.T, in []byte, edit func(*container.Header), opts ...container.Option) []byte {
	t.Helper()
	s, err := OpenStream(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out bytes.Buffer
	if err := stream.Reencode(&out, s, edit, true, opts...); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestSaveSignedLoadVerified(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	dir := t.TempDir()
	path := filepath.Join(dir, "lr.apr")
	k, other := newKey(t), newKey(t)
	if err := SaveSigned(path, fitted(t), SaveOptions{Name: "lr", Compression: container.CompressZstd}, k, WithComment("author")); err != nil {
		t.Fatal(err)
	}
	m, err := LoadVerified[*model.LinearRegressionModel](path, modeltype.LinearRegression, other.Public(), k.Public())
	if err != nil {
		t.Fatal(err)
	}
	if m.Coefficients[0] != fitted(t).Coefficients[0] {
		t.Error("coefficients changed")
	}
	_, v, err := LoadWithPolicy[*model.LinearRegressionModel](path, modeltype.LinearRegression, Policy{Signers: []*sign.PublicKey{k.Public()}})
	if err != nil || v.Signer == nil || v.Signer.Signature.Comment != "author" || v.Signer.Signature.Time.Unix() != 1767225600 ||
		v.Header.Flags&container.FlagSigned == 0 {
		t.Fatalf("verification %+v, %v", v, err)
	}

	// Wrong key, no key, unsigned file: ErrSignatureInvalid (both sentinels match).
	_, err = LoadVerified[*model.LinearRegressionModel](path, modeltype.LinearRegression, other.Public())
	if !errors.Is(err, ErrSignatureInvalid) || !errors.Is(err, sign.ErrSignatureInvalid) || !strings.Contains(err.Error(), "key not trusted") {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := LoadVerified[*model.LinearRegressionModel](path, modeltype.LinearRegression); !errors.Is(err, ErrSignatureInvalid) {
		t.Fatalf("no trusted key: %v", err)
	}
	plain := filepath.Join(dir, "plain.apr")
	if err := Save(plain, fitted(t), SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadVerified[*model.LinearRegressionModel](plain, modeltype.LinearRegression, k.Public()); !errors.Is(err, ErrSignatureInvalid) ||
		!strings.Contains(err.Error(), "no signature") {
		t.Fatalf("unsigned: %v", err)
	}
	// The type is still checked first.
	var mm *ModelTypeMismatch
	if _, err := LoadVerified[*model.LogisticRegressionModel](path, modeltype.LogisticRegression, k.Public()); !errors.As(err, &mm) {
		t.Fatalf("type: %v", err)
	}
	// A bad comment fails before anything is written.
	if err := SaveSigned(filepath.Join(dir, "bad.apr"), fitted(t), SaveOptions{}, k, WithComment("a\x00b")); err == nil {
		t.Fatal("control character in comment accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.apr")); err == nil {
		t.Fatal("failed save left a file")
	}
}

// TestSignStreamKeepsBytes: signing changes only flags, header CRC, blocks and footer.
func TestSignStreamKeepsBytes(t *testing.T) {
	in := encoded(t, SaveOptions{Name: "x", Compression: container.CompressZstdMax, Shuffle: true})
	k := newKey(t)
	out := signedBytes(t, in, k)
	f, err := container.NewFile(bytes.NewReader(out), int64(len(out)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Verify(); err != nil {
		t.Fatal(err)
	}
	if f.Header().Flags&container.FlagSigned == 0 || len(f.Blocks()) != 1 || f.Blocks()[0].Kind != container.BlockSignature {
		t.Fatalf("flags %v, blocks %d", f.Header().Flags, len(f.Blocks()))
	}
	end := len(in) - container.FooterSize
	if !bytes.Equal(in[:8], out[:8]) || !bytes.Equal(in[12:60], out[12:60]) || !bytes.Equal(in[64:end], out[64:end]) {
		t.Error("signing changed bytes other than flags, header CRC, blocks and footer")
	}
	if _, err := verify(out, Policy{Signers: []*sign.PublicKey{k.Public()}}); err != nil {
		t.Fatal(err)
	}
}

// TestSignatureSurvivesReencoding: zstd-max + shuffle, lz4, and plain.
func TestSignatureSurvivesReencoding(t *testing.T) {
	k := newKey(t)
	trusted := Policy{Signers: []*sign.PublicKey{k.Public()}}
	s := signedBytes(t, encoded(t, SaveOptions{Name: "x"}), k)
	for name, opts := range map[string][]container.Option{
		"zstd-max+shuffle": {container.WithCompression(container.CompressZstdMax), container.WithShuffle(true)},
		"lz4":              {container.WithCompression(container.CompressLZ4)},
		"plain":            {container.WithCompression(container.CompressNone)},
	} {
		re := reencode(t, s, nil, opts...)
		if bytes.Equal(re, s) && name != "plain" {
			t.Errorf("%s: re-encoding gave the same bytes; test proves nothing", name)
		}
		if _, err := verify(re, trusted); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		// And back through a second round.
		if _, err := verify(reencode(t, re, nil, container.WithCompression(container.CompressZstd)), trusted); err != nil {
			t.Errorf("%s, then zstd: %v", name, err)
		}
	}
}

func TestEditsBreakSignature(t *testing.T) {
	k := newKey(t)
	trusted := Policy{Signers: []*sign.PublicKey{k.Public()}}
	s := signedBytes(t, encoded(t, SaveOptions{Name: "x", Custom: map[string]any{"a": int64(1)}}), k)
	edits := map[string]func(*container.Header){
		"name":       func(h *container.Header) { h.Metadata.Name = "y" },
		"custom":     func(h *container.Header) { h.Metadata.Custom["a"] = int64(2) },
		"new key":    func(h *container.Header) { h.Metadata.Extra = map[string]any{"signatures": "trust me"} },
		"created_at": func(h *container.Header) { h.Metadata.CreatedAt = "2000-01-01T00:00:00Z" },
		"type":       func(h *container.Header) { h.Type = modeltype.Custom },
	}
	for name, edit := range edits {
		_, err := verify(reencode(t, s, edit), trusted)
		if !errors.Is(err, ErrSignatureInvalid) || !strings.Contains(err.Error(), "does not match the content") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Any tensor byte: rebuild the file with one changed byte and the old blocks.
	st, _ := OpenStream(bytes.NewReader(s))
	h := st.Header()
	var tensors []tensor.Tensor
	for {
		info, r, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(r)
		tensors = append(tensors, tensor.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: data})
	}
	blocks := st.Blocks()
	for ti := range tensors {
		for _, pos := range []int{0, len(tensors[ti].Data) - 1} {
			var out bytes.Buffer
			w, err := container.NewWriter(&out, h)
			if err != nil {
				t.Fatal(err)
			}
			for j, tt := range tensors {
				data := bytes.Clone(tt.Data)
				if j == ti {
					data[pos] ^= 1
				}
				w.WriteTensorBytes(container.TensorInfo{Name: tt.Name, DType: tt.DType, Shape: tt.Shape}, data)
			}
			for _, b := range blocks {
				w.AddBlock(b)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := verify(out.Bytes(), trusted); !errors.Is(err, ErrSignatureInvalid) {
				t.Errorf("tensor %s byte %d changed: %v", tensors[ti].Name, pos, err)
			}
		}
	}
}

func TestTwoSignatures(t *testing.T) {
	author, ci, stranger := newKey(t), newKey(t), newKey(t)
	s := signedBytes(t, signedBytes(t, encoded(t, SaveOptions{}), author, WithComment("author")), ci, WithComment("ci"))
	info, err := container.InspectStream(bytes.NewReader(s))
	if err != nil || len(info.Blocks) != 2 {
		t.Fatalf("blocks: %v %v", info, err)
	}
	for _, k := range []*sign.PrivateKey{author, ci} {
		v, err := verify(s, Policy{Signers: []*sign.PublicKey{k.Public()}})
		if err != nil || !v.Signer.Key.Equal(k.Public()) || len(v.Signatures) != 2 {
			t.Fatalf("verify with one of two signers: %+v %v", v, err)
		}
	}
	if _, err := verify(s, Policy{Signers: []*sign.PublicKey{stranger.Public()}}); !errors.Is(err, ErrSignatureInvalid) ||
		strings.Count(err.Error(), "key not trusted") != 2 {
		t.Fatalf("stranger: %v", err)
	}
}

// withBlocks rewrites a file with other blocks (as an attacker could).
func withBlocks(t *testing.T, in []byte, edit func([]container.Block) []container.Block) []byte {
	t.Helper()
	st, err := OpenStream(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	h := st.Header()
	h.Flags |= container.FlagSigned | container.FlagLicensed
	var out bytes.Buffer
	w, err := container.NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Copy(w, st); err != nil {
		t.Fatal(err)
	}
	for _, b := range edit(st.Blocks()) {
		if err := w.AddBlock(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestTamperedSignatureBlock(t *testing.T) {
	k := newKey(t)
	trusted := Policy{Signers: []*sign.PublicKey{k.Public()}}
	s := signedBytes(t, encoded(t, SaveOptions{}), k, WithComment("release"))
	n := len(DescribeBlockMustParse(t, s))
	for i := 0; i < n; i++ {
		bad := withBlocks(t, s, func(b []container.Block) []container.Block {
			p := bytes.Clone(b[0].Payload)
			p[i] ^= 0x01
			return []container.Block{{Kind: b[0].Kind, Payload: p}}
		})
		if _, err := verify(bad, trusted); !errors.Is(err, ErrSignatureInvalid) {
			t.Fatalf("flipped bit in signature block byte %d: %v", i, err)
		}
	}
	truncated := withBlocks(t, s, func(b []container.Block) []container.Block {
		return []container.Block{{Kind: container.BlockSignature, Payload: b[0].Payload[:20]}}
	})
	if _, err := verify(truncated, trusted); !errors.Is(err, ErrSignatureInvalid) || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("truncated signature block: %v", err)
	}
}

func DescribeBlockMustParse(t *testing.T, s []byte) []byte {
	info, err := container.InspectStream(bytes.NewReader(s))
	if err != nil || len(info.Blocks) == 0 {
		t.Fatalf("no blocks: %v", err)
	}
	return info.Blocks[0].Payload
}

func TestLicense(t *testing.T) {
	issuer, author, stranger := newKey(t), newKey(t), newKey(t)
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lic := sign.License{Licensee: "Acme Corp", Tier: "pro", Seats: 5, IssuedAt: issued, ExpiresAt: issued.AddDate(1, 0, 0)}
	base := signedBytes(t, encoded(t, SaveOptions{Name: "m"}), author)
	var buf bytes.Buffer
	got, replaced, err := LicenseStream(&buf, bytes.NewReader(base), lic, issuer)
	if err != nil || replaced || got.IssuerKeyID != issuer.ID {
		t.Fatalf("license: %v %v", got, err)
	}
	licensed := buf.Bytes()
	at := func(d time.Time, issuers ...*sign.PublicKey) error {
		_, err := verify(licensed, Policy{LicenseIssuers: issuers, Now: d})
		return err
	}
	if err := at(issued.AddDate(0, 6, 0), issuer.Public()); err != nil {
		t.Fatal(err)
	}
	// The author's signature is still there and valid; both together.
	v, err := verify(licensed, Policy{Signers: []*sign.PublicKey{author.Public()}, LicenseIssuers: []*sign.PublicKey{issuer.Public()}, Now: issued.AddDate(0, 1, 0)})
	if err != nil || v.License.License.Licensee != "Acme Corp" || v.Signer == nil {
		t.Fatalf("signature and license: %v", err)
	}
	// The issuer's license binding is not a content signature.
	if _, err := verify(licensed, Policy{Signers: []*sign.PublicKey{issuer.Public()}}); !errors.Is(err, ErrSignatureInvalid) {
		t.Fatalf("issuer key accepted as a signer: %v", err)
	}
	if err := at(issued.AddDate(2, 0, 0), issuer.Public()); !errors.Is(err, ErrLicenseInvalid) || !errors.Is(err, sign.ErrLicenseExpired) {
		t.Fatalf("expired: %v", err)
	}
	if err := at(issued.AddDate(0, 1, 0), stranger.Public()); !errors.Is(err, sign.ErrLicenseUnknownIssuer) {
		t.Fatalf("unknown issuer: %v", err)
	}
	if _, err := verify(base, Policy{LicenseIssuers: []*sign.PublicKey{issuer.Public()}}); !errors.Is(err, ErrLicenseMissing) {
		t.Fatalf("missing: %v", err)
	}
	// Moved into another model: the binding fails.
	other := encoded(t, SaveOptions{Name: "other"})
	var lb container.Block
	for _, b := range mustInspect(t, licensed).Blocks {
		if b.Kind == container.BlockLicense {
			lb = b
		}
	}
	moved := withBlocks(t, other, func([]container.Block) []container.Block { return []container.Block{lb} })
	if _, err := verify(moved, Policy{LicenseIssuers: []*sign.PublicKey{issuer.Public()}, Now: issued.AddDate(0, 1, 0)}); !errors.Is(err, ErrLicenseInvalid) ||
		!strings.Contains(err.Error(), "other content") {
		t.Fatalf("transplanted license: %v", err)
	}
	// Re-licensing replaces; re-compression keeps it valid.
	buf.Reset()
	lic2 := lic
	lic2.Licensee = "Beta"
	if _, replaced, err := LicenseStream(&buf, bytes.NewReader(licensed), lic2, issuer); err != nil || !replaced {
		t.Fatalf("relicense: %v %v", replaced, err)
	}
	re := reencode(t, buf.Bytes(), nil, container.WithCompression(container.CompressLZ4))
	v, err = verify(re, Policy{Signers: []*sign.PublicKey{author.Public()}, LicenseIssuers: []*sign.PublicKey{issuer.Public()}, Now: issued.AddDate(0, 1, 0)})
	if err != nil || len(v.Licenses) != 1 || v.License.License.Licensee != "Beta" {
		t.Fatalf("relicensed and re-encoded: %+v %v", v, err)
	}
	// LoadLicensed on a file.
	path := filepath.Join(t.TempDir(), "l.apr")
	os.WriteFile(path, licensed, 0o644)
	// LoadLicensed checks the license at the machine's clock: valid in 2026, expired
	// from 2027, not yet valid on a clock set before 2026. The clock is read on both
	// sides of the call, so the instant the license expires cannot fail the test.
	before := time.Now()
	_, err = LoadLicensed[*model.LinearRegressionModel](path, modeltype.LinearRegression, issuer.Public())
	after := time.Now()
	if want, want2 := licenseErrAt(lic, before), licenseErrAt(lic, after); !errors.Is(err, want) && !errors.Is(err, want2) {
		t.Fatalf("LoadLicensed at %s: %v, want %v", before.UTC().Format(time.RFC3339), err, want)
	}
	if _, err := LoadLicensed[*model.LinearRegressionModel](path, modeltype.LinearRegression, stranger.Public()); !errors.Is(err, ErrLicenseInvalid) {
		t.Fatalf("LoadLicensed, stranger: %v", err)
	}
	// Bad license fields fail before writing.
	buf.Reset()
	if _, _, err := LicenseStream(&buf, bytes.NewReader(base), sign.License{}, issuer); err == nil || buf.Len() != 0 {
		t.Fatalf("empty license: %v, %d bytes written", err, buf.Len())
	}
}

// licenseErrAt is what verifying lic at now reports about its validity period
// (nil within it), as sign.VerifyLicense decides.
func licenseErrAt(lic sign.License, now time.Time) error {
	switch {
	case lic.IssuedAt.After(now.Add(sign.LicenseClockSkew)):
		return sign.ErrLicenseNotYetValid
	case !lic.ExpiresAt.IsZero() && !now.Before(lic.ExpiresAt):
		return sign.ErrLicenseExpired
	}
	return nil
}

func mustInspect(t *testing.T, b []byte) *container.Info {
	t.Helper()
	info, err := container.InspectStream(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestSignStreamRefuses(t *testing.T) {
	k := newKey(t)
	in := encoded(t, SaveOptions{})
	cases := map[string][]byte{
		"empty":     nil,
		"text":      []byte("just some text, not a model at all, no no no no no no no no no no no no"),
		"truncated": in[:len(in)-1],
		"appended":  append(bytes.Clone(in), 0),
		"flipped":   func() []byte { b := bytes.Clone(in); b[len(b)/2] ^= 4; return b }(),
	}
	sealed := bytes.Clone(in)
	binary.LittleEndian.PutUint32(sealed[8:], binary.LittleEndian.Uint32(sealed[8:])|uint32(container.FlagEncrypted))
	cases["sealed"] = sealed
	for name, b := range cases {
		var out bytes.Buffer
		if _, err := SignStream(&out, bytes.NewReader(b), k); err == nil {
			t.Errorf("%s: signed", name)
		} else if name == "sealed" && (!errors.Is(err, container.ErrEncrypted) || out.Len() != 0) {
			t.Errorf("sealed: %v (%d bytes out)", err, out.Len())
		}
	}
}

func TestDescribeBlock(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	k := newKey(t)
	s := signedBytes(t, encoded(t, SaveOptions{}), k, WithComment("nightly build"))
	var buf bytes.Buffer
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, _, err := LicenseStream(&buf, bytes.NewReader(s), sign.License{Licensee: "Acme", Tier: "pro", Seats: 3, IssuedAt: issued}, k); err != nil {
		t.Fatal(err)
	}
	info := mustInspect(t, buf.Bytes())
	want := []string{
		`signature by key ` + k.ID.String() + `, 2026-01-01T00:00:00Z, "nightly build" (unverified)`,
		`license for "Acme", tier "pro", 3 seats, issued 2026-01-01T00:00:00Z, never expires, issuer key ` + k.ID.String() + ` (unverified)`,
	}
	for i, b := range info.Blocks {
		if got := DescribeBlock(b).String(); got != want[i] {
			t.Errorf("block %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	bad := DescribeBlock(container.Block{Kind: container.BlockSignature, Payload: []byte{9}})
	if bad.Err == nil || !strings.Contains(bad.String(), "unreadable") {
		t.Errorf("malformed block: %s", bad)
	}
}

// TestSignAndSealCompose: sign | seal and seal | sign both give a sealed file whose
// signature covers the plaintext: it verifies with the key (reading through the
// seal) and after unsealing, never without the key.
func TestSignAndSealCompose(t *testing.T) {
	k := newKey(t)
	id, err := seal.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	trusted := []*sign.PublicKey{k.Public()}
	plain := encoded(t, SaveOptions{Name: "secret", Compression: container.CompressZstd})
	sealStream := func(in []byte) []byte {
		src, err := OpenStream(bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := SealStream(&out, src, []seal.Recipient{id.Recipient()}); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	unseal := func(in []byte) []byte {
		s, err := OpenSealedStream(bytes.NewReader(in), id)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := stream.Reencode(&out, s, nil, true); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	signThenSeal := sealStream(signedBytes(t, plain, k))
	sealed := sealStream(plain)
	var buf bytes.Buffer
	if _, err := SignStream(&buf, bytes.NewReader(sealed), k); !errors.Is(err, container.ErrEncrypted) || buf.Len() != 0 {
		t.Fatalf("sealed input without the key: %v, %d bytes out", err, buf.Len())
	}
	sealThenSign := signedBytes(t, sealed, k, WithSealedInput(NewUnsealer(id)))
	// seal | sign changes only flags, header CRC, blocks and footer of the sealed file.
	end := int(binary.LittleEndian.Uint64(sealed[len(sealed)-container.FooterSize+32:])) // blocks offset
	if end == 0 || !bytes.Equal(sealed[64:end], sealThenSign[64:end]) {
		t.Error("signing a sealed file changed its sealed bytes")
	}
	for name, f := range map[string][]byte{"sign|seal": signThenSeal, "seal|sign": sealThenSign} {
		if _, err := verify(f, Policy{Signers: trusted, Unsealer: NewUnsealer(id)}); err != nil {
			t.Errorf("%s, with the key: %v", name, err)
		}
		if _, err := verify(f, Policy{Signers: trusted}); !errors.Is(err, container.ErrEncrypted) {
			t.Errorf("%s, without the key: %v", name, err)
		}
		if _, err := verify(unseal(f), Policy{Signers: trusted}); err != nil {
			t.Errorf("%s, unsealed: %v", name, err)
		}
		path := filepath.Join(t.TempDir(), "m.apr")
		os.WriteFile(path, f, 0o644)
		if _, _, err := LoadWithPolicy[*model.LinearRegressionModel](path, modeltype.LinearRegression, Policy{Signers: trusted, Unsealer: NewUnsealer(id)}); err != nil {
			t.Errorf("%s, LoadWithPolicy: %v", name, err)
		}
	}
}

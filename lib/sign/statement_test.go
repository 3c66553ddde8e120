package sign

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStatementSignVerify(t *testing.T) {
	author, _ := GenerateKey(nil)
	ci, _ := GenerateKey(nil)
	digest := sha256.Sum256([]byte("canonical manifest"))
	when := time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC)
	sig, err := Sign(author, digest, "release 1.0\tby author", when)
	if err != nil {
		t.Fatal(err)
	}
	if !sig.Time.Equal(when.Truncate(time.Second)) || sig.KeyID != author.ID {
		t.Fatalf("statement %+v", sig.Statement)
	}
	trusted := []*PublicKey{ci.Public(), author.Public()}
	k, err := Verify(sig, digest, trusted)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Equal(author.Public()) {
		t.Fatal("verified by the wrong key")
	}

	// Encoding round trip.
	b, err := sig.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	sig2, err := ParseSignature(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(sig2, digest, trusted); err != nil {
		t.Fatalf("parsed signature: %v", err)
	}
	b2, _ := sig2.MarshalBinary()
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoding differs")
	}

	// The message layout is the documented one.
	m, _ := StatementMessage(digest, &sig.Statement)
	if !bytes.HasPrefix(m, []byte("apr-signature-v1\x00")) || !bytes.Equal(m[17:49], digest[:]) || !bytes.Equal(m[49:57], author.ID[:]) {
		t.Fatalf("message layout: %x", m)
	}

	mutate := func(f func(s *Signature)) *Signature {
		c := *sig
		f(&c)
		return &c
	}
	otherDigest := sha256.Sum256([]byte("other manifest"))
	for name, c := range map[string]struct {
		sig    *Signature
		digest [32]byte
	}{
		"other_digest":    {sig, otherDigest},
		"comment_changed": {mutate(func(s *Signature) { s.Comment = "release 2.0" }), digest},
		"time_changed":    {mutate(func(s *Signature) { s.Time = s.Time.Add(time.Second) }), digest},
		"keyid_changed":   {mutate(func(s *Signature) { s.KeyID = ci.ID }), digest},
		"sig_flipped":     {mutate(func(s *Signature) { s.Sig[10] ^= 1 }), digest},
	} {
		if _, err := Verify(c.sig, c.digest, trusted); !errors.Is(err, ErrSignatureInvalid) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	// Not trusted: a valid signature by a key outside the list.
	_, err = Verify(sig, digest, []*PublicKey{ci.Public()})
	if !errors.Is(err, ErrSignatureInvalid) || !errors.Is(err, ErrUntrustedKey) {
		t.Fatalf("untrusted: %v", err)
	}
	if _, err := Verify(sig, digest, nil); !errors.Is(err, ErrSignatureInvalid) {
		t.Fatalf("empty trust list: %v", err)
	}
	if _, err := Verify(nil, digest, trusted); !errors.Is(err, ErrSignatureInvalid) {
		t.Fatalf("nil signature: %v", err)
	}
	// Bad comments are refused when signing.
	for _, c := range []string{"a\nb", "\x00", strings.Repeat("x", MaxCommentLen+1), "\xff"} {
		if _, err := Sign(author, digest, c, when); !errors.Is(err, ErrMalformed) {
			t.Errorf("comment %q: %v", c, err)
		}
	}
}

func TestParseSignatureHostile(t *testing.T) {
	k, _ := GenerateKey(nil)
	sig, _ := Sign(k, [32]byte{}, "c", time.Unix(1, 0))
	b, _ := sig.MarshalBinary()
	for i := range len(b) {
		if _, err := ParseSignature(b[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix %d: %v", i, err)
		}
	}
	if _, err := ParseSignature(append(bytes.Clone(b), 0)); !errors.Is(err, ErrMalformed) {
		t.Fatal("trailing byte accepted")
	}
	bad := bytes.Clone(b)
	bad[0] = 2
	if _, err := ParseSignature(bad); !errors.Is(err, ErrMalformed) {
		t.Fatal("version 2 accepted")
	}
}

func TestLicense(t *testing.T) {
	issuer, _ := GenerateKey(nil)
	stranger, _ := GenerateKey(nil)
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l, err := SignLicense(License{
		Licensee: "ACME Corp", Tier: "enterprise", Seats: 25,
		IssuedAt: issued, ExpiresAt: issued.AddDate(1, 0, 0),
	}, issuer)
	if err != nil {
		t.Fatal(err)
	}
	trusted := []*PublicKey{issuer.Public()}
	now := issued.AddDate(0, 6, 0)
	if k, err := VerifyLicense(l, trusted, now); err != nil || !k.Equal(issuer.Public()) {
		t.Fatalf("valid license: %v", err)
	}
	b, err := l.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	l2, err := ParseLicense(b)
	if err != nil {
		t.Fatal(err)
	}
	if *l2 != *l {
		t.Fatalf("parsed license differs:\n%+v\n%+v", l2, l)
	}
	if _, err := VerifyLicense(l2, trusted, now); err != nil {
		t.Fatalf("parsed license: %v", err)
	}

	check := func(name string, lic *License, trusted []*PublicKey, now time.Time, want error) {
		t.Helper()
		_, err := VerifyLicense(lic, trusted, now)
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
	check("expired", l, trusted, issued.AddDate(1, 0, 0), ErrLicenseExpired)
	check("expired_later", l, trusted, issued.AddDate(3, 0, 0), ErrLicenseExpired)
	check("not_yet_valid", l, trusted, issued.Add(-time.Hour), ErrLicenseNotYetValid)
	check("unknown_issuer", l, []*PublicKey{stranger.Public()}, now, ErrLicenseUnknownIssuer)
	check("no_trusted_keys", l, nil, now, ErrLicenseUnknownIssuer)
	more := *l
	more.Seats = 1000
	check("seats_changed", &more, trusted, now, ErrSignatureInvalid)
	longer := *l
	longer.ExpiresAt = longer.ExpiresAt.AddDate(10, 0, 0)
	check("expiry_extended", &longer, trusted, now, ErrSignatureInvalid)
	forged, _ := SignLicense(License{Licensee: "ACME Corp", Seats: 25, IssuedAt: issued}, stranger)
	forged.IssuerKeyID = issuer.ID // claims the trusted issuer
	check("forged_by_stranger", forged, trusted, now, ErrSignatureInvalid)
	// An expired license signed by an unknown issuer reports the issuer
	// first: expiry means nothing before the signature is trusted.
	check("unknown_issuer_and_expired", l, []*PublicKey{stranger.Public()}, issued.AddDate(5, 0, 0), ErrLicenseUnknownIssuer)

	perpetual, err := SignLicense(License{Licensee: "Forever Ltd", IssuedAt: issued}, issuer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyLicense(perpetual, trusted, issued.AddDate(100, 0, 0)); err != nil {
		t.Fatalf("perpetual license: %v", err)
	}

	for name, bad := range map[string]License{
		"no_licensee":         {IssuedAt: issued},
		"no_issue_time":       {Licensee: "x"},
		"expires_before":      {Licensee: "x", IssuedAt: issued, ExpiresAt: issued.Add(-time.Hour)},
		"control_in_licensee": {Licensee: "x\ny", IssuedAt: issued},
		"long_tier":           {Licensee: "x", Tier: strings.Repeat("t", MaxTierLen+1), IssuedAt: issued},
	} {
		if _, err := SignLicense(bad, issuer); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for i := range len(b) {
		if _, err := ParseLicense(b[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("license prefix %d: %v", i, err)
		}
	}
	if _, err := ParseLicense(append(bytes.Clone(b), 0)); !errors.Is(err, ErrMalformed) {
		t.Fatal("trailing byte accepted")
	}
}

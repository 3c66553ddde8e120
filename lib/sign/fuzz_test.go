package sign

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// seedKeyFiles adds every file of testdata/keys as a fuzz seed.
func seedKeyFiles(f *testing.F) {
	paths, _ := filepath.Glob("../../testdata/keys/test-*")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// Parse errors must be typed: malformed, unsupported or a passphrase one.
func typedKeyError(err error) bool {
	return errors.Is(err, ErrMalformed) || errors.Is(err, ErrUnsupportedKey) ||
		errors.Is(err, ErrPassphraseRequired) || errors.Is(err, ErrParamsOutOfRange)
}

func FuzzParsePrivateKey(f *testing.F) {
	seedKeyFiles(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		// No passphrase: a fuzzed encrypted key must not start scrypt or
		// bcrypt, it must ask for a passphrase.
		k, err := ParsePrivateKey(b, nil)
		if err != nil {
			if !typedKeyError(err) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if len(k.Key) != 64 || k.checkConsistent() != nil {
			t.Fatal("accepted an inconsistent key")
		}
	})
}

func FuzzParsePublicKey(f *testing.F) {
	seedKeyFiles(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePublicKey(b)
		if err != nil {
			if !typedKeyError(err) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if len(p.Key) != 32 {
			t.Fatalf("public key of %d bytes", len(p.Key))
		}
		// Whatever parsed can be written back in minisign format.
		out, err := MarshalMinisignPublicKey(p, "x")
		if err != nil {
			t.Fatal(err)
		}
		if p2, err := ParsePublicKey(out); err != nil || !p2.Equal(p) || p2.ID != p.ID {
			t.Fatalf("minisign re-encoding: %v", err)
		}
	})
}

func FuzzParseMinisignSignature(f *testing.F) {
	seedKeyFiles(f)
	pub, _ := os.ReadFile("../../testdata/keys/test-minisign-unencrypted.pub")
	msg, _ := os.ReadFile("../../testdata/keys/test-message.txt")
	trusted, _ := ParsePublicKeys(pub)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseMinisignSignature(b)
		if err != nil {
			if !typedKeyError(err) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if _, err := s.Marshal(); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		_, _, _ = VerifyMinisign(bytes.NewReader(msg), b, trusted)
	})
}

func FuzzParseSignature(f *testing.F) {
	k, _ := GenerateKey(nil)
	s, _ := Sign(k, [32]byte{1}, "seed", time.Unix(1700000000, 0))
	b, _ := s.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSignature(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		again, err := s.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("not canonical: %v", err)
		}
		_, _ = Verify(s, [32]byte{1}, []*PublicKey{k.Public()})
	})
}

func FuzzParseLicense(f *testing.F) {
	k, _ := GenerateKey(nil)
	l, _ := SignLicense(License{Licensee: "seed", Tier: "t", Seats: 3, IssuedAt: time.Unix(1700000000, 0), ExpiresAt: time.Unix(1800000000, 0)}, k)
	b, _ := l.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLicense(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		again, err := l.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("not canonical: %v", err)
		}
		_, _ = VerifyLicense(l, []*PublicKey{k.Public()}, time.Unix(1750000000, 0))
	})
}

package argon2ref

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The Argon2id test vector of RFC 9106, section 5.3.
var (
	rfcPassword = bytes.Repeat([]byte{0x01}, 32)
	rfcSalt     = bytes.Repeat([]byte{0x02}, 16)
	rfcParams   = Params{
		Time: 3, MemoryKiB: 32, Lanes: 4, TagLen: 32,
		Secret: bytes.Repeat([]byte{0x03}, 8),
		Data:   bytes.Repeat([]byte{0x04}, 12),
	}
)

const (
	rfcPrehash = `28 89 de 48 7e b4 2a e5 00 c0 00 7e d9 25 2f 10
		69 ea de c4 0d 57 65 b4 85 de 6d c2 43 7a 67 b8
		54 6a 2f 0a cc 1a 08 82 db 8f cf 74 71 4b 47 2e
		94 df 42 1a 5d a1 11 2f fa 11 43 43 70 a1 e9 97`
	rfcTag = `0d 64 0d f5 8d 78 76 6c 08 c0 37 a3 4a 8b 53 c9
		d0 1e f0 45 2d 75 b6 5e b5 25 20 e9 6b 01 e6 59`
)

func TestRFC9106Argon2id(t *testing.T) {
	h0 := initialHash(rfcPassword, rfcSalt, rfcParams)
	if want := unhex(t, rfcPrehash); !bytes.Equal(h0[:], want) {
		t.Errorf("pre-hashing digest H0\n got %x\nwant %x", h0, want)
	}
	tag, err := IDKey(rfcPassword, rfcSalt, rfcParams)
	if err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, rfcTag); !bytes.Equal(tag, want) {
		t.Errorf("tag\n got %x\nwant %x", tag, want)
	}
}

// TestSecretAndDataMatter guards against inputs that are accepted but ignored.
func TestSecretAndDataMatter(t *testing.T) {
	base, err := IDKey(rfcPassword, rfcSalt, rfcParams)
	if err != nil {
		t.Fatal(err)
	}
	noSecret, noData := rfcParams, rfcParams
	noSecret.Secret = nil
	noData.Data = nil
	for name, p := range map[string]Params{"without secret": noSecret, "without data": noData} {
		tag, err := IDKey(rfcPassword, rfcSalt, p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(tag, base) {
			t.Errorf("%s: same tag as with it", name)
		}
	}
}

// TestMatchesXCrypto ties x/crypto's argon2.IDKey (what lib/seal uses) to the
// implementation that reproduces the RFC vector, over lane counts, memory
// sizes that are not multiples of 4*lanes, several passes and tag lengths on
// both sides of H”s 64-byte boundary.
func TestMatchesXCrypto(t *testing.T) {
	type tc struct {
		time, mem uint32
		lanes     uint8
		tagLen    uint32
	}
	cases := []tc{
		{1, 8, 1, 32},
		{1, 16, 2, 4},
		{2, 37, 1, 64},
		{3, 32, 4, 32},
		{1, 50, 3, 100},
		{4, 97, 2, 65},
		{2, 259, 3, 4},
		{3, 1000, 4, 64},
		{1, 4096, 1, 100}, // more than 128 blocks per segment: a second address block
		{2, 2051, 2, 32},
	}
	for _, c := range cases {
		name := fmt.Sprintf("t=%d,m=%d,p=%d,T=%d", c.time, c.mem, c.lanes, c.tagLen)
		t.Run(name, func(t *testing.T) {
			pw := []byte("password " + name)
			salt := []byte("somesalt-" + name)
			want := argon2.IDKey(pw, salt, c.time, c.mem, c.lanes, c.tagLen)
			got, err := IDKey(pw, salt, Params{Time: c.time, MemoryKiB: c.mem, Lanes: uint32(c.lanes), TagLen: c.tagLen})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("\n got %x\nwant %x (x/crypto)", got, want)
			}
		})
	}
}

// TestMatchesXCryptoSealDefault covers lib/seal's default profile (RFC 9106's
// second recommended option: t=3, 64 MiB, p=4).
func TestMatchesXCryptoSealDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB profile skipped in -short mode")
	}
	pw, salt := []byte("correct horse battery staple"), []byte("0123456789abcdef")
	start := time.Now()
	got, err := IDKey(pw, salt, Params{Time: 3, MemoryKiB: 64 * 1024, Lanes: 4, TagLen: 32})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("argon2ref t=3 m=64MiB p=4: %v", time.Since(start))
	if want := argon2.IDKey(pw, salt, 3, 64*1024, 4, 32); !bytes.Equal(got, want) {
		t.Errorf("\n got %x\nwant %x (x/crypto)", got, want)
	}
}

func TestBadParams(t *testing.T) {
	ok := Params{Time: 1, MemoryKiB: 32, Lanes: 4, TagLen: 32}
	salt := []byte("saltsalt")
	if _, err := IDKey(nil, salt, ok); err != nil {
		t.Fatalf("valid params refused: %v", err)
	}
	cases := map[string]func(*Params, *[]byte){
		"time 0":        func(p *Params, _ *[]byte) { p.Time = 0 },
		"lanes 0":       func(p *Params, _ *[]byte) { p.Lanes = 0 },
		"lanes 2^24":    func(p *Params, _ *[]byte) { p.Lanes = 1 << 24 },
		"memory < 8p":   func(p *Params, _ *[]byte) { p.MemoryKiB = 31 },
		"tag length 3":  func(p *Params, _ *[]byte) { p.TagLen = 3 },
		"salt 7 bytes":  func(_ *Params, s *[]byte) { *s = (*s)[:7] },
		"memory 0":      func(p *Params, _ *[]byte) { p.MemoryKiB = 0 },
		"lanes > mem/8": func(p *Params, _ *[]byte) { p.Lanes = 5 },
	}
	for name, mutate := range cases {
		p, s := ok, salt
		mutate(&p, &s)
		if _, err := IDKey(nil, s, p); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.HasPrefix(err.Error(), "argon2ref: ") {
			t.Errorf("%s: error %q", name, err)
		}
	}
}

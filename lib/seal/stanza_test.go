package seal

import (
	"bytes"
	"errors"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// lowParams keeps Argon2id fast in tests.
var lowParams = Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1}

func TestBech32Vectors(t *testing.T) {
	// Valid strings from BIP 173.
	for _, s := range []string{
		"A12UEL5L",
		"a12uel5l",
		"an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
		"abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
		"11" + strings.Repeat("q", 82) + "c8247j",
		"split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w",
	} {
		hrp, _, err := bech32Decode(s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if want := strings.ToLower(s[:strings.LastIndexByte(s, '1')]); hrp != want {
			t.Errorf("%s: hrp %q, want %q", s, hrp, want)
		}
	}
	// Invalid strings from BIP 173, plus mixed case.
	for _, s := range []string{
		"pzry9x0s0muk", "1pzry9x0s0muk", "x1b4n0q5v", "li1dgmt3", "de1lg7wt\xff",
		"A1G7SGD8", "10a06t8", "1qzzfhee", "a12UEL5L", " 1nwldj5",
	} {
		if _, _, err := bech32Decode(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: expected ErrMalformed, got %v", s, err)
		}
	}
	// Round trip.
	data := []byte{0, 1, 2, 0xff, 0x80}
	s := bech32Encode("test", data, false)
	hrp, got, err := bech32Decode(s)
	if err != nil || hrp != "test" || !bytes.Equal(got, data) {
		t.Fatalf("round trip: %q %x %v", hrp, got, err)
	}
}

func readTestFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../testdata/keys/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAgeKeygenFiles checks the identity and recipient written by Debian's
// age-keygen (committed in testdata/keys): our parser reads them, our
// derived recipient equals what `age-keygen -y` printed, and we write the
// same strings back.
func TestAgeKeygenFiles(t *testing.T) {
	idFile := readTestFile(t, "test-age-identity.txt")
	ids, err := ParseX25519Identities(strings.NewReader(idFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 {
		t.Fatalf("%d identities", len(ids))
	}
	wantRcpt := strings.TrimSpace(readTestFile(t, "test-age-recipient.txt"))
	if got := ids[0].Recipient().String(); got != wantRcpt {
		t.Fatalf("derived recipient %s, age-keygen -y printed %s", got, wantRcpt)
	}
	r, err := ParseX25519Recipient(wantRcpt)
	if err != nil {
		t.Fatal(err)
	}
	if r.String() != wantRcpt {
		t.Fatal("recipient does not round-trip")
	}
	var secretLine string
	for _, l := range strings.Split(idFile, "\n") {
		if strings.HasPrefix(l, "AGE-SECRET-KEY-1") {
			secretLine = l
		}
	}
	if ids[0].String() != secretLine {
		t.Fatalf("identity writes as %s, file has %s", ids[0].String(), secretLine)
	}
}

func TestKeyStringErrors(t *testing.T) {
	id, err := GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	rs := id.Recipient().String()
	is := id.String()
	if !strings.HasPrefix(rs, "age1") || !strings.HasPrefix(is, "AGE-SECRET-KEY-1") {
		t.Fatalf("bad prefixes: %s %s", rs, is)
	}
	for _, bad := range []string{
		"", rs[:len(rs)-1], rs + "q", strings.ToUpper(rs[:5]) + rs[5:], is, // identity given as recipient
		bech32Encode("age", make([]byte, 31), false),
	} {
		if _, err := ParseX25519Recipient(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("recipient %q: expected ErrMalformed, got %v", bad, err)
		}
	}
	for _, bad := range []string{"", is[:len(is)-1], rs, strings.ToLower(is[:20]) + is[20:]} {
		if _, err := ParseX25519Identity(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("identity %q: expected ErrMalformed, got %v", bad, err)
		}
	}
	if _, err := ParseX25519Identities(strings.NewReader("# only a comment\n\n")); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty identity file: %v", err)
	}
	if _, err := ParseX25519Identities(strings.NewReader(is + "\nnot a key\n")); !errors.Is(err, ErrMalformed) {
		t.Errorf("identity file with junk: %v", err)
	}
}

func TestStanzaEncodingRoundTrip(t *testing.T) {
	in := []Stanza{
		{Type: "X25519", Args: [][]byte{bytes.Repeat([]byte{1}, 32)}, Body: bytes.Repeat([]byte{2}, 48)},
		{Type: "argon2id", Args: [][]byte{make([]byte, 16), {0, 0, 0, 3, 0, 1, 0, 0, 4}}, Body: make([]byte, 48)},
		{Type: "future-type", Args: [][]byte{{}, []byte("x")}, Body: nil},
	}
	b, err := MarshalStanzas(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseStanzas(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d stanzas", len(out))
	}
	for i := range in {
		if out[i].Type != in[i].Type || !bytes.Equal(out[i].Body, in[i].Body) || len(out[i].Args) != len(in[i].Args) {
			t.Fatalf("stanza %d differs: %+v", i, out[i])
		}
		for j := range in[i].Args {
			if !bytes.Equal(out[i].Args[j], in[i].Args[j]) {
				t.Fatalf("stanza %d arg %d differs", i, j)
			}
		}
	}
	b2, _ := MarshalStanzas(out)
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoding differs")
	}
	// Every strict prefix is malformed, and so is any trailing byte.
	for i := range len(b) {
		if _, err := ParseStanzas(b[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d bytes: %v", i, err)
		}
	}
	if _, err := ParseStanzas(append(bytes.Clone(b), 0)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("trailing byte: %v", err)
	}
}

func TestStanzaEncodingLimits(t *testing.T) {
	bad := [][]byte{
		{2, 1, 1, 'a', 0, 0, 0},                   // version 2
		{1, 0},                                    // zero stanzas
		{1, MaxStanzas + 1},                       // too many stanzas
		{1, 1, 0, 0, 0, 0},                        // empty type
		{1, 1, 1, ' ', 0, 0, 0},                   // non-printable type
		{1, 1, 1, 'a', MaxStanzaArgs + 1},         // too many args
		{1, 1, 1, 'a', 1, 0x01, 0x01},             // arg length 257
		{1, 1, 1, 'a', 0, 0x04, 0x01},             // body length 1025
		{1, 1, 1, 'a', 0, 0xff, 0xff, 1, 2, 3, 4}, // body length beyond input
	}
	for _, b := range bad {
		if _, err := ParseStanzas(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%x: expected ErrMalformed, got %v", b, err)
		}
	}
	if _, err := MarshalStanzas(nil); !errors.Is(err, ErrParamsOutOfRange) {
		t.Errorf("marshal zero stanzas: %v", err)
	}
	if _, err := MarshalStanzas([]Stanza{{Type: "a", Body: make([]byte, MaxStanzaBodyLen+1)}}); !errors.Is(err, ErrParamsOutOfRange) {
		t.Errorf("marshal big body: %v", err)
	}
	if _, err := MarshalStanzas([]Stanza{{Type: "bad type"}}); !errors.Is(err, ErrMalformed) {
		t.Errorf("marshal bad type: %v", err)
	}
}

func FuzzParseStanzas(f *testing.F) {
	id, _ := GenerateX25519Identity()
	fk := make([]byte, FileKeySize)
	pw, _ := NewPasswordRecipient([]byte("pw"), lowParams)
	st, _ := WrapFileKey(fk, id.Recipient(), pw)
	b, _ := MarshalStanzas(st)
	f.Add(b)
	f.Add([]byte{1, 1, 1, 'a', 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseStanzas(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		again, err := MarshalStanzas(st)
		if err != nil {
			t.Fatalf("parsed stanzas do not re-encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("encoding is not canonical:\n in %x\nout %x", b, again)
		}
		// Identities must not panic on whatever parsed; a cheap password
		// limit keeps hostile Argon2 parameters fast.
		_, _ = id.Unwrap(st)
		cheap := NewPasswordIdentity([]byte("pw"))
		cheap.Limits = Argon2Limits{MaxTime: 2, MaxMemoryKiB: 256, MaxThreads: 2, MaxCost: 512}
		_, _ = cheap.Unwrap(st)
	})
}

func TestWrapUnwrapX25519(t *testing.T) {
	fk, err := NewFileKey()
	if err != nil {
		t.Fatal(err)
	}
	var ids []*X25519Identity
	var rcpts []Recipient
	for range 3 {
		id, err := GenerateX25519Identity()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		rcpts = append(rcpts, id.Recipient())
	}
	st, err := WrapFileKey(fk, rcpts...)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := MarshalStanzas(st)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseStanzas(blob)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		got, err := UnwrapFileKey(parsed, id)
		if err != nil {
			t.Fatalf("recipient %d: %v", i, err)
		}
		if !bytes.Equal(got, fk) {
			t.Fatalf("recipient %d: wrong file key", i)
		}
	}
	other, _ := GenerateX25519Identity()
	_, err = UnwrapFileKey(parsed, other)
	wantDecryptErr(t, err, ErrNoIdentityMatched)
	// Several identities: the matching one is found.
	if got, err := UnwrapFileKey(parsed, other, ids[2]); err != nil || !bytes.Equal(got, fk) {
		t.Fatalf("multi-identity unwrap: %v", err)
	}

	t.Run("corrupted_body", func(t *testing.T) {
		c := cloneStanzas(parsed[:1])
		c[0].Body[5] ^= 1
		_, err := UnwrapFileKey(c, ids[0])
		wantDecryptErr(t, err, ErrNoIdentityMatched)
	})
	t.Run("corrupted_share", func(t *testing.T) {
		c := cloneStanzas(parsed[:1])
		c[0].Args[0][3] ^= 1
		_, err := UnwrapFileKey(c, ids[0])
		wantDecryptErr(t, err, ErrNoIdentityMatched)
	})
	t.Run("low_order_share", func(t *testing.T) {
		c := cloneStanzas(parsed[:1])
		c[0].Args[0] = make([]byte, 32) // the all-zero point
		if _, err := UnwrapFileKey(c, ids[0]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("malformed_shapes", func(t *testing.T) {
		for _, s := range []Stanza{
			{Type: "X25519", Args: nil, Body: parsed[0].Body},
			{Type: "X25519", Args: [][]byte{make([]byte, 31)}, Body: parsed[0].Body},
			{Type: "X25519", Args: parsed[0].Args, Body: parsed[0].Body[:47]},
		} {
			if _, err := UnwrapFileKey([]Stanza{s}, ids[0]); !errors.Is(err, ErrMalformed) {
				t.Errorf("%+v: got %v", s, err)
			}
		}
	})
	t.Run("unknown_types_skipped", func(t *testing.T) {
		c := append([]Stanza{{Type: "future", Body: []byte("x")}}, cloneStanzas(parsed)...)
		if got, err := UnwrapFileKey(c, ids[1]); err != nil || !bytes.Equal(got, fk) {
			t.Fatalf("got %v", err)
		}
	})
}

func cloneStanzas(in []Stanza) []Stanza {
	out := make([]Stanza, len(in))
	for i, s := range in {
		out[i] = Stanza{Type: s.Type, Body: bytes.Clone(s.Body)}
		for _, a := range s.Args {
			out[i].Args = append(out[i].Args, bytes.Clone(a))
		}
	}
	return out
}

func TestWrapUnwrapPassword(t *testing.T) {
	fk, _ := NewFileKey()
	pr, err := NewPasswordRecipient([]byte("correct horse"), lowParams)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := GenerateX25519Identity()
	st, err := WrapFileKey(fk, pr, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnwrapFileKey(st, NewPasswordIdentity([]byte("correct horse")))
	if err != nil || !bytes.Equal(got, fk) {
		t.Fatalf("password unwrap: %v", err)
	}
	if got, err := UnwrapFileKey(st, id); err != nil || !bytes.Equal(got, fk) {
		t.Fatalf("x25519 unwrap of mixed file: %v", err)
	}
	_, err = UnwrapFileKey(st, NewPasswordIdentity([]byte("wrong horse")))
	wantDecryptErr(t, err, ErrNoIdentityMatched)

	t.Run("corrupted_body", func(t *testing.T) {
		c := cloneStanzas(st)
		c[0].Body[0] ^= 1
		_, err := UnwrapFileKey(c, NewPasswordIdentity([]byte("correct horse")))
		wantDecryptErr(t, err, nil)
	})
	t.Run("corrupted_salt", func(t *testing.T) {
		c := cloneStanzas(st)
		c[0].Args[0][0] ^= 1
		_, err := UnwrapFileKey(c, NewPasswordIdentity([]byte("correct horse")))
		wantDecryptErr(t, err, nil)
	})
	t.Run("two_password_stanzas", func(t *testing.T) {
		c := append(cloneStanzas(st[:1]), cloneStanzas(st[:1])...)
		if _, err := UnwrapFileKey(c, NewPasswordIdentity([]byte("correct horse"))); !errors.Is(err, ErrMalformed) {
			t.Fatalf("got %v", err)
		}
		pr2, _ := NewPasswordRecipient([]byte("b"), lowParams)
		if _, err := WrapFileKey(fk, pr, pr2); err == nil {
			t.Fatal("two password recipients accepted")
		}
	})
	t.Run("no_password_stanza", func(t *testing.T) {
		_, err := UnwrapFileKey(st[1:], NewPasswordIdentity([]byte("correct horse")))
		wantDecryptErr(t, err, ErrNoIdentityMatched)
	})
	t.Run("empty_password", func(t *testing.T) {
		if _, err := NewPasswordRecipient(nil, lowParams); err == nil {
			t.Fatal("empty password accepted")
		}
	})
}

// argon2NotRunAlloc bounds what refusing a password stanza allocates (under
// 512 bytes today). Argon2 allocates its memory parameter, at least 8 KiB, so an
// unwrap that stays under this bound did not run it, whatever the parameters.
// Unlike a wall-clock bound, this does not depend on how loaded the machine is.
const argon2NotRunAlloc = 4 << 10

// allocatedBy calls f three times and returns the fewest heap bytes one call
// allocated. TotalAlloc counts the whole process: the tests of this package do
// not run in parallel, the collector is off meanwhile, and the minimum drops a
// call that overlapped what the runtime runs after a collection (finalizers,
// cleanups), which otherwise adds a few KiB now and then.
func allocatedBy(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// TestArgon2Caps: hostile parameters are refused before Argon2 runs (the
// test would take minutes or run out of memory otherwise).
func TestArgon2Caps(t *testing.T) {
	fk, _ := NewFileKey()
	pr, _ := NewPasswordRecipient([]byte("pw"), lowParams)
	st, _ := WrapFileKey(fk, pr)
	withParams := func(p Argon2Params) []Stanza {
		c := cloneStanzas(st)
		c[0].Args[1] = p.marshal()
		return c
	}
	for _, p := range []Argon2Params{
		{Time: 11, MemoryKiB: 64, Threads: 1},
		{Time: 0xffffffff, MemoryKiB: 0xffffffff, Threads: 255},
		{Time: 1, MemoryKiB: 256<<10 + 1, Threads: 1},
		{Time: 1, MemoryKiB: 64, Threads: 9},
		{Time: 10, MemoryKiB: 256 << 10, Threads: 4}, // each within its cap, cost above
		{Time: 4, MemoryKiB: 1 << 20, Threads: 16},   // issue 14's hostile header: 1 GiB before a wrong password is known
		{Time: 0, MemoryKiB: 64, Threads: 1},
		{Time: 1, MemoryKiB: 64, Threads: 0},
		{Time: 1, MemoryKiB: 7, Threads: 1},
	} {
		hostile := withParams(p)
		var err error
		if n := allocatedBy(func() { _, err = UnwrapFileKey(hostile, NewPasswordIdentity([]byte("pw"))) }); n > argon2NotRunAlloc {
			t.Errorf("%+v: refusing allocated %d bytes; Argon2 must not run", p, n)
		}
		if !errors.Is(err, ErrParamsOutOfRange) {
			t.Errorf("%+v: expected ErrParamsOutOfRange, got %v", p, err)
		}
		if _, err := NewPasswordRecipient([]byte("pw"), p); !errors.Is(err, ErrParamsOutOfRange) {
			t.Errorf("%+v: NewPasswordRecipient accepted it: %v", p, err)
		}
	}
	// Custom, stricter limits.
	id := NewPasswordIdentity([]byte("pw"))
	id.Limits = Argon2Limits{MaxTime: 1, MaxMemoryKiB: 32, MaxThreads: 1, MaxCost: 32}
	if _, err := UnwrapFileKey(st, id); !errors.Is(err, ErrParamsOutOfRange) {
		t.Errorf("custom limits: %v", err)
	}
	// The defaults are within the default caps, and so is the largest
	// allowed memory at a low time.
	if err := DefaultArgon2Params.Check(Argon2Limits{}); err != nil {
		t.Error(err)
	}
	if err := (Argon2Params{Time: 4, MemoryKiB: 256 << 10, Threads: 4}).Check(DefaultArgon2Limits); err != nil {
		t.Error(err)
	}
	if _, err := UnwrapFileKey([]Stanza{{Type: "argon2id", Args: [][]byte{make([]byte, 16), {1, 2}}, Body: make([]byte, 48)}}, id); !errors.Is(err, ErrMalformed) {
		t.Errorf("short params: %v", err)
	}
}

// TestPasswordDefaultParams runs the real defaults (64 MiB, t=3, p=4) once.
func TestPasswordDefaultParams(t *testing.T) {
	if runtime.GOARCH == "wasm" {
		t.Skip("skipped under wasm: 64 MiB Argon2id with 4 lanes runs single-threaded and takes tens of seconds there; covered on native builds")
	}
	if testing.Short() {
		t.Skip("skipped in -short mode: Argon2id with the default 64 MiB parameters")
	}
	fk, _ := NewFileKey()
	pr, err := NewPasswordRecipient([]byte("default params"), DefaultArgon2Params)
	if err != nil {
		t.Fatal(err)
	}
	st, err := WrapFileKey(fk, pr)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := parseArgon2Params(st[0].Args[1])
	if !ok || p != (Argon2Params{Time: 3, MemoryKiB: 65536, Threads: 4}) {
		t.Fatalf("stored params %+v", p)
	}
	got, err := UnwrapFileKey(st, NewPasswordIdentity([]byte("default params")))
	if err != nil || !bytes.Equal(got, fk) {
		t.Fatalf("unwrap: %v", err)
	}
}

func TestHeaderMAC(t *testing.T) {
	fk, _ := NewFileKey()
	h := []byte("header bytes")
	mac, err := HeaderMAC(fk, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(mac) != HeaderMACSize {
		t.Fatalf("mac length %d", len(mac))
	}
	if err := VerifyHeaderMAC(fk, h, mac); err != nil {
		t.Fatal(err)
	}
	wantDecryptErr(t, VerifyHeaderMAC(fk, []byte("header bytez"), mac), ErrHeaderMAC)
	other, _ := NewFileKey()
	wantDecryptErr(t, VerifyHeaderMAC(other, h, mac), ErrHeaderMAC)
	wantDecryptErr(t, VerifyHeaderMAC(fk, h, mac[:31]), ErrHeaderMAC)
}

// TestSealEndToEnd ties the pieces together the way a container would.
func TestSealEndToEnd(t *testing.T) {
	id, _ := GenerateX25519Identity()
	fk, _ := NewFileKey()
	st, _ := WrapFileKey(fk, id.Recipient())
	blob, _ := MarshalStanzas(st)
	enc, _ := NewEncryptor(fk, blob) // bind the stanza block as context
	data := testData(3000)
	chunks := sealAll(t, enc, data, 1024)

	st2, err := ParseStanzas(blob)
	if err != nil {
		t.Fatal(err)
	}
	fk2, err := UnwrapFileKey(st2, id)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecryptor(fk2, enc.Header(), blob)
	if err != nil {
		t.Fatal(err)
	}
	got, err := openAll(dec, chunks)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("end to end: %v", err)
	}
}

func FuzzParseKeyStrings(f *testing.F) {
	f.Add(strings.TrimSpace(readSeed("test-age-recipient.txt")))
	f.Add(readSeed("test-age-identity.txt"))
	f.Add("a12uel5l")
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseX25519Recipient(s); err == nil {
			if r2, err := ParseX25519Recipient(r.String()); err != nil || !bytes.Equal(r2.Bytes(), r.Bytes()) {
				t.Fatalf("recipient does not round-trip: %v", err)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("recipient error does not wrap ErrMalformed: %v", err)
		}
		if id, err := ParseX25519Identity(s); err == nil {
			if id2, err := ParseX25519Identity(id.String()); err != nil || id2.String() != id.String() {
				t.Fatalf("identity does not round-trip: %v", err)
			}
		}
		_, _ = ParseX25519Identities(strings.NewReader(s))
	})
}

func readSeed(name string) string {
	b, _ := os.ReadFile("../../testdata/keys/" + name)
	return string(b)
}

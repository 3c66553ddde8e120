package sign

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"golang.org/x/crypto/scrypt"
)

// kdfNotRunAlloc bounds what parsing a key file allocates when its KDF
// parameters are refused before the KDF starts (under 1 KiB today). One round
// of OpenSSH's bcrypt_pbkdf allocates about 10 KiB and scrypt at least
// 128*r*N bytes (16 MiB at libsodium's interactive limits), so a parse that
// stays under this bound did not run the KDF. Unlike a wall-clock bound, this
// does not depend on how loaded the machine is.
const kdfNotRunAlloc = 8 << 10

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

func readKeyFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/keys/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEd25519RFC8032 checks the primitive against RFC 8032 section 7.1,
// tests 1 and 2.
func TestEd25519RFC8032(t *testing.T) {
	for _, v := range []struct{ seed, pub, msg, sig string }{
		{
			"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
			"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
			"",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
		},
		{
			"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
			"3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
			"72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
		},
	} {
		k, err := NewPrivateKey(ed25519.NewKeyFromSeed(mustHex(t, v.seed)))
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(k.Public().Key); got != v.pub {
			t.Errorf("public key %s, want %s", got, v.pub)
		}
		sig := ed25519.Sign(k.Key, mustHex(t, v.msg))
		if got := hex.EncodeToString(sig); got != v.sig {
			t.Errorf("signature %s, want %s", got, v.sig)
		}
		if !ed25519.Verify(k.Public().Key, mustHex(t, v.msg), sig) {
			t.Error("RFC 8032 signature does not verify")
		}
	}
}

func TestGeneratePEMRoundTrip(t *testing.T) {
	k, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	privPEM, err := MarshalPrivateKeyPEM(k)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := MarshalPublicKeyPEM(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(privPEM, []byte("-----BEGIN PRIVATE KEY-----\n")) || !bytes.HasPrefix(pubPEM, []byte("-----BEGIN PUBLIC KEY-----\n")) {
		t.Fatalf("unexpected PEM headers:\n%s%s", privPEM, pubPEM)
	}
	k2, err := ParsePrivateKey(privPEM, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !k2.Key.Equal(k.Key) || k2.ID != k.ID {
		t.Fatal("private key round trip differs")
	}
	p2, err := ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !p2.Equal(k.Public()) || p2.ID != k.ID || p2.ID != DefaultKeyID(k.Public().Key) {
		t.Fatal("public key round trip differs")
	}
	ak, err := MarshalAuthorizedKey(k.Public(), "me@host")
	if err != nil {
		t.Fatal(err)
	}
	p3, err := ParsePublicKey(ak)
	if err != nil || !p3.Equal(k.Public()) {
		t.Fatalf("authorized key round trip: %v", err)
	}
}

// TestOpenSSLKeys reads keys written by `openssl genpkey -algorithm ed25519`
// and `openssl pkey -pubout`, and checks that we write the same bytes.
func TestOpenSSLKeys(t *testing.T) {
	privPEM := readKeyFile(t, "test-openssl-ed25519.key.pem")
	pubPEM := readKeyFile(t, "test-openssl-ed25519.pub.pem")
	k, err := ParsePrivateKey(privPEM, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Equal(k.Public()) {
		t.Fatal("openssl public key does not belong to the private key")
	}
	if again, _ := MarshalPrivateKeyPEM(k); !bytes.Equal(again, privPEM) {
		t.Errorf("our PKCS#8 differs from openssl's:\n%s%s", again, privPEM)
	}
	if again, _ := MarshalPublicKeyPEM(p); !bytes.Equal(again, pubPEM) {
		t.Errorf("our PKIX differs from openssl's:\n%s%s", again, pubPEM)
	}
}

func TestOpenSSHKeys(t *testing.T) {
	k, err := ParsePrivateKey(readKeyFile(t, "test-openssh-ed25519"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePublicKey(readKeyFile(t, "test-openssh-ed25519.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Equal(k.Public()) || p.ID != k.ID {
		t.Fatal("OpenSSH public key does not match the private key")
	}

	enc := readKeyFile(t, "test-openssh-ed25519-encrypted")
	if _, err := ParsePrivateKey(enc, nil); !errors.Is(err, ErrPassphraseRequired) {
		t.Fatalf("encrypted key without passphrase: %v", err)
	}
	if _, err := ParsePrivateKey(enc, []byte("wrong")); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("encrypted key with wrong passphrase: %v", err)
	}
	ke, err := ParsePrivateKey(enc, []byte("testpass"))
	if err != nil {
		t.Fatal(err)
	}
	pe, err := ParsePublicKey(readKeyFile(t, "test-openssh-ed25519-encrypted.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if !pe.Equal(ke.Public()) {
		t.Fatal("encrypted OpenSSH key does not match its .pub")
	}

	// Hostile bcrypt rounds are refused before any work.
	block, _ := pem.Decode(enc)
	der := bytes.Clone(block.Bytes)
	_, _, err = openSSHKDF(der)
	if err != nil {
		t.Fatal(err)
	}
	// The rounds are the last 4 bytes of the KDF options string, which
	// follows the magic, the cipher name and "bcrypt".
	idx := bytes.Index(der, []byte("bcrypt")) + len("bcrypt")
	optLen := binary.BigEndian.Uint32(der[idx:])
	binary.BigEndian.PutUint32(der[idx+4+int(optLen)-4:], 0xffffffff)
	hostile := pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der})
	if n := allocatedBy(func() { _, err = ParsePrivateKey(hostile, []byte("testpass")) }); n > kdfNotRunAlloc {
		t.Fatalf("hostile rounds were not refused up front: parsing allocated %d bytes", n)
	}
	if !errors.Is(err, ErrParamsOutOfRange) {
		t.Fatalf("hostile rounds: %v", err)
	}
}

func TestMinisignKeys(t *testing.T) {
	k, err := ParsePrivateKey(readKeyFile(t, "test-minisign-unencrypted.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pubFile := readKeyFile(t, "test-minisign-unencrypted.pub")
	p, err := ParsePublicKey(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Equal(k.Public()) || p.ID != k.ID {
		t.Fatal("minisign public key does not match the secret key")
	}
	// The comment line says "minisign public key <ID>": our ID formatting
	// must agree with minisign's.
	if first := strings.SplitN(string(pubFile), "\n", 2)[0]; !strings.HasSuffix(first, " "+p.ID.String()) {
		t.Fatalf("minisign prints %q, our id is %s", first, p.ID)
	}
	// Bare base64 line (minisign -P) works too.
	line := strings.SplitN(strings.TrimSpace(string(pubFile)), "\n", 2)[1]
	if p2, err := ParsePublicKey([]byte(line)); err != nil || !p2.Equal(p) || p2.ID != p.ID {
		t.Fatalf("bare minisign key: %v", err)
	}
	if MinisignPublicKeyString(p) != line {
		t.Fatal("MinisignPublicKeyString differs from minisign's")
	}
	again, err := MarshalMinisignPublicKey(p, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, pubFile) {
		t.Fatalf("our minisign public key file differs:\n%s%s", again, pubFile)
	}

	// Our secret key writer round-trips.
	ours, err := MarshalMinisignSecretKey(k, "")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := ParsePrivateKey(ours, nil)
	if err != nil || !k2.Key.Equal(k.Key) || k2.ID != k.ID {
		t.Fatalf("minisign secret key round trip: %v", err)
	}

	// Encrypted key: passphrase required.
	enc := readKeyFile(t, "test-minisign-encrypted.key")
	if _, err := ParsePrivateKey(enc, nil); !errors.Is(err, ErrPassphraseRequired) {
		t.Fatalf("encrypted minisign key without passphrase: %v", err)
	}

	// A corrupted checksum in our (checksummed) file is detected.
	raw, _ := base64.StdEncoding.DecodeString(strings.SplitN(strings.TrimSpace(string(ours)), "\n", 2)[1])
	raw[len(raw)-1] ^= 1
	bad := "untrusted comment: x\n" + base64.StdEncoding.EncodeToString(raw) + "\n"
	if _, err := ParsePrivateKey([]byte(bad), nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad checksum: %v", err)
	}
	// A secret key whose public half does not match its seed is refused.
	raw[len(raw)-1] ^= 1
	raw[54+8+40] ^= 1 // inside the public half of sk
	bad = "untrusted comment: x\n" + base64.StdEncoding.EncodeToString(raw) + "\n"
	if _, err := ParsePrivateKey([]byte(bad), nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("inconsistent key: %v", err)
	}
}

// TestScryptParams checks our port of libsodium's pickparams on minisign's
// default ("sensitive") limits and on the interactive ones.
func TestScryptParams(t *testing.T) {
	for _, c := range []struct {
		ops, mem uint64
		logN     uint
		r, p     uint64
	}{
		{33554432, 1073741824, 20, 8, 1}, // sensitive: what minisign -G uses
		{524288, 16777216, 14, 8, 1},     // interactive
		{1, 1, 1, 8, 512},                // floors: ops 32768, N=2
	} {
		logN, r, p := scryptParams(c.ops, c.mem)
		if logN != c.logN || r != c.r || p != c.p {
			t.Errorf("ops=%d mem=%d: got N=2^%d r=%d p=%d, want N=2^%d r=%d p=%d", c.ops, c.mem, logN, r, p, c.logN, c.r, c.p)
		}
	}
	// The committed encrypted key uses the sensitive limits.
	enc := readKeyFile(t, "test-minisign-encrypted.key")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(strings.SplitN(string(enc), "\n", 2)[1]))
	if err != nil {
		t.Fatal(err)
	}
	if ops, mem := binary.LittleEndian.Uint64(raw[38:]), binary.LittleEndian.Uint64(raw[46:]); ops != 33554432 || mem != 1073741824 {
		t.Fatalf("unexpected limits in the test key: %d %d", ops, mem)
	}
	// Hostile limits are refused before scrypt runs.
	for _, lim := range [][2]uint64{{1 << 40, 1 << 40}, {1 << 40, 1 << 20}, {1 << 30, 1 << 34}} {
		h := bytes.Clone(raw)
		binary.LittleEndian.PutUint64(h[38:], lim[0])
		binary.LittleEndian.PutUint64(h[46:], lim[1])
		file := "untrusted comment: x\n" + base64.StdEncoding.EncodeToString(h) + "\n"
		var err error
		if n := allocatedBy(func() { _, err = ParsePrivateKey([]byte(file), []byte("testpass")) }); n > kdfNotRunAlloc {
			t.Errorf("limits %v: not refused up front: parsing allocated %d bytes", lim, n)
		}
		if !errors.Is(err, ErrParamsOutOfRange) {
			t.Errorf("limits %v: %v", lim, err)
		}
	}
}

// TestMinisignEncryptedKey decrypts the scrypt-encrypted key made by
// `minisign -G` (N=2^20: 1 GiB of memory, a few seconds).
func TestMinisignEncryptedKey(t *testing.T) {
	if runtime.GOARCH == "wasm" {
		t.Skip("skipped under wasm: minisign's scrypt parameters need 1 GiB of memory")
	}
	if testing.Short() {
		t.Skip("skipped in -short mode: scrypt with 1 GiB")
	}
	enc := readKeyFile(t, "test-minisign-encrypted.key")
	k, err := ParsePrivateKey(enc, []byte("testpass"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePublicKey(readKeyFile(t, "test-minisign-encrypted.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Equal(k.Public()) || p.ID != k.ID {
		t.Fatal("decrypted minisign key does not match its public key")
	}
}

// encryptMinisignKey builds a scrypt-encrypted minisign secret key with
// small limits, the way minisign lays it out.
func encryptMinisignKey(t *testing.T, k *PrivateKey, pass []byte, ops, mem uint64) []byte {
	t.Helper()
	salt := bytes.Repeat([]byte{7}, 32)
	sec := append(append(bytes.Clone(k.ID[:]), k.Key...), minisignChecksum(k.ID[:], k.Key)...)
	logN, r, p := scryptParams(ops, mem)
	stream, err := scrypt.Key(pass, salt, 1<<logN, int(r), int(p), len(sec))
	if err != nil {
		t.Fatal(err)
	}
	for i := range sec {
		sec[i] ^= stream[i]
	}
	raw := append([]byte("EdScB2"), salt...)
	raw = binary.LittleEndian.AppendUint64(raw, ops)
	raw = binary.LittleEndian.AppendUint64(raw, mem)
	raw = append(raw, sec...)
	return []byte("untrusted comment: minisign encrypted secret key\n" + base64.StdEncoding.EncodeToString(raw) + "\n")
}

func TestMinisignEncryptedSmallParams(t *testing.T) {
	k, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	file := encryptMinisignKey(t, k, []byte("pw"), 524288, 16777216) // libsodium's "interactive" limits
	got, err := ParsePrivateKey(file, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Key.Equal(k.Key) || got.ID != k.ID {
		t.Fatal("decrypted key differs")
	}
	if _, err := ParsePrivateKey(file, []byte("wrong")); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("wrong passphrase: %v", err)
	}
	if _, err := ParsePrivateKey(file, nil); !errors.Is(err, ErrPassphraseRequired) {
		t.Fatalf("no passphrase: %v", err)
	}
}

func TestKeyParseErrors(t *testing.T) {
	for _, in := range []string{
		"", "garbage", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
		"untrusted comment: x\nAAAA\n", "untrusted comment: x\n",
	} {
		if _, err := ParsePrivateKey([]byte(in), nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("private %q: %v", in, err)
		}
	}
	for _, in := range []string{
		"", "garbage", "ssh-ed25519 AAAA", "untrusted comment: x\nRWQAAA==\n",
		"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
	} {
		if _, err := ParsePublicKey([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("public %q: %v", in, err)
		}
	}
	// Non-Ed25519 keys are unsupported, not malformed.
	rsa := "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"
	if _, err := ParsePrivateKey([]byte(rsa), nil); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("RSA PEM: %v", err)
	}
	encPKCS8 := "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
	if _, err := ParsePrivateKey([]byte(encPKCS8), nil); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("encrypted PKCS#8: %v", err)
	}
	if _, err := ParsePrivateKey(make([]byte, MaxKeyFileSize+1), nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("oversized: %v", err)
	}
}

func TestKeyIDString(t *testing.T) {
	id := KeyID{0xF5, 0xC7, 0x6D, 0x51, 0x94, 0x33, 0x47, 0x71}
	if id.String() != "71473394516DC7F5" {
		t.Fatalf("got %s", id)
	}
}

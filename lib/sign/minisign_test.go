package sign

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/internal/peertest"
)

// TestMinisignCommittedSignatures verifies signatures made by `minisign -S`
// (prehashed and legacy) with the committed unencrypted test key.
func TestMinisignCommittedSignatures(t *testing.T) {
	pub, err := ParsePublicKey(readKeyFile(t, "test-minisign-unencrypted.pub"))
	if err != nil {
		t.Fatal(err)
	}
	msg := readKeyFile(t, "test-message.txt")
	for _, name := range []string{"test-message.txt.minisig", "test-message.txt.legacy.minisig"} {
		sig := readKeyFile(t, name)
		s, k, err := VerifyMinisign(bytes.NewReader(msg), sig, []*PublicKey{pub})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !k.Equal(pub) {
			t.Fatalf("%s: verified by the wrong key", name)
		}
		if name == "test-message.txt.minisig" && (s.Algorithm != "ED" || s.TrustedComment != "apr test trusted comment") {
			t.Fatalf("%s: parsed %+v", name, s)
		}
		if name != "test-message.txt.minisig" && s.Algorithm != "Ed" {
			t.Fatalf("%s: algorithm %q", name, s.Algorithm)
		}
		// Re-marshalling gives back minisign's bytes.
		again, err := s.Marshal()
		if err != nil || !bytes.Equal(again, sig) {
			t.Fatalf("%s: re-marshalled signature differs: %v\n%s", name, err, again)
		}
		// A changed message fails.
		_, _, err = VerifyMinisign(bytes.NewReader(append(bytes.Clone(msg), '!')), sig, []*PublicKey{pub})
		if !errors.Is(err, ErrSignatureInvalid) {
			t.Fatalf("%s on a changed message: %v", name, err)
		}
	}
}

func TestMinisignSignVerify(t *testing.T) {
	k, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("model bytes "), 10000)
	sig, err := SignMinisign(bytes.NewReader(msg), k, "file:model.apr\tv1", "")
	if err != nil {
		t.Fatal(err)
	}
	trusted := []*PublicKey{k.Public()}
	s, _, err := VerifyMinisign(bytes.NewReader(msg), sig, trusted)
	if err != nil {
		t.Fatal(err)
	}
	if s.TrustedComment != "file:model.apr\tv1" || s.KeyID != k.ID {
		t.Fatalf("parsed %+v", s)
	}

	lines := strings.Split(string(sig), "\n")
	tamper := func(i int, f func(string) string) []byte {
		l := bytes.Clone([]byte(strings.Join(lines, "\n")))
		ls := strings.Split(string(l), "\n")
		ls[i] = f(ls[i])
		return []byte(strings.Join(ls, "\n"))
	}
	cases := []struct {
		name string
		sig  []byte
		want error
	}{
		{"trusted_comment_changed", tamper(2, func(s string) string { return s + "x" }), ErrSignatureInvalid},
		{"global_sig_replaced", tamper(3, func(string) string {
			return base64.StdEncoding.EncodeToString(ed25519.Sign(k.Key, []byte("something else")))
		}), ErrSignatureInvalid},
		{"sig_line_garbled", tamper(1, func(s string) string { return s[:20] + otherBase64(s[20]) + s[21:] }), nil},
		{"missing_trusted_comment", []byte(strings.Join([]string{lines[0], lines[1], lines[3], ""}, "\n")), ErrMalformed},
		{"truncated", sig[:len(sig)/2], ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := VerifyMinisign(bytes.NewReader(msg), c.sig, trusted)
			if err == nil {
				t.Fatal("tampered signature accepted")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	t.Run("untrusted_comment_changed_is_fine", func(t *testing.T) {
		if _, _, err := VerifyMinisign(bytes.NewReader(msg), tamper(0, func(string) string { return "untrusted comment: edited" }), trusted); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("untrusted_key", func(t *testing.T) {
		other, _ := GenerateKey(nil)
		_, _, err := VerifyMinisign(bytes.NewReader(msg), sig, []*PublicKey{other.Public()})
		if !errors.Is(err, ErrSignatureInvalid) || !errors.Is(err, ErrUntrustedKey) {
			t.Fatalf("got %v", err)
		}
		if _, _, err := VerifyMinisign(bytes.NewReader(msg), sig, nil); !errors.Is(err, ErrSignatureInvalid) {
			t.Fatalf("no trusted keys: %v", err)
		}
	})
	t.Run("same_key_other_id", func(t *testing.T) {
		p := k.Public()
		p.ID = KeyID{1, 2, 3}
		if _, _, err := VerifyMinisign(bytes.NewReader(msg), sig, []*PublicKey{p}); err != nil {
			t.Fatalf("same key under another id: %v", err)
		}
	})
	t.Run("bad_comments", func(t *testing.T) {
		if _, err := SignMinisign(bytes.NewReader(msg), k, "two\nlines", ""); !errors.Is(err, ErrMalformed) {
			t.Fatalf("newline in trusted comment: %v", err)
		}
		if _, err := SignMinisign(bytes.NewReader(msg), k, strings.Repeat("x", MaxTrustedCommentLen+1), ""); !errors.Is(err, ErrMalformed) {
			t.Fatalf("long trusted comment: %v", err)
		}
	})
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skipf("peer test skipped: cannot run %s under %s/%s", name, runtime.GOOS, runtime.GOARCH)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		peertest.Missing(t, "peer test skipped: %q is not installed (apt-get install -y %s)", name, name)
	}
	return p
}

func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestMinisignInterop: minisign -V accepts our signature with our key
// exported in minisign's public key format, and we verify signatures that
// minisign -S makes with a key from minisign -G -W; minisign also signs
// with a secret key file we wrote.
func TestMinisignInterop(t *testing.T) {
	needTool(t, "minisign")
	dir := t.TempDir()
	file := filepath.Join(dir, "model.bin")
	data := bytes.Repeat([]byte{0, 1, 2, 3, 250}, 50000)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}

	// Ours -> minisign -V.
	k, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(dir, "ours.pub")
	pubBytes, _ := MarshalMinisignPublicKey(k.Public(), "")
	os.WriteFile(pubFile, pubBytes, 0o644)
	sig, err := SignMinisign(bytes.NewReader(data), k, "apr interop test", "")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file+".minisig", sig, 0o644)
	out := runTool(t, "minisign", "-V", "-p", pubFile, "-m", file)
	if !strings.Contains(out, "apr interop test") {
		t.Fatalf("minisign -V output lacks the trusted comment:\n%s", out)
	}
	// And minisign rejects a changed file.
	os.WriteFile(file+".changed", append(bytes.Clone(data), 1), 0o644)
	os.WriteFile(file+".changed.minisig", sig, 0o644)
	if err := exec.Command("minisign", "-V", "-p", pubFile, "-m", file+".changed").Run(); err == nil {
		t.Fatal("minisign -V accepted our signature on a changed file")
	}

	// minisign -G -W / -S -> ours.
	mpub, mkey := filepath.Join(dir, "m.pub"), filepath.Join(dir, "m.key")
	runTool(t, "minisign", "-G", "-W", "-p", mpub, "-s", mkey)
	runTool(t, "minisign", "-S", "-s", mkey, "-m", file, "-x", file+".m.minisig", "-t", "signed by minisign")
	mp, err := ParsePublicKey(must(os.ReadFile(mpub)))
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := VerifyMinisign(bytes.NewReader(data), must(os.ReadFile(file+".m.minisig")), []*PublicKey{mp})
	if err != nil {
		t.Fatal(err)
	}
	if s.TrustedComment != "signed by minisign" {
		t.Fatalf("trusted comment %q", s.TrustedComment)
	}
	// Our parser reads minisign's fresh secret key, and it matches.
	mk, err := ParsePrivateKey(must(os.ReadFile(mkey)), nil)
	if err != nil || !mk.Public().Equal(mp) || mk.ID != mp.ID {
		t.Fatalf("minisign secret key: %v", err)
	}

	// A secret key file we wrote -> minisign -S -> ours and minisign -V.
	okey := filepath.Join(dir, "ours.key")
	skBytes, _ := MarshalMinisignSecretKey(k, "")
	os.WriteFile(okey, skBytes, 0o600)
	runTool(t, "minisign", "-S", "-s", okey, "-m", file, "-x", file+".o.minisig", "-t", "minisign with our key")
	if _, _, err := VerifyMinisign(bytes.NewReader(data), must(os.ReadFile(file+".o.minisig")), []*PublicKey{k.Public()}); err != nil {
		t.Fatal(err)
	}
	runTool(t, "minisign", "-V", "-p", pubFile, "-m", file, "-x", file+".o.minisig")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// otherBase64 returns a base64 character other than c, so that writing it over c always
// changes the decoded bytes (writing a fixed "A" was a no-op once in 64 random keys).
func otherBase64(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

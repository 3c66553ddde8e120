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
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/sign"
	"github.com/apr-go/apr/lib/stream"
)

func runIt(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func mustRun(t *testing.T, stdin []byte, args ...string) (string, string) {
	t.Helper()
	out, errs, code := runIt(t, stdin, args...)
	if code != 0 {
		t.Fatalf("apr-sign %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out, errs
}

func modelBytes(t *testing.T, name string) []byte {
	t.Helper()
	x, _ := model.FromRows([][]float64{{0, 1}, {1, 0}, {2, 2}, {3, 5}})
	m := model.NewLinearRegression()
	if err := m.Fit(x, []float64{1, 2, 6, 13}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := apr.Encode(&b, m, apr.SaveOptions{Name: name, Compression: container.CompressZstd}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// keygen makes a key pair in dir and returns the paths of NAME.key and NAME.pub.
func keygen(t *testing.T, dir, name string, extra ...string) (string, string) {
	t.Helper()
	base := filepath.Join(dir, name)
	mustRun(t, nil, append([]string{"keygen", "-o", base}, extra...)...)
	return base + ".key", base + ".pub"
}

// reencode is what apr-encode -c zstd-max --shuffle and apr-decode plain do to a stream.
func reencode(t *testing.T, in []byte, c container.Compression, shuffle bool) []byte {
	t.Helper()
	s, err := apr.OpenStream(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out bytes.Buffer
	if err := stream.Reencode(&out, s, nil, true, container.WithCompression(c), container.WithShuffle(shuffle)); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	key, pub := keygen(t, dir, "author")
	st, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && runtime.GOOS != "js" && runtime.GOOS != "wasip1" && st.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %v, want 0600", st.Mode().Perm())
	}
	kb, _ := os.ReadFile(key)
	pb, _ := os.ReadFile(pub)
	if !bytes.HasPrefix(kb, []byte("-----BEGIN PRIVATE KEY-----")) || !bytes.HasPrefix(pb, []byte("-----BEGIN PUBLIC KEY-----")) {
		t.Fatalf("not PEM:\n%s\n%s", kb, pb)
	}
	k, err := sign.ParsePrivateKey(kb, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sign.ParsePublicKey(pb)
	if err != nil || !p.Equal(k.Public()) {
		t.Fatalf("public key does not match: %v", err)
	}
	// No silent overwrite.
	_, errs, code := runIt(t, nil, "keygen", "-o", filepath.Join(dir, "author"))
	if code != 1 || !strings.Contains(errs, "exists") {
		t.Fatalf("overwrite: exit %d, %s", code, errs)
	}
	if kb2, _ := os.ReadFile(key); !bytes.Equal(kb, kb2) {
		t.Fatal("the existing key was overwritten")
	}
	// Not through a symbolic link, even with --force: the file it points to stays.
	if runtime.GOOS != "windows" && runtime.GOOS != "js" && runtime.GOOS != "wasip1" {
		victim := filepath.Join(dir, "victim")
		os.WriteFile(victim, []byte("keep me"), 0o644)
		os.Symlink(victim, filepath.Join(dir, "planted.key"))
		_, errs, code := runIt(t, nil, "keygen", "--force", "-o", filepath.Join(dir, "planted"))
		if code != 1 || !strings.Contains(errs, "symbolic link") {
			t.Errorf("keygen through a symlink: exit %d, %s", code, errs)
		}
		if b, _ := os.ReadFile(victim); string(b) != "keep me" {
			t.Error("keygen --force wrote the private key through a symlink")
		}
	}
	// minisign formats.
	mkey, mpub := keygen(t, dir, "mini", "--minisign")
	mk, err := sign.ParsePrivateKey(must(os.ReadFile(mkey)), nil)
	if err != nil {
		t.Fatal(err)
	}
	mp, err := sign.ParsePublicKey(must(os.ReadFile(mpub)))
	if err != nil || !mp.Equal(mk.Public()) || !strings.HasPrefix(string(must(os.ReadFile(mpub))), "untrusted comment:") {
		t.Fatalf("minisign keys: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestSignVerify(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	dir := t.TempDir()
	key, pub := keygen(t, dir, "author")
	ciKey, ciPub := keygen(t, dir, "ci")
	_, otherPub := keygen(t, dir, "other")
	in := modelBytes(t, "m")

	signedOut, errs := mustRun(t, in, "-k", key, "--comment", "release 1")
	if !strings.Contains(errs, "signed by key") {
		t.Errorf("no report: %q", errs)
	}
	signed := []byte(signedOut)
	file := filepath.Join(dir, "signed.apr")
	os.WriteFile(file, signed, 0o644)

	out, _ := mustRun(t, nil, "verify", "-p", pub, file)
	if !strings.Contains(out, "good signature by key") || !strings.Contains(out, `comment "release 1"`) ||
		!strings.Contains(out, "2026-01-01T00:00:00Z") {
		t.Errorf("report: %q", out)
	}
	mustRun(t, signed, "verify", "-p", otherPub, "-p", pub) // stdin, two trusted keys
	if out, _ := mustRun(t, signed, "verify", "-q", "-p", pub); out != "" {
		t.Errorf("-q printed %q", out)
	}

	// Wrong key, unsigned model: exit 1 with a clear message.
	for name, c := range map[string]struct {
		in   []byte
		pub  string
		want string
	}{
		"wrong key": {signed, otherPub, "key not trusted"},
		"unsigned":  {in, pub, "no signature"},
		"not apr":   {[]byte("hello"), pub, "stdin"},
	} {
		out, errs, code := runIt(t, c.in, "verify", "-p", c.pub)
		if code != 1 || out != "" || !strings.HasPrefix(errs, "apr-sign: ") || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out, errs)
		}
	}

	// A second signature (CI) keeps the first; each verifies alone.
	twice, _ := mustRun(t, signed, "-k", ciKey, "--comment", "ci")
	for _, p := range []string{pub, ciPub} {
		mustRun(t, []byte(twice), "verify", "-p", p)
	}
	info, err := container.InspectStream(strings.NewReader(twice))
	if err != nil || len(info.Blocks) != 2 || info.Flags&container.FlagSigned == 0 {
		t.Fatalf("two signatures: %v %v", info, err)
	}

	// Re-compression keeps the signature: zstd-max + shuffle, then plain.
	small := reencode(t, []byte(twice), container.CompressZstdMax, true)
	plain := reencode(t, small, container.CompressNone, false)
	for _, b := range [][]byte{small, plain} {
		mustRun(t, b, "verify", "-p", pub)
		mustRun(t, b, "verify", "-p", ciPub)
	}
	// A metadata edit breaks it.
	s, _ := apr.OpenStream(bytes.NewReader(signed))
	var edited bytes.Buffer
	if err := stream.Reencode(&edited, s, func(h *container.Header) { h.Metadata.Description = "changed" }, true); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := runIt(t, edited.Bytes(), "verify", "-p", pub); code != 1 || !strings.Contains(errs, "does not match the content") {
		t.Errorf("edited: exit %d, %s", code, errs)
	}

	// -o writes a file; a failure leaves none.
	outFile := filepath.Join(dir, "o.apr")
	mustRun(t, in, "-k", key, "-o", outFile)
	mustRun(t, nil, "verify", "-p", pub, outFile)
	bad := filepath.Join(dir, "bad.apr")
	if _, _, code := runIt(t, in[:len(in)-3], "-k", key, "-o", bad); code != 1 {
		t.Errorf("truncated input: exit %d", code)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("a failed signing left its output file")
	}
}

// TestVerifyPass: a verified model passes through byte for byte; an unverified one
// never reaches stdout.
func TestVerifyPass(t *testing.T) {
	dir := t.TempDir()
	key, pub := keygen(t, dir, "author")
	_, otherPub := keygen(t, dir, "other")
	signedS, _ := mustRun(t, modelBytes(t, "m"), "-k", key)
	signed := []byte(signedS)

	out, errs := mustRun(t, signed, "verify", "-p", pub, "--pass")
	if out != signedS {
		t.Fatal("--pass did not pass the model through unchanged")
	}
	if !strings.Contains(errs, "good signature") {
		t.Errorf("report not on stderr: %q", errs)
	}
	corrupt := func(off int) []byte {
		b := bytes.Clone(signed)
		b[off] ^= 0x10
		return b
	}
	cases := map[string]struct {
		in  []byte
		pub string
	}{
		"wrong key":      {signed, otherPub},
		"unsigned":       {modelBytes(t, "m"), pub},
		"corrupt tensor": {corrupt(len(signed) / 2), pub},
		"corrupt footer": {corrupt(len(signed) - 10), pub},
		"truncated":      {signed[:len(signed)-64], pub},
		"empty":          {nil, pub},
	}
	for name, c := range cases {
		for _, args := range [][]string{{"--pass"}, {"-o", "-"}} {
			out, errs, code := runIt(t, c.in, append([]string{"verify", "-p", c.pub}, args...)...)
			if code != 1 || out != "" || !strings.HasPrefix(errs, "apr-sign: ") {
				t.Errorf("%s %v: exit %d, %d bytes on stdout, stderr %q", name, args, code, len(out), errs)
			}
		}
		outFile := filepath.Join(dir, "verified.apr")
		if _, _, code := runIt(t, c.in, "verify", "-p", c.pub, "-o", outFile); code != 1 {
			t.Errorf("%s -o: exit %d", name, code)
		}
		if _, err := os.Stat(outFile); err == nil {
			t.Errorf("%s: -o left a file", name)
		}
	}
	outFile := filepath.Join(dir, "verified.apr")
	mustRun(t, signed, "verify", "-p", pub, "-o", outFile)
	if got, _ := os.ReadFile(outFile); !bytes.Equal(got, signed) {
		t.Error("-o did not write the verified model")
	}
	// --pass and -o FILE name two outputs: a usage error, nothing written anywhere.
	both := filepath.Join(dir, "both.apr")
	out, errs, code := runIt(t, signed, "verify", "-p", pub, "--pass", "-o", both)
	if code != 2 || out != "" || !strings.Contains(errs, "give one") {
		t.Errorf("--pass -o FILE: exit %d, %d bytes on stdout, %q", code, len(out), errs)
	}
	if _, err := os.Stat(both); err == nil {
		t.Error("--pass -o FILE wrote FILE")
	}
	if out, _ := mustRun(t, signed, "verify", "-p", pub, "--pass", "-o", "-"); out != string(signed) {
		t.Error("--pass -o - did not pass the model through")
	}
}

func TestLicense(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	dir := t.TempDir()
	key, pub := keygen(t, dir, "issuer")
	_, otherPub := keygen(t, dir, "other")
	in := modelBytes(t, "m")
	lic, errs := mustRun(t, in, "license", "-k", key, "--licensee", "Acme Corp", "--tier", "pro", "--seats", "5", "--expires", "36500d")
	if !strings.Contains(errs, `licensed to "Acme Corp"`) {
		t.Errorf("report: %q", errs)
	}
	out, _ := mustRun(t, []byte(lic), "verify", "--license", "-p", pub)
	if !strings.Contains(out, `valid license for "Acme Corp", tier "pro", 5 seats, issued 2026-01-01T00:00:00Z`) {
		t.Errorf("report: %q", out)
	}
	// The license survives re-compression.
	mustRun(t, reencode(t, []byte(lic), container.CompressLZ4, true), "verify", "--license", "-p", pub)

	expired, _ := mustRun(t, in, "license", "-k", key, "--licensee", "Old", "--issued", "2020-01-01", "--expires", "2021-01-01")
	for name, c := range map[string]struct {
		in   string
		pub  string
		want string
	}{
		"expired":        {expired, pub, "expired"},
		"unknown issuer": {lic, otherPub, "not trusted"},
		"no license":     {string(in), pub, "no license block"},
	} {
		out, errs, code := runIt(t, []byte(c.in), "verify", "--license", "-p", c.pub, "--pass")
		if code != 1 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %d bytes, stderr %q", name, code, len(out), errs)
		}
	}
	// Re-licensing replaces the license, with a warning.
	_, errs = mustRun(t, []byte(lic), "license", "-k", key, "--licensee", "Beta")
	if !strings.Contains(errs, "replaced") {
		t.Errorf("no replacement warning: %q", errs)
	}
	// Bad dates are usage errors.
	for _, args := range [][]string{{"--expires", "tomorrow"}, {"--issued", "2026-01-01", "--expires", "2025-01-01"}} {
		if _, _, code := runIt(t, in, append([]string{"license", "-k", key, "--licensee", "x"}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestEncryptedKeyAndUsage(t *testing.T) {
	dir := t.TempDir()
	enc := "../../testdata/keys/test-openssh-ed25519-encrypted"
	encPub := enc + ".pub"
	in := modelBytes(t, "m")
	if _, errs, code := runIt(t, in, "-k", enc); code != 1 || !strings.Contains(errs, "--key-passphrase-file") {
		t.Errorf("no passphrase: exit %d, %s", code, errs)
	}
	pass := filepath.Join(dir, "pass")
	os.WriteFile(pass, []byte("testpass\n"), 0o600)
	signed, errs := mustRun(t, in, "-k", enc, "--key-passphrase-file", pass)
	if strings.Contains(errs, "deprecated") {
		t.Errorf("--key-passphrase-file: %s", errs)
	}
	mustRun(t, []byte(signed), "verify", "-p", encPub)
	t.Setenv("APR_TEST_PASS", "wrong")
	if _, errs, code := runIt(t, in, "-k", enc, "--key-passphrase-env", "APR_TEST_PASS"); code != 1 || !strings.Contains(errs, "wrong passphrase") {
		t.Errorf("wrong passphrase: exit %d, %s", code, errs)
	}
	// The old spellings, --passphrase-file and --passphrase-env for the key's
	// passphrase, work for one release with a notice: they now mean a sealed input's
	// passphrase, and are tried for an encrypted key given no --key-passphrase-*.
	signed2, errs := mustRun(t, in, "-k", enc, "--passphrase-file", pass)
	if !strings.HasPrefix(errs, "apr-sign: --passphrase-file for the key's passphrase is deprecated; use --key-passphrase-file\n") {
		t.Errorf("old --passphrase-file: %q", errs)
	}
	mustRun(t, []byte(signed2), "verify", "-p", encPub)
	if _, errs, code := runIt(t, in, "-k", enc, "--passphrase-env", "APR_TEST_PASS"); code != 1 || !strings.Contains(errs, "wrong passphrase") ||
		!strings.Contains(errs, "--passphrase-env for the key's passphrase is deprecated; use --key-passphrase-env") {
		t.Errorf("old --passphrase-env: exit %d, %s", code, errs)
	}
	// OpenSSL and minisign keys sign too.
	for _, k := range []string{"test-openssl-ed25519.key.pem", "test-minisign-unencrypted.key"} {
		pub := strings.TrimSuffix(strings.TrimSuffix(k, ".key.pem"), ".key") + map[bool]string{true: ".pub.pem", false: ".pub"}[strings.HasSuffix(k, ".pem")]
		s, _ := mustRun(t, in, "-k", "../../testdata/keys/"+k)
		mustRun(t, []byte(s), "verify", "-p", "../../testdata/keys/"+pub)
	}
	for _, args := range [][]string{
		{"--minisign", "-k", enc},
		{"--detached", "-k", enc, "x.apr"},
		{"verify"},
		{"license", "-k", enc},
	} {
		if _, errs, code := runIt(t, in, args...); code != 2 || !strings.HasPrefix(errs, "apr-sign: ") {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
}

func TestPubkey(t *testing.T) {
	dir := t.TempDir()
	key, pub := keygen(t, dir, "a")
	want, err := sign.ParsePublicKey(must(os.ReadFile(pub)))
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{key, pub} {
		for _, f := range []string{"pem", "minisign", "ssh"} {
			out, _ := mustRun(t, nil, "pubkey", "--format", f, from)
			got, err := sign.ParsePublicKey([]byte(out))
			if err != nil || !got.Equal(want) {
				t.Errorf("pubkey --format %s %s: %v\n%s", f, from, err, out)
			}
			// -f, the old spelling of pubkey --format, works for one release.
			if old, errs := mustRun(t, nil, "pubkey", "-f", f, from); old != out || errs != "apr-sign: pubkey -f for the format is deprecated; use --format\n" {
				t.Errorf("pubkey -f %s: %q", f, errs)
			}
		}
	}
	if _, errs, code := runIt(t, nil, "pubkey", "../../testdata/keys/test-openssh-ed25519-encrypted"); code != 1 || !strings.Contains(errs, "private key") {
		t.Errorf("encrypted key: exit %d, %s", code, errs)
	}
}

func TestDetachedMinisign(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	dir := t.TempDir()
	key, pub := keygen(t, dir, "author")
	file := filepath.Join(dir, "model.apr")
	os.WriteFile(file, modelBytes(t, "m"), 0o644)
	mustRun(t, nil, "--detached", "--minisign", "-k", key, file)
	sig, err := os.ReadFile(file + ".minisig")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sig), "trusted comment: timestamp:1767225600\tfile:model.apr\thashed") {
		t.Errorf("signature file:\n%s", sig)
	}
	out, _ := mustRun(t, nil, "verify", "--minisign", "-p", pub, file)
	if !strings.Contains(out, "good minisign signature") {
		t.Errorf("report %q", out)
	}
	changed := filepath.Join(dir, "changed.apr")
	os.WriteFile(changed, append(modelBytes(t, "m"), 0), 0o644)
	if _, _, code := runIt(t, nil, "verify", "--minisign", "-p", pub, "-x", file+".minisig", changed); code != 1 {
		t.Errorf("changed file: exit %d", code)
	}

	// Debian's minisign checks it, with the public key in minisign's format.
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skipf("peer test skipped: cannot run minisign under %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if _, err := exec.LookPath("minisign"); err != nil {
		if os.Getenv("APR_REQUIRE_PEERS") == "1" {
			t.Fatal("required peer missing (APR_REQUIRE_PEERS=1): minisign is not installed (apt-get install -y minisign)")
		}
		t.Skip("peer test skipped: minisign is not installed (apt-get install -y minisign)")
	}
	// apr-sign pubkey converts the PEM public key to minisign's format.
	mpubText, _ := mustRun(t, nil, "pubkey", pub)
	mpub := filepath.Join(dir, "author.minisign.pub")
	os.WriteFile(mpub, []byte(mpubText), 0o644)
	cmd := exec.Command("minisign", "-V", "-p", mpub, "-m", file)
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "file:model.apr") {
		t.Fatalf("minisign -V: %v\n%s", err, b)
	}
	if err := exec.Command("minisign", "-V", "-p", mpub, "-m", changed, "-x", file+".minisig").Run(); err == nil {
		t.Fatal("minisign -V accepted the signature for a changed file")
	}
	// A key made with keygen --minisign is used by minisign as is.
	mkey, mpub2 := keygen(t, dir, "mini", "--minisign")
	mustRun(t, nil, "--detached", "--minisign", "-k", mkey, "-o", file+".2.minisig", file)
	if b, err := exec.Command("minisign", "-V", "-p", mpub2, "-m", file, "-x", file+".2.minisig").CombinedOutput(); err != nil {
		t.Fatalf("minisign -V with a keygen --minisign key: %v\n%s", err, b)
	}
}

// TestSealedInput: apr-seal | apr-sign -i IDENTITY signs the plaintext of a sealed
// model; verify needs the identity too, and --pass releases the still-sealed bytes.
func TestSealedInput(t *testing.T) {
	dir := t.TempDir()
	key, pub := keygen(t, dir, "author")
	idFile := "../../testdata/keys/test-age-identity.txt"
	rb, err := os.ReadFile("../../testdata/keys/test-age-recipient.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err := seal.ParseX25519Recipient(strings.TrimSpace(string(rb)))
	if err != nil {
		t.Fatal(err)
	}
	src, err := apr.OpenStream(bytes.NewReader(modelBytes(t, "secret")))
	if err != nil {
		t.Fatal(err)
	}
	var sealed bytes.Buffer
	if err := apr.SealStream(&sealed, src, []seal.Recipient{r}); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := runIt(t, sealed.Bytes(), "-k", key); code != 1 || out != "" || !strings.Contains(errs, "sealed") {
		t.Fatalf("sealed input without identity: exit %d, %d bytes out, %s", code, len(out), errs)
	}
	signed, _ := mustRun(t, sealed.Bytes(), "-k", key, "-i", idFile)
	mustRun(t, []byte(signed), "verify", "-p", pub, "-i", idFile)
	passed, _ := mustRun(t, []byte(signed), "verify", "-p", pub, "-i", idFile, "--pass")
	if passed != signed {
		t.Error("--pass did not release the sealed model unchanged")
	}
	if out, _, code := runIt(t, []byte(signed), "verify", "-p", pub, "--pass"); code != 1 || out != "" {
		t.Errorf("sealed, verified without identity: exit %d, %d bytes out", code, len(out))
	}
}

// TestPasswordSealedInput: a password-sealed model is signed, licensed and verified
// with --password-file or --password-env, read as apr-seal reads it; the wrong
// password, a password for a key-sealed file, or no password at all fail.
func TestPasswordSealedInput(t *testing.T) {
	dir := t.TempDir()
	key, pub := keygen(t, dir, "author")
	src, err := apr.OpenStream(bytes.NewReader(modelBytes(t, "secret")))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := seal.NewPasswordRecipient([]byte("correct horse"), seal.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	var sealed bytes.Buffer
	if err := apr.SealStream(&sealed, src, []seal.Recipient{pr}); err != nil {
		t.Fatal(err)
	}
	pwFile := filepath.Join(dir, "pw.txt")
	if err := os.WriteFile(pwFile, []byte("correct horse\r\nsecond line is ignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(badFile, []byte("wrong horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("APR_TEST_PW", "correct horse")

	if out, errs, code := runIt(t, sealed.Bytes(), "-k", key); code != 1 || out != "" || !strings.Contains(errs, "sealed") {
		t.Fatalf("password-sealed input without password: exit %d, %d bytes out, %s", code, len(out), errs)
	}
	if out, errs, code := runIt(t, sealed.Bytes(), "-k", key, "--password-file", badFile); code != 1 || out != "" ||
		!strings.Contains(errs, "decrypt") {
		t.Fatalf("wrong password: exit %d, %d bytes out, %s", code, len(out), errs)
	}
	if _, errs, code := runIt(t, sealed.Bytes(), "-k", key, "--password-env", "APR_TEST_UNSET_PW"); code != 2 || !strings.Contains(errs, "APR_TEST_UNSET_PW") {
		t.Fatalf("unset variable: exit %d, %s", code, errs)
	}
	if _, errs, code := runIt(t, sealed.Bytes(), "-k", key, "--password-file", pwFile, "--password-env", "APR_TEST_PW"); code != 2 {
		t.Fatalf("two password sources: exit %d, %s", code, errs)
	}

	signed, _ := mustRun(t, sealed.Bytes(), "-k", key, "--password-file", pwFile)
	if !bytes.Equal([]byte(signed)[:container.HeaderSize-4], setSignedFlag(sealed.Bytes()[:container.HeaderSize-4])) {
		t.Error("the signed file does not start with the sealed file's header (SIGNED added)")
	}
	// --passphrase-*, the spelling of every program; --password-* is the old one.
	if _, errs, code := runIt(t, sealed.Bytes(), "-k", key, "--passphrase-file", pwFile); code != 0 || strings.Contains(errs, "deprecated") {
		t.Fatalf("--passphrase-file: exit %d, %s", code, errs)
	}
	if _, errs, code := runIt(t, sealed.Bytes(), "-k", key, "--passphrase-file", pwFile, "--passphrase-env", "APR_TEST_PW"); code != 2 {
		t.Fatalf("two passphrase sources: exit %d, %s", code, errs)
	}
	out, errs := mustRun(t, []byte(signed), "verify", "-p", pub, "--password-env", "APR_TEST_PW")
	if !strings.HasPrefix(errs, "apr-sign: --password-env is deprecated; use --passphrase-env\n") {
		t.Errorf("old --password-env: %q", errs)
	}
	if !strings.Contains(out, "good signature") {
		t.Errorf("verify printed %q", out)
	}
	if _, _, code := runIt(t, []byte(signed), "verify", "-p", pub, "--password-file", badFile); code != 1 {
		t.Errorf("verify with the wrong password: exit %d", code)
	}
	licensed, _ := mustRun(t, []byte(signed), "license", "-k", key, "--licensee", "Acme", "--password-env", "APR_TEST_PW")
	mustRun(t, []byte(licensed), "verify", "--license", "-p", pub, "--password-file", pwFile)

	// The signature covers the plaintext: it verifies again once unsealed.
	opened, err := apr.OpenSealedStream(bytes.NewReader([]byte(signed)), seal.NewPasswordIdentity([]byte("correct horse")))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if err := stream.Reencode(&plain, opened, nil, true); err != nil {
		t.Fatal(err)
	}
	mustRun(t, plain.Bytes(), "verify", "-p", pub)

	// A password for a file sealed to a key is refused with what to give instead.
	rb, err := os.ReadFile("../../testdata/keys/test-age-recipient.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err := seal.ParseX25519Recipient(strings.TrimSpace(string(rb)))
	if err != nil {
		t.Fatal(err)
	}
	src, err = apr.OpenStream(bytes.NewReader(modelBytes(t, "secret")))
	if err != nil {
		t.Fatal(err)
	}
	var keySealed bytes.Buffer
	if err := apr.SealStream(&keySealed, src, []seal.Recipient{r}); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := runIt(t, keySealed.Bytes(), "-k", key, "--password-file", pwFile); code != 1 || !strings.Contains(errs, "not sealed for a passphrase") {
		t.Errorf("password for a key-sealed file: exit %d, %s", code, errs)
	}
}

// setSignedFlag returns the first bytes of a header with the SIGNED flag set.
func setSignedFlag(h []byte) []byte {
	b := append([]byte(nil), h...)
	f := container.Flags(uint32(b[8]) | uint32(b[9])<<8 | uint32(b[10])<<16 | uint32(b[11])<<24)
	f |= container.FlagSigned
	b[8], b[9], b[10], b[11] = byte(f), byte(f>>8), byte(f>>16), byte(f>>24)
	return b
}

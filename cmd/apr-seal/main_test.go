package main

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
)

func runIt(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// cheap makes password tests fast (the default Argon2id costs 64 MiB, three passes).
var cheap = []string{"--argon2-time", "1", "--argon2-memory", "64", "--argon2-threads", "1"}

func plainModel(t *testing.T) []byte {
	t.Helper()
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	x, _ := model.FromRows([][]float64{{0, 1}, {1, 0}, {2, 2}, {3, 5}})
	m := model.NewLinearRegression()
	if err := m.Fit(x, []float64{1, 2, 6, 13}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := apr.Encode(&buf, m, apr.SaveOptions{Name: "secret", Compression: container.CompressZstd}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func keygen(t *testing.T, dir, name string) (idPath, rcpt string) {
	t.Helper()
	idPath = filepath.Join(dir, name)
	out, stderr, code := runIt(t, nil, "keygen", "-o", idPath)
	if code != 0 {
		t.Fatalf("keygen: exit %d: %s", code, stderr)
	}
	rcpt = strings.TrimSpace(out)
	if !strings.HasPrefix(rcpt, "age1") {
		t.Fatalf("keygen printed %q, want an age1... recipient", out)
	}
	st, err := os.Stat(idPath)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "js" && runtime.GOOS != "wasip1" && st.Mode().Perm() != 0o600 {
		t.Errorf("identity file mode %v, want 0600", st.Mode().Perm())
	}
	pub, err := os.ReadFile(idPath + ".pub")
	if err != nil || strings.TrimSpace(string(pub)) != rcpt {
		t.Fatalf("recipient file %q, %v", pub, err)
	}
	return idPath, rcpt
}

func TestKeygenSealUnsealX25519(t *testing.T) {
	dir := t.TempDir()
	plain := plainModel(t)
	id, rcpt := keygen(t, dir, "alice.key")
	_, bobRcpt := keygen(t, dir, "bob.key")
	if _, stderr, code := runIt(t, nil, "keygen", "-o", id); code != 1 || !strings.Contains(stderr, "exists") {
		t.Errorf("keygen over an existing identity: exit %d, %q", code, stderr)
	}
	// Through stdin/stdout, with one recipient as a string and one as a file.
	sealed, stderr, code := runIt(t, plain, "-r", rcpt, "-r", filepath.Join(dir, "bob.key.pub"))
	if code != 0 {
		t.Fatalf("seal: exit %d: %s", code, stderr)
	}
	if bytes.Contains([]byte(sealed), []byte(bobRcpt)) {
		t.Error("the recipient's public key is stored in the file")
	}
	info, err := container.InspectStream(strings.NewReader(sealed))
	if err != nil {
		t.Fatal(err)
	}
	si, err := apr.ParseSealInfo(info.Seal)
	if err != nil || si.X25519 != 2 || si.Password || info.Metadata.Name != "secret" || info.Tensors[0].Codec != container.CodecZstd {
		t.Fatalf("sealed file: %+v %+v %v", info, si, err)
	}
	for _, args := range [][]string{{"-d", "-i", id}, {"unseal", "-i", filepath.Join(dir, "bob.key")}} {
		back, stderr, code := runIt(t, []byte(sealed), args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if !bytes.Equal([]byte(back), plain) {
			t.Errorf("%v: unsealed bytes differ from the original", args)
		}
	}
	// Files: -o is written atomically; a second seal gives different bytes (new file key).
	in := filepath.Join(dir, "m.apr")
	os.WriteFile(in, plain, 0o644)
	out := filepath.Join(dir, "m.sealed.apr")
	if _, stderr, code := runIt(t, nil, "-r", rcpt, in, "-o", out); code != 0 {
		t.Fatalf("seal to a file: %s", stderr)
	}
	again, _ := os.ReadFile(out)
	if bytes.Equal(again, []byte(sealed)) {
		t.Error("two seals of one model gave the same bytes")
	}
	back := filepath.Join(dir, "back.apr")
	if _, stderr, code := runIt(t, nil, "-d", "-i", id, out, "-o", back); code != 0 {
		t.Fatalf("unseal to a file: %s", stderr)
	}
	if b, _ := os.ReadFile(back); !bytes.Equal(b, plain) {
		t.Error("unsealed file differs")
	}
}

func TestPassword(t *testing.T) {
	dir := t.TempDir()
	plain := plainModel(t)
	pwFile := filepath.Join(dir, "pw")
	os.WriteFile(pwFile, []byte("correct horse\n"), 0o600)
	t.Setenv("APR_TEST_PW", "correct horse")
	sealed, stderr, code := runIt(t, plain, append([]string{"--passphrase", "--passphrase-file", pwFile}, cheap...)...)
	if code != 0 || stderr != "" {
		t.Fatalf("seal: exit %d: %s", code, stderr)
	}
	// -p, the old spelling of --passphrase, works for one release with a notice.
	if _, stderr, code := runIt(t, plain, append([]string{"-p", "--passphrase-file", pwFile}, cheap...)...); code != 0 ||
		stderr != "apr-seal: -p for a passphrase is deprecated; use --passphrase\n" {
		t.Fatalf("seal -p: exit %d: %q", code, stderr)
	}
	info, err := container.InspectStream(strings.NewReader(sealed))
	if err != nil {
		t.Fatal(err)
	}
	if si, err := apr.ParseSealInfo(info.Seal); err != nil || !si.Password || si.Argon2id.Time != 1 {
		t.Fatalf("seal info %+v %v", si, err)
	}
	// The password file and the environment variable both open it; -p is implied.
	for _, args := range [][]string{{"-d", "--passphrase-env", "APR_TEST_PW"}, {"unseal", "-p", "--passphrase-file", pwFile}} {
		back, stderr, code := runIt(t, []byte(sealed), args...)
		if code != 0 || !bytes.Equal([]byte(back), plain) {
			t.Fatalf("%v: exit %d, %s", args, code, stderr)
		}
	}
	// Without a password source and without a terminal (tests have none), it says how.
	if _, stderr, code := runIt(t, []byte(sealed), "-d"); code != 1 || !strings.Contains(stderr, "--passphrase-file") {
		if !(code == 1 && strings.Contains(stderr, "decryption failed")) { // a developer's terminal may answer
			t.Errorf("no password source: exit %d, %q", code, stderr)
		}
	}
	if _, stderr, code := runIt(t, plain, "-p", "-r", "age1qqqq"); code != 2 {
		t.Errorf("-p with -r: exit %d, %q", code, stderr)
	}
}

// fixCRCs recomputes the header, metadata and whole-file CRCs after an in-place edit
// of the header or metadata: what a forger without the key can do.
func fixCRCs(b []byte) {
	le := binary.LittleEndian
	metaLen := le.Uint32(b[12:])
	le.PutUint32(b[16:], crc32.ChecksumIEEE(b[64:64+metaLen]))
	le.PutUint32(b[60:], crc32.ChecksumIEEE(b[:60]))
	foot := b[len(b)-64:]
	c := crc32.NewIEEE()
	c.Write(b[:len(b)-64])
	c.Write(foot[:52])
	le.PutUint32(foot[52:], c.Sum32())
}

func TestFailuresExitOneWithoutOutput(t *testing.T) {
	dir := t.TempDir()
	plain := plainModel(t)
	id, rcpt := keygen(t, dir, "alice.key")
	eve, _ := keygen(t, dir, "eve.key")
	sealed, _, code := runIt(t, plain, "-r", rcpt)
	if code != 0 {
		t.Fatal("seal failed")
	}
	pwSealed, _, code := runIt(t, plain, append([]string{"--passphrase-env", "APR_TEST_PW"}, cheap...)...)
	t.Setenv("APR_TEST_PW", "right")
	if pwSealed, _, code = runIt(t, plain, append([]string{"--passphrase-env", "APR_TEST_PW"}, cheap...)...); code != 0 {
		t.Fatal("password seal failed")
	}
	forged := []byte(sealed)
	i := bytes.Index(forged, []byte("secret"))
	forged[i] = 'S'
	fixCRCs(forged)
	flipped := []byte(sealed)
	sf, err := container.NewFile(bytes.NewReader(flipped), int64(len(flipped)))
	if err != nil {
		t.Fatal(err)
	}
	ce, _ := sf.Entry("coefficients")
	flipped[ce.DataOffset+ce.StoredSize/2] ^= 1 // in the tensor's sealed data
	out := filepath.Join(dir, "out.apr")
	cases := []struct {
		name string
		in   []byte
		args []string
		msg  string
	}{
		{"wrong identity", []byte(sealed), []string{"-d", "-i", eve}, "decryption failed"},
		{"wrong password", []byte(pwSealed), []string{"-d", "--passphrase-env", "WRONG_PW"}, "decryption failed"},
		{"password for an X25519 file", []byte(sealed), []string{"-d", "--passphrase-env", "WRONG_PW"}, "not sealed for a passphrase"},
		{"metadata forged, CRCs fixed", forged, []string{"-d", "-i", id}, "decryption failed"},
		{"bit flipped", flipped, []string{"-d", "-i", id}, "coefficients"},
		{"truncated", []byte(sealed[:len(sealed)-100]), []string{"-d", "-i", id}, "truncated"},
		{"not sealed", plain, []string{"-d", "-i", id}, "not a sealed"},
		{"sealed twice", []byte(sealed), []string{"-r", rcpt}, "sealed already"},
		{"garbage", []byte("not a model"), []string{"-r", rcpt}, "stdin"},
	}
	t.Setenv("WRONG_PW", "wrong")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runIt(t, c.in, append(c.args, "-o", out)...)
			if code != 1 || !strings.HasPrefix(stderr, "apr-seal: ") || !strings.Contains(stderr, c.msg) || stdout != "" {
				t.Errorf("exit %d, stdout %d bytes, stderr %q; want exit 1 and %q", code, len(stdout), stderr, c.msg)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("an output file was left behind")
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 4 { // the two identities and their .pub files
				t.Errorf("stray files: %v", ents)
			}
		})
	}
	for _, args := range [][]string{{}, {"-d", "-r", rcpt}, {"-i", id}, {"-r", "age1notakey"}} {
		if _, stderr, code := runIt(t, plain, args...); code != 2 {
			t.Errorf("%v: exit %d, %q; want a usage error", args, code, stderr)
		}
	}
}

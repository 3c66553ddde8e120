package seal

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/internal/peertest"
)

// needTool skips the test when a peer tool is missing (CI installs Debian's
// age and minisign; wasm cannot run subprocesses at all).
func needTool(t *testing.T, names ...string) {
	t.Helper()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skipf("peer test skipped: cannot run %s under %s/%s", names[0], runtime.GOOS, runtime.GOARCH)
	}
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			peertest.Missing(t, "peer test skipped: %q is not installed (apt-get install -y age)", n)
		}
	}
}

func run(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestAgeInteropKeygen: keys made by age-keygen parse with our parser, and
// our recipient derivation matches age-keygen -y.
func TestAgeInteropKeygen(t *testing.T) {
	needTool(t, "age-keygen")
	dir := t.TempDir()
	idPath := filepath.Join(dir, "id.txt")
	run(t, nil, "age-keygen", "-o", idPath)
	raw, err := os.ReadFile(idPath)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := ParseX25519Identities(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(run(t, nil, "age-keygen", "-y", idPath)))
	if got := ids[0].Recipient().String(); got != want {
		t.Fatalf("our recipient %s, age-keygen -y says %s", got, want)
	}
	if _, err := ParseX25519Recipient(want); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), ids[0].String()) {
		t.Fatal("our encoding of the identity differs from age-keygen's")
	}
}

// TestAgeInteropOurKeys: age accepts our generated key strings: age-keygen -y
// reads our identity and prints our recipient, age -r encrypts to our
// recipient, and age -d -i with our identity decrypts that file.
func TestAgeInteropOurKeys(t *testing.T) {
	needTool(t, "age", "age-keygen")
	id, err := GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	idPath := filepath.Join(dir, "ours.txt")
	content := "# created by apr seal tests\n# public key: " + id.Recipient().String() + "\n" + id.String() + "\n"
	if err := os.WriteFile(idPath, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(run(t, nil, "age-keygen", "-y", idPath))); got != id.Recipient().String() {
		t.Fatalf("age-keygen -y on our identity: %s, want %s", got, id.Recipient())
	}
	msg := []byte("sealed by age to an apr-generated recipient\n")
	ct := run(t, msg, "age", "-r", id.Recipient().String())
	if !bytes.HasPrefix(ct, []byte("age-encryption.org/v1\n-> X25519 ")) {
		t.Fatalf("unexpected age output: %q", ct[:min(len(ct), 60)])
	}
	pt := run(t, ct, "age", "-d", "-i", idPath)
	if !bytes.Equal(pt, msg) {
		t.Fatalf("age decrypted %q", pt)
	}
}

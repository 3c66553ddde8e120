package argon2ref

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/internal/peertest"
)

// TestPeerArgon2CLI compares IDKey with the command-line tool of the Argon2
// reference implementation (Debian's argon2 package): `argon2 SALT -id -t T
// -k KiB -p LANES -l LEN -r` reads the password from stdin and prints the
// raw tag in hex. The tool takes the salt from its arguments and refuses an
// empty or long (over 127 bytes) password, hence the inputs below.
func TestPeerArgon2CLI(t *testing.T) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skipf("peer test skipped: cannot run argon2 under %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	tool, err := exec.LookPath("argon2")
	if err != nil {
		peertest.Missing(t, "peer test skipped: %q is not installed (apt-get install -y argon2)", "argon2")
	}
	type tc struct {
		password, salt string
		time, mem      uint32
		lanes, tagLen  uint32
	}
	cases := []tc{
		{"password", "somesalt", 2, 16, 1, 32},
		{"pass\nword\x00\xff", "saltsaltsalt", 1, 63, 4, 100},
		{"p", "0123456789abcdef", 3, 100, 3, 4},
		{"correct horse battery staple", "another salt", 4, 257, 2, 64},
		{strings.Repeat("x", 127), "longer salt value, with spaces", 1, 1030, 4, 65},
	}
	if !testing.Short() {
		// lib/seal's default profile.
		cases = append(cases, tc{"sealing password", "github.com/apr-go/apr/seal/argon2id@v1 salt", 3, 64 * 1024, 4, 32})
	}
	for _, c := range cases {
		name := fmt.Sprintf("t=%d,m=%d,p=%d,T=%d", c.time, c.mem, c.lanes, c.tagLen)
		t.Run(name, func(t *testing.T) {
			args := []string{c.salt, "-id", "-t", fmt.Sprint(c.time), "-k", fmt.Sprint(c.mem),
				"-p", fmt.Sprint(c.lanes), "-l", fmt.Sprint(c.tagLen), "-r"}
			cmd := exec.Command(tool, args...)
			cmd.Stdin = strings.NewReader(c.password)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("argon2 %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			want, err := hex.DecodeString(strings.TrimSpace(string(out)))
			if err != nil || len(want) != int(c.tagLen) {
				t.Fatalf("argon2 printed %q, want %d bytes in hex", out, c.tagLen)
			}
			got, err := IDKey([]byte(c.password), []byte(c.salt),
				Params{Time: c.time, MemoryKiB: c.mem, Lanes: c.lanes, TagLen: c.tagLen})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("\n got %x\nwant %x (argon2 CLI)", got, want)
			}
		})
	}
}

package seal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/apr-go/apr/lib/internal/argon2ref"
)

// TestArgon2KAT checks the password key derivation as sealing runs it
// against argon2ref, the second Argon2id implementation that reproduces the
// RFC 9106 test vector: the wrap key of a stanza written by
// PasswordRecipient must equal Argon2id(password, label || salt, params, 32)
// computed by argon2ref from the stanza's own salt and parameter bytes, and
// must open the stanza body to the file key.
func TestArgon2KAT(t *testing.T) {
	params := []Argon2Params{
		DefaultArgon2Params,
		{Time: 1, MemoryKiB: 8, Threads: 1},
		{Time: 2, MemoryKiB: 100, Threads: 3},
		{Time: 4, MemoryKiB: 257, Threads: 4},
	}
	password := []byte("correct horse battery staple")
	fileKey := bytes.Repeat([]byte{0xa5}, FileKeySize)
	for _, p := range params {
		t.Run(fmt.Sprintf("t=%d,m=%d,p=%d", p.Time, p.MemoryKiB, p.Threads), func(t *testing.T) {
			if p == DefaultArgon2Params && testing.Short() {
				t.Skip("64 MiB default profile skipped in -short mode (about 5 s under wasip1)")
			}
			r, err := NewPasswordRecipient(password, p)
			if err != nil {
				t.Fatal(err)
			}
			stanzas, err := r.Wrap(fileKey)
			if err != nil {
				t.Fatal(err)
			}
			if len(stanzas) != 1 || stanzas[0].Type != Argon2idStanzaType || len(stanzas[0].Args) != 2 {
				t.Fatalf("want one argon2id stanza with two args, got %+v", stanzas)
			}
			salt, enc := stanzas[0].Args[0], stanzas[0].Args[1]

			// Decode the parameters as documented (time u32 BE, memory KiB
			// u32 BE, threads u8), not with the package's own parser.
			if len(enc) != 9 {
				t.Fatalf("params argument of %d bytes, want 9", len(enc))
			}
			ref := argon2ref.Params{
				Time:      binary.BigEndian.Uint32(enc[0:4]),
				MemoryKiB: binary.BigEndian.Uint32(enc[4:8]),
				Lanes:     uint32(enc[8]),
				TagLen:    chacha20poly1305.KeySize,
			}
			if ref.Time != p.Time || ref.MemoryKiB != p.MemoryKiB || ref.Lanes != uint32(p.Threads) {
				t.Fatalf("stanza params %+v, sealed with %+v", ref, p)
			}
			want, err := argon2ref.IDKey(password, append([]byte(argon2SaltLabel), salt...), ref)
			if err != nil {
				t.Fatal(err)
			}

			if got := argon2WrapKey(password, salt, p); !bytes.Equal(got, want) {
				t.Errorf("wrap key\n got %x\nwant %x (argon2ref)", got, want)
			}
			a, err := chacha20poly1305.New(want)
			if err != nil {
				t.Fatal(err)
			}
			opened, err := a.Open(nil, make([]byte, chacha20poly1305.NonceSize), stanzas[0].Body, nil)
			if err != nil {
				t.Fatalf("stanza body does not open under the argon2ref key: %v", err)
			}
			if !bytes.Equal(opened, fileKey) {
				t.Errorf("stanza body opened to %x, want the file key %x", opened, fileKey)
			}
		})
	}
}

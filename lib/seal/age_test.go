package seal

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func ageSeal(t *testing.T, msg []byte, extra func([]byte) ([]AgeStanza, error), rs ...*X25519Recipient) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := CreateAge(&buf, rs, extra)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func ageOpen(file []byte, ids ...*X25519Identity) ([]byte, *AgeFile, error) {
	f, err := OpenAge(bytes.NewReader(file), ids)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(f)
	return b, f, err
}

// ageSizes cross the 64 KiB chunk boundary: empty, short, one full chunk, one
// byte more, several chunks.
var ageSizes = []int{0, 1, 1000, 64 << 10, 64<<10 + 1, 2 << 16, 200_000}

func ageMessage(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>9)
	}
	return b
}

func TestAgeRoundTrip(t *testing.T) {
	alice, _ := GenerateX25519Identity()
	bob, _ := GenerateX25519Identity()
	for _, n := range ageSizes {
		msg := ageMessage(n)
		file := ageSeal(t, msg, nil, alice.Recipient(), bob.Recipient())
		for _, id := range []*X25519Identity{alice, bob} {
			got, _, err := ageOpen(file, id)
			if err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("%d bytes: %v (got %d bytes)", n, err, len(got))
			}
		}
	}
}

func TestAgeRefusals(t *testing.T) {
	alice, _ := GenerateX25519Identity()
	eve, _ := GenerateX25519Identity()
	msg := ageMessage(100_000)
	file := ageSeal(t, msg, func(k []byte) ([]AgeStanza, error) {
		return []AgeStanza{{Type: "apr-test", Args: []string{"x"}, Body: []byte("y")}}, nil
	}, alice.Recipient())
	if _, _, err := ageOpen(file, eve); !errors.Is(err, ErrNoIdentityMatched) || !errors.Is(err, ErrDecryptionFailed) {
		t.Fatalf("wrong key: %v", err)
	}
	hdrEnd := bytes.Index(file, []byte("\n---")) + 1
	cases := map[string][]byte{}
	flip := func(i int) []byte { b := bytes.Clone(file); b[i] ^= 1; return b }
	cases["stanza argument"] = flip(bytes.Index(file, []byte("apr-test x")) + 9)
	cases["payload"] = flip(len(file) - 100)
	cases["nonce"] = flip(bytes.IndexByte(file[hdrEnd:], '\n') + hdrEnd + 3)
	cases["mac"] = flip(hdrEnd + 6)
	cases["truncated at a chunk"] = file[:len(file)-(100_000-65536+16)]
	cases["truncated"] = file[:len(file)-1]
	cases["extended"] = append(bytes.Clone(file), 0)
	cases["header only"] = file[:hdrEnd+48]
	for name, b := range cases {
		got, _, err := ageOpen(b, alice)
		if err == nil {
			t.Errorf("%s: opened", name)
			continue
		}
		if !errors.Is(err, ErrDecryptionFailed) && !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v wraps neither ErrDecryptionFailed nor ErrMalformed", name, err)
		}
		if len(got) > 65536 {
			t.Errorf("%s: %d bytes released from an unverified chunk", name, len(got))
		}
	}
	if _, err := OpenAge(strings.NewReader("age-encryption.org/v1\n--- AAAA\n"), []*X25519Identity{alice}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("no stanza: %v", err)
	}
}

// TestAgeInterop: Debian's age decrypts our files (an extra stanza of an unknown
// type included) and we decrypt age's, at every size.
func TestAgeInterop(t *testing.T) {
	needTool(t, "age", "age-keygen")
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
	id := ids[0]
	extra := func([]byte) ([]AgeStanza, error) {
		return []AgeStanza{{Type: "apr-reply", Args: []string{"AAAA"}}, {Type: "apr-long", Body: ageMessage(100)}}, nil
	}
	for _, n := range ageSizes {
		msg := ageMessage(n)
		if got := run(t, ageSeal(t, msg, extra, id.Recipient()), "age", "-d", "-i", idPath); !bytes.Equal(got, msg) {
			t.Fatalf("age -d of our %d-byte file gave %d bytes", n, len(got))
		}
		theirs := run(t, msg, "age", "-r", id.Recipient().String())
		got, _, err := ageOpen(theirs, id)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("age's %d-byte file: %v", n, err)
		}
	}
}

func FuzzOpenAge(f *testing.F) {
	id, _ := ParseX25519Identity("AGE-SECRET-KEY-1J7YT92GEFQCXGY20N4SD0NV6U7F05LFT5WAE9PG78NDZGH8JXKFSHT30HP")
	for _, n := range []int{0, 10, 70_000} {
		var buf bytes.Buffer
		w, _ := CreateAge(&buf, []*X25519Recipient{id.Recipient()}, func([]byte) ([]AgeStanza, error) {
			return []AgeStanza{{Type: "apr-reply", Args: []string{"AAAA"}}}, nil
		})
		w.Write(ageMessage(n))
		w.Close()
		f.Add(buf.Bytes())
	}
	f.Add([]byte("age-encryption.org/v1\n-> X25519 AAAA\n\n--- AAAA\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		af, err := OpenAge(bytes.NewReader(b), []*X25519Identity{id})
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrDecryptionFailed) && !errors.Is(err, ErrParamsOutOfRange) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		io.Copy(io.Discard, af)
	})
}

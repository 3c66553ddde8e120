package oms

import (
	"crypto/elliptic"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFileChangedWhileHashed: a file that changes while it is hashed is refused when
// signing (Hash) and when verifying, whichever way it changes: rewritten in place
// with the same size, grown, or replaced by another file of the same size and
// modification time. The change is made by a hook between reading the bytes and
// the check after them, so the test does not depend on timing; the file was last
// written an hour ago, as a model's files are, so a write now moves its time.
func TestFileChangedWhileHashed(t *testing.T) {
	content := strings.Repeat("0123456789", 30)
	past := time.Now().Add(-time.Hour)
	changes := []struct {
		name   string
		change func(t *testing.T, p string)
	}{
		{"rewritten in place, same size", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("X"), 42)
			f.Close()
		}},
		{"appended to", func(t *testing.T, p string) {
			f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			f.Write([]byte("more"))
			f.Close()
		}},
		{"replaced, same size and time", func(t *testing.T, p string) {
			tmp := p + ".new"
			os.WriteFile(tmp, []byte(strings.ToUpper(content)+"!"), 0o644)
			os.Truncate(tmp, int64(len(content)))
			os.Chtimes(tmp, past, past)
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, ser := range []Serialization{files(), {Method: MethodShards, HashType: SHA256, ShardSize: 64}} {
		for _, c := range changes {
			for _, verify := range []bool{false, true} {
				name := ser.Method + "/" + c.name + "/sign"
				if verify {
					name = ser.Method + "/" + c.name + "/verify"
				}
				t.Run(name, func(t *testing.T) {
					dir := writeModel(t, map[string]string{"w": content, "config.json": "{}"})
					w := filepath.Join(dir, "w")
					os.Chtimes(w, past, past)
					var bundle []byte
					k := newKey(t, elliptic.P256())
					if verify {
						bundle, _ = signDir(t, dir, ser, NewKeySigner(k))
					}
					var once sync.Once
					testHookHashed = func(abs string) {
						if filepath.Base(abs) == "w" {
							once.Do(func() { c.change(t, abs) })
						}
					}
					defer func() { testHookHashed = nil }()
					var err error
					if verify {
						_, err = VerifyModel(dir, &Verifier{Key: &k.PublicKey}, bundle, VerifyOptions{})
					} else {
						_, err = Hash(dir, ser, HashOptions{})
					}
					if err == nil || !strings.Contains(err.Error(), "changed while it was hashed") {
						t.Fatalf("want a refusal: %v", err)
					}
				})
			}
		}
	}
}

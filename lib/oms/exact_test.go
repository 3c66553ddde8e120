package oms

import (
	"crypto/elliptic"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// signEdited hashes dir as s says, lets edit change the manifest, and signs the
// statement of the result with k: a validly signed statement that says what edit
// made it say, as a signer's bug or a malicious signer could.
func signEdited(t *testing.T, dir string, s Serialization, edit func(rs []Resource) []Resource) ([]byte, *Verifier) {
	t.Helper()
	m, err := Hash(dir, s, HashOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.Resources = edit(slices.Clone(m.Resources))
	st, err := m.Statement()
	if err != nil {
		t.Fatal(err)
	}
	k := newKey(t, elliptic.P256())
	b, err := NewKeySigner(k).Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	return b, &Verifier{Key: &k.PublicKey}
}

// shardRes is the resource of bytes [start, end) of content, named p.
func shardRes(p, content string, start, end int64) Resource {
	d := sha256.Sum256([]byte(content[start:end]))
	return Resource{Name: shardName(p, start, end), Algorithm: SHA256, Digest: d[:], Path: p, Start: start, End: end}
}

// drop removes the resource named name.
func drop(name string) func([]Resource) []Resource {
	return func(rs []Resource) []Resource {
		return slices.DeleteFunc(rs, func(r Resource) bool { return r.Name == name })
	}
}

// TestShardStatementCoversEveryByte: model_signing rebuilds the whole manifest of
// the model and compares it with the signed one, so a shards statement verifies
// only if its ranges cover each file's bytes exactly once. A statement that leaves
// a range out, lists one twice or overlaps is refused, even when the model is
// untouched, and a change inside a left-out range can never pass.
func TestShardStatementCoversEveryByte(t *testing.T) {
	w := strings.Repeat("0123456789", 12) // 120 bytes: shards of 10
	z := "abcdefghijklmnopqrstuvwxy"      // 25 bytes: 10, 10, 5
	ser := Serialization{Method: MethodShards, HashType: SHA256, ShardSize: 10}
	cases := []struct {
		name   string
		edit   func([]Resource) []Resource
		tamper int64 // a byte of w changed before verifying, -1 for none
		want   string
	}{
		{"gap in the middle", drop("w:50:60"), -1, `"w" leave a gap: bytes 50-60 are not covered`},
		{"gap in the middle, a byte in it changed", drop("w:50:60"), 55, `"w" leave a gap: bytes 50-60 are not covered`},
		{"gap at the start", drop("w:0:10"), 3, `"w" leave a gap: bytes 0-10 are not covered`},
		{"gap in the last file", drop("z:10:20"), -1, `"z" leave a gap: bytes 10-20 are not covered`},
		{"short shard leaves a gap", func(rs []Resource) []Resource {
			i := slices.IndexFunc(rs, func(r Resource) bool { return r.Name == "w:50:60" })
			rs[i] = shardRes("w", w, 50, 55)
			return rs
		}, 57, `"w" leave a gap: bytes 55-60 are not covered`},
		{"two shards at one offset (overlap)", func(rs []Resource) []Resource {
			return append(rs, shardRes("w", w, 50, 55))
		}, -1, `"w" overlap: bytes 50-55 are covered twice`},
		{"a shard listed twice", func(rs []Resource) []Resource {
			return append(rs, rs[3])
		}, -1, "listed twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeModel(t, map[string]string{"w": w, "z": z})
			bundle, v := signEdited(t, dir, ser, c.edit)
			if c.tamper >= 0 {
				b := []byte(w)
				b[c.tamper] ^= 1
				os.WriteFile(filepath.Join(dir, "w"), b, 0o644)
			}
			_, err := VerifyModel(dir, v, bundle, VerifyOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("verified or wrong error (want %q): %v", c.want, err)
			}
		})
	}
	// The statement apr writes covers every byte: it verifies, and a change is named.
	dir := writeModel(t, map[string]string{"w": w, "z": z})
	bundle, v := signEdited(t, dir, ser, func(rs []Resource) []Resource { return rs })
	if _, err := VerifyModel(dir, v, bundle, VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "w"), []byte(w[:55]+"!"+w[56:]), 0o644)
	if _, err := VerifyModel(dir, v, bundle, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "changed: w bytes 50-60") {
		t.Fatalf("a changed shard: %v", err)
	}
}

// TestCompareShardRangesExactly: Compare itself, given manifests that were not
// read from a statement, names ranges that one side has and the other lacks.
func TestCompareShardRangesExactly(t *testing.T) {
	w := strings.Repeat("0123456789", 3)
	ser := Serialization{Method: MethodShards, HashType: SHA256, ShardSize: 10}
	got := &Manifest{Serialization: ser, Resources: []Resource{shardRes("w", w, 0, 10), shardRes("w", w, 10, 20), shardRes("w", w, 20, 30)}}
	want := &Manifest{Serialization: ser, Resources: []Resource{shardRes("w", w, 0, 10), shardRes("w", w, 20, 30)}}
	d := Compare(want, got, "")
	if len(d) != 1 || d[0].String() != "changed: w bytes 10-20 (the shard at offset 10) (not covered by the signature)" {
		t.Fatalf("%v", d)
	}
}

// TestNamesAreExact: a resource name is the canonical relative path model_signing
// and apr write (str of a PurePosixPath; decimal offsets without sign or leading
// zeros). Another spelling of the same path is refused, not taken as an alias: a
// statement could otherwise list one file under two names with two digests.
func TestNamesAreExact(t *testing.T) {
	w := strings.Repeat("0123456789", 3)
	model := map[string]string{"f": "x", "a/b": "y", "w": w}
	rename := func(from, to string) func([]Resource) []Resource {
		return func(rs []Resource) []Resource {
			for i := range rs {
				if rs[i].Name == from {
					rs[i].Name = to
					return rs
				}
			}
			t.Fatalf("no resource %q", from)
			return nil
		}
	}
	shards := Serialization{Method: MethodShards, HashType: SHA256, ShardSize: 10}
	cases := []struct {
		ser      Serialization
		from, to string
	}{
		{files(), "f", "./f"},
		{files(), "f", "f/"},
		{files(), "a/b", "a//b"},
		{files(), "a/b", "a/./b"},
		{files(), "a/b", "a/b/."},
		{shards, "w:0:10", "./w:0:10"},
		{shards, "w:0:10", "w:+0:10"},
		{shards, "w:0:10", "w:00:10"},
		{shards, "w:10:20", "w:10:020"},
		{shards, "w:10:20", "w:+10:20"},
		{shards, "a/b:0:1", "a//b:0:1"},
	}
	for _, c := range cases {
		t.Run(c.to, func(t *testing.T) {
			dir := writeModel(t, model)
			bundle, v := signEdited(t, dir, c.ser, rename(c.from, c.to))
			_, err := VerifyModel(dir, v, bundle, VerifyOptions{})
			if err == nil || !strings.Contains(err.Error(), "not canonical") {
				t.Fatalf("verified or wrong error: %v", err)
			}
		})
	}
}

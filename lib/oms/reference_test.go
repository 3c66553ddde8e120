package oms

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// referenceDir is the copy of model-transparency's material (docs/SIGNING.md, "OMS
// test material"): testdata/oms.
func referenceDir(t *testing.T, sub string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "oms")
	p := filepath.Join(dir, sub)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("OMS reference material %s is missing: %v", p, err)
	}
	return p
}

// referenceModels builds the models of model-transparency's tests/conftest.py
// (same names, same contents) and returns the model path of each fixture.
func referenceModels(t *testing.T) map[string]string {
	t.Helper()
	const known = "This is a simple model"
	mk := func(root string, files map[string]string) string {
		for name, content := range files {
			p := filepath.Join(root, filepath.FromSlash(name))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		os.MkdirAll(root, 0o755)
		return root
	}
	base := t.TempDir()
	sample := map[string]string{}
	for i := range 2 {
		for j := range 3 {
			sample[fmt.Sprintf("d%d/f%d%d", i, i, j)] = fmt.Sprintf("This is file f%d%d in d%d.", i, j, i)
		}
	}
	for i := range 4 {
		sample[fmt.Sprintf("f%d", i)] = fmt.Sprintf("This is file f%d in root.", i)
	}
	deep := map[string]string{}
	for i := range 4 {
		deep[fmt.Sprintf("d0/d1/d2/d3/d4/f%d", i)] = fmt.Sprintf("This is file f%d.", i)
	}
	models := map[string]string{
		"sample_model_file":            filepath.Join(mk(filepath.Join(base, "m1"), map[string]string{"file_model": known}), "file_model"),
		"empty_model_file":             filepath.Join(mk(filepath.Join(base, "m2"), map[string]string{"empty_file_model": ""}), "empty_file_model"),
		"sample_model_folder":          mk(filepath.Join(base, "sample_model"), sample),
		"empty_model_folder":           mk(filepath.Join(base, "empty_folder_model"), nil),
		"model_folder_with_empty_file": mk(filepath.Join(base, "empty_file_inside_model"), map[string]string{"empty_file": ""}),
		"deep_model_folder":            mk(filepath.Join(base, "deep_model"), deep),
	}
	ext := mk(filepath.Join(base, "external"), map[string]string{"file": known})
	link := mk(filepath.Join(base, "symlink_model"), nil)
	if err := os.Symlink(filepath.Join(ext, "file"), filepath.Join(link, "symlink_file")); err == nil {
		models["symlink_model_folder"] = link
	}
	return models
}

// TestStatementsMatchModelTransparency computes the statements of model-transparency's
// payload goldens (tests/_signing/testdata/signing/TestPayload: files, shards of
// 1 GB and of 8 bytes, symlinks followed) for the same models and compares them
// field by field. Two differences are the spec's, not apr's: a single-file model's
// resource is named by its file name (model_signing: "."), and a shard's algorithm
// is the hash_type (model_signing: "sha256-sharded-SIZE", which the spec's schema
// does not allow). Models with nothing to sign are refused, as the spec requires.
func TestStatementsMatchModelTransparency(t *testing.T) {
	golden := referenceDir(t, "model-transparency/tests/_signing/testdata/signing/TestPayload")
	models := referenceModels(t)
	checked := 0
	for name, root := range models {
		for suffix, s := range map[string]Serialization{
			"":              {Method: MethodFiles, HashType: SHA256, AllowSymlinks: true},
			"_shard":        {Method: MethodShards, HashType: SHA256, ShardSize: DefaultShardSize, AllowSymlinks: true},
			"_small_shards": {Method: MethodShards, HashType: SHA256, ShardSize: 8, AllowSymlinks: true},
		} {
			t.Run(name+suffix, func(t *testing.T) {
				data, err := os.ReadFile(filepath.Join(golden, name+suffix))
				if err != nil {
					t.Fatal(err)
				}
				var want statementIn
				if err := json.Unmarshal(data, &want); err != nil {
					t.Fatal(err)
				}
				res := want.Predicate.Resources
				m, err := Hash(root, s, HashOptions{})
				var st []byte
				if err == nil {
					st, err = m.Statement()
				}
				if len(res) == 0 {
					if err == nil {
						t.Fatalf("a model with nothing to sign was signed:\n%s", st)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got, err := ParseStatement(st)
				if err != nil {
					t.Fatal(err)
				}
				if got.ModelName != want.Subject[0].Name || hex.EncodeToString(rootOf(got)) != want.Subject[0].Digest["sha256"] {
					t.Errorf("subject %s %x, want %s %s", got.ModelName, rootOf(got), want.Subject[0].Name, want.Subject[0].Digest["sha256"])
				}
				ser := want.Predicate.Serialization
				if *ser.Method != s.Method || *ser.HashType != s.HashType || *ser.AllowSymlinks != s.AllowSymlinks ||
					(ser.ShardSize != nil) != (s.ShardSize != 0) || (ser.ShardSize != nil && strings.TrimSuffix(string(*ser.ShardSize), ".0") != fmt.Sprint(s.ShardSize)) {
					t.Errorf("serialization differs from %s", data)
				}
				if len(got.Resources) != len(res) {
					t.Fatalf("%d resources, want %d", len(got.Resources), len(res))
				}
				single := filepath.Base(root)
				for i, r := range res {
					wantName := r.Name
					if wantName == "." || strings.HasPrefix(wantName, ".:") {
						wantName = single + strings.TrimPrefix(wantName, ".")
					}
					g := got.Resources[i]
					if g.Name != wantName || hex.EncodeToString(g.Digest) != r.Digest || (g.Algorithm != r.Algorithm && r.Algorithm != fmt.Sprintf("sha256-sharded-%d", s.ShardSize)) {
						t.Errorf("resource %d: %s %x %s, want %s %s %s", i, g.Name, g.Digest, g.Algorithm, r.Name, r.Digest, r.Algorithm)
					}
				}
				checked++
			})
		}
	}
	// 14 models with something to sign, 3 of them the symlink model's, which is left
	// out where the platform makes no symlinks (wasip1).
	want := 14
	if _, ok := models["symlink_model_folder"]; !ok {
		want -= 3
	}
	if checked != want {
		t.Fatalf("%d statements compared, want %d", checked, want)
	}
}

func rootOf(m *Manifest) []byte {
	r := RootDigest(m.Resources)
	return r[:]
}

package ggufconv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stream"
)

// splitArgs are the llama-gguf-split arguments that made each reference set
// (testdata/gguf/README.md): --split-max-tensors 8 and --split-max-size 1M.
var splitArgs = map[string]SplitOptions{"Q4_K_M": {MaxTensors: 8}, "f16": {MaxSize: 1000 * 1000}}

// setAPR is the APR stream of a reference set, which is the merged file's.
func setAPR(t testing.TB, name string, parts int) []byte {
	t.Helper()
	s, err := OpenFile(partPath(splitDir, name, 0, parts), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b bytes.Buffer
	if err := Import(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checkSet requires dir to hold exactly the parts of the reference set name, byte for
// byte.
func checkSet(t testing.TB, dir, name string, parts int, res *SplitResult) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	var want []string
	for i := range parts {
		want = append(want, filepath.Base(partPath(dir, name, i, parts)))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s holds %v, want %v", dir, got, want)
	}
	if res != nil && len(res.Parts) != parts {
		t.Fatalf("result lists parts %v, want %d", res.Parts, parts)
	}
	for i := range parts {
		ref, err := os.ReadFile(partPath(splitDir, name, i, parts))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(partPath(dir, name, i, parts))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, ref) {
			t.Fatalf("part %d: %d bytes, llama-gguf-split's %d, first difference at %d", i+1, len(b), len(ref), firstDiff(b, ref))
		}
	}
}

// TestExportSplitReference: the merged file's APR, exported as a split set with the
// arguments llama-gguf-split was given, gives the reference parts byte for byte: from
// a stream with a tensor table, from one without (spooled), and from a file; and the
// import of apr's set gives the APR of the reference set.
func TestExportSplitReference(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	for _, set := range splitSets {
		t.Run(set.name, func(t *testing.T) {
			aprBytes := setAPR(t, set.name, set.parts)
			so := splitArgs[set.name]
			for _, mode := range []string{"table", "no table", "file"} {
				dir := t.TempDir()
				prefix := filepath.Join(dir, "tiny-llama."+set.name)
				var res *SplitResult
				var err error
				switch mode {
				case "file":
					in := filepath.Join(t.TempDir(), "in.apr")
					if err := os.WriteFile(in, aprBytes, 0o644); err != nil {
						t.Fatal(err)
					}
					res, err = ExportSplitFile(prefix, in, ExportOptions{}, so)
				default:
					s, oerr := stream.Open(bytes.NewReader(aprBytes))
					if oerr != nil {
						t.Fatal(oerr)
					}
					if s.Header().Table == nil {
						t.Fatal("the import's stream has no tensor table")
					}
					var ss stream.Stream = s
					spooled := false
					o := ExportOptions{TempDir: t.TempDir(), Spooling: func(string) { spooled = true }}
					if mode == "no table" {
						ss = noTable{s}
					}
					res, err = ExportSplit(prefix, ss, o, so)
					if spooled != (mode == "no table") {
						t.Errorf("%s: spooled %v", mode, spooled)
					}
				}
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				checkSet(t, dir, set.name, set.parts, res)
			}

			// apr's set imports as the reference set does.
			dir := t.TempDir()
			s, _ := stream.Open(bytes.NewReader(aprBytes))
			if _, err := ExportSplit(filepath.Join(dir, "tiny-llama."+set.name), s, ExportOptions{}, so); err != nil {
				t.Fatal(err)
			}
			is, err := OpenFile(partPath(dir, set.name, 0, set.parts), ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer is.Close()
			var back bytes.Buffer
			if err := Import(&back, is); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.Bytes(), aprBytes) {
				t.Fatalf("import of apr's set differs from the reference set's at byte %d", firstDiff(back.Bytes(), aprBytes))
			}
		})
	}
}

// TestExportSplitAtomic: a run that fails part-way (a damaged stream, a tensor
// larger than the split size) leaves no part and no temporary file, and an earlier set
// of the prefix untouched; a run that succeeds with another part count replaces the
// earlier set and removes its parts.
func TestExportSplitAtomic(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	aprBytes := setAPR(t, "f16", 4)
	dir := t.TempDir()
	prefix := filepath.Join(dir, "tiny-llama.f16")

	// Damaged in the last tensor's bytes: the header and the first parts go out, the
	// stream's CRC fails late.
	bad := slices.Clone(aprBytes)
	info, err := stream.Inspect(writeTemp(t, aprBytes))
	if err != nil {
		t.Fatal(err)
	}
	last := info.Tensors[len(info.Tensors)-1]
	bad[last.DataOffset+1] ^= 0xff
	s, err := stream.Open(bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ExportSplit(prefix, s, ExportOptions{}, SplitOptions{MaxSize: 1000 * 1000}); err == nil || !strings.Contains(err.Error(), last.Name) {
		t.Fatalf("damaged stream: err %v, want one naming tensor %q", err, last.Name)
	}
	checkEmpty(t, dir)
	if _, err := ExportSplitFile(prefix, writeTemp(t, bad), ExportOptions{}, SplitOptions{MaxSize: 1000 * 1000}); err == nil {
		t.Fatal("damaged file: no error")
	}
	checkEmpty(t, dir)

	// A set of 2 parts of 16 tensors ...
	s, _ = stream.Open(bytes.NewReader(aprBytes))
	res, err := ExportSplit(prefix, s, ExportOptions{}, SplitOptions{MaxTensors: 16})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Parts) != 2 || len(res.Removed) != 0 {
		t.Fatalf("16 tensors a part: %+v, want 2 parts", res)
	}
	old := map[string][]byte{}
	for _, p := range res.Parts {
		old[p], _ = os.ReadFile(p)
	}
	// ... survives a run that fails (a damaged stream) ...
	s, _ = stream.Open(bytes.NewReader(bad))
	if _, err := ExportSplit(prefix, s, ExportOptions{}, SplitOptions{MaxSize: 1000 * 1000}); err == nil {
		t.Fatal("damaged stream: no error")
	}
	for p, b := range old {
		if now, err := os.ReadFile(p); err != nil || !bytes.Equal(now, b) {
			t.Fatalf("%s changed by a failed run (%v)", p, err)
		}
	}
	// ... and is replaced whole by one of 4 parts.
	s, _ = stream.Open(bytes.NewReader(aprBytes))
	res, err = ExportSplit(prefix, s, ExportOptions{}, SplitOptions{MaxSize: 1000 * 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 2 {
		t.Errorf("removed %v, want the 2 parts of the earlier set", res.Removed)
	}
	checkSet(t, dir, "f16", 4, res)

	// A first tensor larger than the split size: an error naming it, nothing written.
	dir2 := t.TempDir()
	s, _ = stream.Open(bytes.NewReader(aprBytes))
	_, err = ExportSplit(filepath.Join(dir2, "x"), s, ExportOptions{}, SplitOptions{MaxSize: 1000})
	if err == nil || !strings.Contains(err.Error(), "output.weight") {
		t.Fatalf("split size below the first tensor: err %v", err)
	}
	checkEmpty(t, dir2)
}

func writeTemp(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.apr")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func checkEmpty(t testing.TB, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("a failed run left %v in %s", names, dir)
	}
}

func TestParseSplitSize(t *testing.T) {
	for s, want := range map[string]int64{"1M": 1000 * 1000, "500M": 500 * 1000 * 1000, "4G": 4 * 1000 * 1000 * 1000} {
		if got, err := ParseSplitSize(s); err != nil || got != want {
			t.Errorf("ParseSplitSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "M", "0M", "-1M", "1.5G", "1MB", "1024", "1K", "1m"} {
		if _, err := ParseSplitSize(s); err == nil {
			t.Errorf("ParseSplitSize(%q): no error", s)
		}
	}
}

// TestPlanSplitParts: SplitOptions.Parts (llama-quantize --keep-split) keeps the given
// tensor counts, writes split.no, split.count, split.tensors.count in that order into
// every part of a set and no split key into a single part; counts that do not add up
// to the model's tensors, and two ways of splitting at once, are errors.
func TestPlanSplitParts(t *testing.T) {
	gh := &gguf.Header{Version: 3, KVs: []gguf.KV{{Key: "general.architecture", Value: gguf.String("llama")},
		{Key: KeySplitCount, Value: gguf.Uint16(2)}}}
	for i := range 5 {
		gh.Tensors = append(gh.Tensors, gguf.TensorInfo{Name: fmt.Sprintf("t%d", i), Dims: []int64{32}, Type: gguf.TensorType(0)})
	}
	if err := gh.Layout(); err != nil {
		t.Fatal(err)
	}
	parts, err := planSplit(gh, SplitOptions{Parts: []int{2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	keys := func(h *gguf.Header) string {
		var k []string
		for _, kv := range h.KVs {
			k = append(k, kv.Key)
		}
		return strings.Join(k, " ")
	}
	if len(parts) != 2 || len(parts[0].Tensors) != 2 || parts[1].Tensors[0].Name != "t2" ||
		keys(parts[0]) != "general.architecture split.no split.count split.tensors.count" ||
		keys(parts[1]) != "split.no split.count split.tensors.count" {
		t.Errorf("parts: %d, keys %q and %q", len(parts), keys(parts[0]), keys(parts[len(parts)-1]))
	}
	if one, err := planSplit(gh, SplitOptions{Parts: []int{5}}); err != nil || len(one) != 1 || keys(one[0]) != "general.architecture" {
		t.Errorf("one part: %v", err)
	}
	for _, so := range []SplitOptions{{Parts: []int{2, 2}}, {Parts: []int{2, 4}}, {Parts: []int{0, 5}}, {Parts: []int{}},
		{Parts: []int{5}, MaxTensors: 2}} {
		if _, err := planSplit(gh, so); err == nil {
			t.Errorf("%+v: no error", so)
		}
	}
}

package ggufconv

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stream"
)

// The split sets llama.cpp's llama-gguf-split made of two reference GGUFs
// (testdata/gguf/README.md), and the checksum list that holds the sums of those
// merged references and of every part.
const (
	splitDir = testdata + "/split"
	hfSums   = "../../testdata/hf/tiny-llama.sha256"
)

var splitSets = []struct {
	name  string // the merged reference: ref/tiny-llama.NAME.gguf
	parts int
}{{"Q4_K_M", 3}, {"f16", 4}}

func partPath(dir, name string, i, n int) string {
	return filepath.Join(dir, "tiny-llama."+name+partSuffix(i, n))
}

// refSums reads the fixture's checksum list: path (ref/...) to hex SHA-256.
func refSums(t testing.TB) map[string]string {
	t.Helper()
	f, err := os.Open(hfSums)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, path, ok := strings.Cut(sc.Text(), "  "); ok {
			sums[path] = sum
		}
	}
	return sums
}

func sha(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// provStream is a stream with its provenance replaced.
type provStream struct {
	stream.Stream
	prov map[string]any
}

func (p provStream) Header() container.Header {
	h := p.Stream.Header()
	h.Metadata.Provenance = p.prov
	return h
}

// TestSplitSetReference imports each of llama.cpp's reference split sets from its
// first part and wants the merged reference back: the export's SHA-256 is the merged
// file's, and the APR is byte for byte the import of the merged file (with the set's
// provenance, the one thing that says where the tensors came from). The provenance
// lists every part with its size and SHA-256 (the fixture's sums), and the digest
// patched in beside the conversion gives the same bytes as the digest-first import.
func TestSplitSetReference(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	sums := refSums(t)
	for _, set := range splitSets {
		t.Run(set.name, func(t *testing.T) {
			first := partPath(splitDir, set.name, 0, set.parts)
			s, err := OpenFile(first, ImportOptions{Digest: true})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := Import(&got, s); err != nil {
				t.Fatal(err)
			}
			prov := s.Header().Metadata.Provenance
			s.Close()

			files, _ := prov[ProvFiles].([]any)
			if len(files) != set.parts || prov[ProvSize] != nil || prov[ProvSHA256] != nil {
				t.Fatalf("provenance %v: want %d source_files and no single-file size or digest", prov, set.parts)
			}
			for i, e := range files {
				m := e.(map[string]any)
				p := partPath(splitDir, set.name, i, set.parts)
				st, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				want := sums["ref/split/"+filepath.Base(p)]
				if m["name"] != filepath.Base(p) || m["size"] != st.Size() || m["sha256"] != want || want == "" {
					t.Errorf("source_files[%d] = %v, want %s, %d bytes, sha256 %s", i, m, filepath.Base(p), st.Size(), want)
				}
			}

			// Export: the merged reference, by its sum.
			as, err := stream.Open(bytes.NewReader(got.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			var merged bytes.Buffer
			if err := Export(&merged, as, ExportOptions{TempDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			if want := sums["ref/tiny-llama."+set.name+".gguf"]; sha(merged.Bytes()) != want || want == "" {
				t.Fatalf("export of the set: sha256 %s, want the merged reference's %s", sha(merged.Bytes()), want)
			}

			// The import of the merged file, given the set's provenance: the same bytes.
			ms, err := NewStream(bytes.NewReader(merged.Bytes()), ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			p := maps.Clone(ms.Header().Metadata.Provenance)
			p[ProvFiles] = prov[ProvFiles]
			if err := Import(&want, provStream{ms, p}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("the set's APR (%d bytes) differs from the merged file's (%d) at %d", got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()))
			}

			// Into a regular file: digests hashed beside the conversion, patched in.
			out, err := os.Create(filepath.Join(t.TempDir(), "set.apr"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			if err := ImportFile(out, first, ImportOptions{Digest: true}); err != nil {
				t.Fatal(err)
			}
			patched, err := os.ReadFile(out.Name())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(patched, got.Bytes()) {
				t.Fatalf("ImportFile's patched digests differ from the digest-first import at %d", firstDiff(patched, got.Bytes()))
			}

			// Without --digest: names and sizes only.
			s, err = OpenFile(first, ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, e := range s.Header().Metadata.Provenance[ProvFiles].([]any) {
				if _, ok := e.(map[string]any)["sha256"]; ok {
					t.Fatalf("source_files without Digest: %v has a sha256", e)
				}
			}
		})
	}
}

// copySet copies the Q4_K_M set (3 parts) into a new directory and returns it.
func copySet(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for i := range 3 {
		b, err := os.ReadFile(partPath(splitDir, "Q4_K_M", i, 3))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(partPath(dir, "Q4_K_M", i, 3), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// patchKV rewrites the bytes right after key's name in the GGUF file b: 4 bytes of
// type then the value (gguf-split's split keys are small scalars).
func patchKV(t testing.TB, b []byte, key string, typ uint32, val []byte) {
	t.Helper()
	name := binary.LittleEndian.AppendUint64(nil, uint64(len(key)))
	name = append(name, key...)
	i := bytes.Index(b, name)
	if i < 0 {
		t.Fatalf("key %s not found", key)
	}
	i += len(name)
	binary.LittleEndian.PutUint32(b[i:], typ)
	copy(b[i+4:], val)
}

func u16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func i32(v int32) []byte  { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

// editPart applies fn to the bytes of part i (0-based) of the Q4_K_M set in dir.
func editPart(t testing.TB, dir string, i int, fn func([]byte) []byte) {
	t.Helper()
	p := partPath(dir, "Q4_K_M", i, 3)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, fn(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSplitSetBad: each broken set is refused before any output, with an error that
// names the part and what was expected.
func TestSplitSetBad(t *testing.T) {
	part := func(dir string, i int) string { return partPath(dir, "Q4_K_M", i, 3) }
	move := func(t *testing.T, from, to string) {
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	copyFile := func(t *testing.T, from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) (open string) // "" opens the first part
		want  func(dir string) []string
	}{
		{"missing part", func(t *testing.T, dir string) string {
			os.Remove(part(dir, 1))
			return ""
		}, func(dir string) []string { return []string{part(dir, 1), "a part of the split set is missing"} }},
		{"extra part", func(t *testing.T, dir string) string {
			copyFile(t, part(dir, 2), filepath.Join(dir, "tiny-llama.Q4_K_M-00004-of-00003.gguf"))
			return ""
		}, func(dir string) []string {
			return []string{filepath.Join(dir, "tiny-llama.Q4_K_M-00004-of-00003.gguf"), "not a part of the set", "has 3 parts"}
		}},
		{"another split of the same name", func(t *testing.T, dir string) string {
			copyFile(t, part(dir, 0), filepath.Join(dir, "tiny-llama.Q4_K_M-00001-of-00002.gguf"))
			return ""
		}, func(dir string) []string {
			return []string{filepath.Join(dir, "tiny-llama.Q4_K_M-00001-of-00002.gguf"), "not a part of the set"}
		}},
		{"renamed out of order", func(t *testing.T, dir string) string {
			move(t, part(dir, 1), filepath.Join(dir, "x"))
			move(t, part(dir, 2), part(dir, 1))
			move(t, filepath.Join(dir, "x"), part(dir, 2))
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 1) + ": holds part 3 of the set (split.no 2), but its name makes it part 2 of 3", "out of order"}
		}},
		{"duplicated part", func(t *testing.T, dir string) string {
			copyFile(t, part(dir, 1), part(dir, 2))
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 2) + ": holds part 2 of the set (split.no 1), but its name makes it part 3", "duplicate: " + part(dir, 1)}
		}},
		{"a part of a set with another count", func(t *testing.T, dir string) string {
			copyFile(t, partPath(splitDir, "f16", 1, 4), part(dir, 1))
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 1) + ": split.count is 4, but the first part " + part(dir, 0) + " says 3", "another set"}
		}},
		{"a bad part refused before the next is opened", func(t *testing.T, dir string) string {
			copyFile(t, partPath(splitDir, "f16", 1, 4), part(dir, 1))
			os.Remove(part(dir, 2))
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 1) + ": split.count is 4, but the first part " + part(dir, 0) + " says 3"}
		}},
		{"a part of a set with another tensor count", func(t *testing.T, dir string) string {
			editPart(t, dir, 2, func(b []byte) []byte { patchKV(t, b, KeySplitTensors, 5, i32(22)); return b })
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 2) + ": split.tensors.count is 22, but the first part " + part(dir, 0) + " says 21"}
		}},
		{"a first part in a later place", func(t *testing.T, dir string) string {
			copyFile(t, part(dir, 0), part(dir, 1))
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 1) + ": holds part 1 of the set (split.no 0)", "the first part of a set"}
		}},
		{"a first part of another set, renumbered", func(t *testing.T, dir string) string {
			copyFile(t, part(dir, 0), part(dir, 1))
			editPart(t, dir, 1, func(b []byte) []byte { patchKV(t, b, KeySplitNo, 2, u16(1)); return b })
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 1) + ": holds the key general.architecture", "only the first part"}
		}},
		{"a foreign first part", func(t *testing.T, dir string) string {
			// f16's first part under Q4_K_M's first name: its split.count (4) is not
			// the name's.
			copyFile(t, partPath(splitDir, "f16", 0, 4), part(dir, 0))
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 0) + ": the first part of a split GGUF set of 4 parts", `does not end in "-00001-of-00004.gguf"`}
		}},
		{"tensor counts that do not add up", func(t *testing.T, dir string) string {
			for i := range 3 {
				editPart(t, dir, i, func(b []byte) []byte { patchKV(t, b, KeySplitTensors, 5, i32(20)); return b })
			}
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 0) + ": the 3 parts hold 21 tensors, but split.tensors.count says 20"}
		}},
		{"a tensor in two parts", func(t *testing.T, dir string) string {
			editPart(t, dir, 2, func(b []byte) []byte {
				i := bytes.Index(b, []byte("blk.1.attn_v.weight"))
				copy(b[i:], "blk.1.attn_q.weight") // part 2 has this one
				return b
			})
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 2) + `: tensor "blk.1.attn_q.weight" is in ` + part(dir, 1) + " too"}
		}},
		{"a later part without split.no", func(t *testing.T, dir string) string {
			editPart(t, dir, 1, func(b []byte) []byte { copy(b[bytes.Index(b, []byte("split.no")):], "split.nx"); return b })
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 1) + ": no split.no (u16): not a part of a split GGUF set (part 2 of"}
		}},
		{"a split key of another type", func(t *testing.T, dir string) string {
			editPart(t, dir, 0, func(b []byte) []byte { patchKV(t, b, KeySplitCount, 3, u16(3)); return b })
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 0) + ": key split.count: must be a u16 (as llama.cpp's gguf-split writes it), got i16"}
		}},
		{"truncated part", func(t *testing.T, dir string) string {
			editPart(t, dir, 2, func(b []byte) []byte { return b[:len(b)-100] })
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 2) + ": truncated: 283196 bytes, but its header describes 283296 (part 3 of 3)"}
		}},
		{"bytes after a part", func(t *testing.T, dir string) string {
			editPart(t, dir, 1, func(b []byte) []byte { return append(b, 0) })
			return ""
		}, func(dir string) []string {
			return []string{part(dir, 1) + ": 1 unexpected bytes after the data section"}
		}},
		{"first part renamed", func(t *testing.T, dir string) string {
			move(t, part(dir, 0), filepath.Join(dir, "model.gguf"))
			return filepath.Join(dir, "model.gguf")
		}, func(dir string) []string {
			return []string{filepath.Join(dir, "model.gguf") + ": the first part of a split GGUF set of 3 parts (split.count), but its name does not end in \"-00001-of-00003.gguf\""}
		}},
		{"a later part given", func(t *testing.T, dir string) string {
			return part(dir, 1)
		}, func(dir string) []string {
			return []string{part(dir, 1) + ": part 2 of a split GGUF set of 3 parts (split.no 1): a set is read from its first part, " + part(dir, 0)}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copySet(t)
			open := c.setup(t, dir)
			if open == "" {
				open = part(dir, 0)
			}
			check := func(how string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: accepted", how)
				}
				for _, w := range c.want(dir) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q\nlacks %q", how, err, w)
					}
				}
			}
			s, err := OpenFile(open, ImportOptions{})
			if err == nil {
				s.Close()
			}
			check("OpenFile", err)
			out, err := os.Create(filepath.Join(t.TempDir(), "out.apr"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			check("ImportFile with a digest", ImportFile(out, open, ImportOptions{Digest: true}))
			if st, _ := out.Stat(); st.Size() != 0 {
				t.Errorf("ImportFile wrote %d bytes before refusing the set", st.Size())
			}
		})
	}
}

// TestSplitSetHeaderBudget: the headers of a set's parts together get the cap of one
// file's header (gguf.Limits.MaxHeaderBytes). With the cap at the Q4_K_M set's total
// the set imports, and its later parts are mapped only when the stream reaches them;
// a byte less refuses the last part while reading its header, and a cap the earlier
// parts use up refuses the next part before reading it: each error names the part,
// the bytes left and the budget.
func TestSplitSetHeaderBudget(t *testing.T) {
	dir := copySet(t)
	var ends []int64 // each part's header bytes
	for i := range 3 {
		f, err := gguf.Open(partPath(dir, "Q4_K_M", i, 3))
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, f.Header.DataOffset)
		f.Close()
	}
	total := ends[0] + ends[1] + ends[2]
	first := partPath(dir, "Q4_K_M", 0, 3)
	s, err := OpenFile(first, ImportOptions{Limits: gguf.Limits{MaxHeaderBytes: total}})
	if err != nil {
		t.Fatalf("a budget of the parts' %d header bytes: %v", total, err)
	}
	set := s.(*setStream)
	if set.parts[1].mapped != nil || set.parts[2].dr != nil {
		t.Error("later parts were attached before the stream reached them")
	}
	n := 0
	for {
		_, r, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r)
		n++
	}
	s.Close()
	if n != 21 {
		t.Errorf("read %d tensors, want the set's 21", n)
	}
	for _, c := range []struct {
		budget int64
		part   int
		want   string
	}{
		{total - 1, 2, fmt.Sprintf("its header is longer than the %d bytes left of the split set's header budget", ends[2]-1)},
		{ends[0] + ends[1] - 1, 1, fmt.Sprintf("its header is longer than the %d bytes left", ends[1]-1)},
		{ends[0], 1, "no bytes are left of the split set's header budget"},
	} {
		taken := fmt.Sprintf("parts 1 to 2 take %d", ends[0]+ends[1])
		if c.part == 1 {
			taken = fmt.Sprintf("part 1 takes %d", ends[0])
		}
		_, err := OpenFile(first, ImportOptions{Limits: gguf.Limits{MaxHeaderBytes: c.budget}})
		if err == nil {
			t.Errorf("budget %d: accepted", c.budget)
			continue
		}
		for _, w := range []string{partPath(dir, "Q4_K_M", c.part, 3) + fmt.Sprintf(": part %d of 3: ", c.part+1), c.want,
			fmt.Sprintf("together may take %d bytes", c.budget), "gguf.Limits.MaxHeaderBytes", taken} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("budget %d: error %q\nlacks %q", c.budget, err, w)
			}
		}
	}
}

// TestSplitSetPiped: a part on stdin cannot be found by name; the error says so and
// what to give instead. A whole file with split.count 0 or 1 (gguf-split --merge
// writes 0) is no set and imports as it is, its split keys kept.
func TestSplitSetPiped(t *testing.T) {
	for i, want := range []string{"stdin: holds part 1 of a split GGUF set of 3 parts", "stdin: holds part 2 of a split GGUF set of 3 parts"} {
		b, err := os.ReadFile(partPath(splitDir, "Q4_K_M", i, 3))
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewStream(bytes.NewReader(b), ImportOptions{Name: "stdin"})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "give the first part's path (NAME-00001-of-00003.gguf)") {
			t.Errorf("part %d on stdin: error %v, want %q and the first part's name pattern", i+1, err, want)
		}
	}
	for _, count := range []uint16{0, 1} {
		dir := copySet(t)
		editPart(t, dir, 0, func(b []byte) []byte { patchKV(t, b, KeySplitCount, 2, u16(count)); return b })
		s, err := OpenFile(partPath(dir, "Q4_K_M", 0, 3), ImportOptions{})
		if err != nil {
			t.Fatalf("split.count %d: %v", count, err)
		}
		var n int
		for {
			_, r, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, r)
			n++
		}
		kv := s.Header().Metadata.Extra[KeyGGUF].(map[string]any)["kv"].(map[string]any)
		if n != 8 || kv[KeySplitCount] == nil {
			t.Errorf("split.count %d: %d tensors and split.count %v, want the file's own 8 and its key", count, n, kv[KeySplitCount])
		}
		s.Close()
	}
}

// FuzzSplitSet imports the Q4_K_M set with its second part's split keys, its length
// and the first part's name chosen by the fuzzer: the set either imports (and then
// gives a readable APR) or is refused with an error; nothing panics.
func FuzzSplitSet(f *testing.F) {
	f.Add(uint16(1), uint16(3), int32(21), uint32(0), "tiny-llama.Q4_K_M-00001-of-00003.gguf")
	f.Add(uint16(2), uint16(3), int32(21), uint32(10), "tiny-llama.Q4_K_M-00001-of-00003.gguf")
	f.Add(uint16(0), uint16(2), int32(-1), uint32(400000), "-00001-of-00002.gguf")
	f.Add(uint16(1), uint16(65535), int32(1<<30), uint32(1), "x-00001-of-65535.gguf")
	src := copySet(f)
	f.Fuzz(func(t *testing.T, no, count uint16, tensors int32, cut uint32, firstName string) {
		if strings.ContainsAny(firstName, "/\x00") || firstName == "" || firstName == "." || firstName == ".." {
			return
		}
		dir := t.TempDir()
		for i := range 3 {
			b, err := os.ReadFile(partPath(src, "Q4_K_M", i, 3))
			if err != nil {
				t.Fatal(err)
			}
			name := partPath(dir, "Q4_K_M", i, 3)
			if i == 0 {
				name = filepath.Join(dir, firstName)
			}
			if i == 1 {
				patchKV(t, b, KeySplitNo, 2, u16(no))
				patchKV(t, b, KeySplitCount, 2, u16(count))
				patchKV(t, b, KeySplitTensors, 5, i32(tensors))
				b = b[:len(b)-int(min(uint32(len(b)), cut))]
			}
			if err := os.WriteFile(name, b, 0o644); err != nil {
				if i == 0 {
					return // a name the file system refuses
				}
				t.Fatal(err)
			}
		}
		s, err := OpenFile(filepath.Join(dir, firstName), ImportOptions{})
		if err != nil {
			return
		}
		defer s.Close()
		var out bytes.Buffer
		if err := Import(&out, s); err != nil {
			return
		}
		if _, err := stream.Open(&out); err != nil {
			t.Fatalf("our own APR output does not open: %v", err)
		}
	})
}

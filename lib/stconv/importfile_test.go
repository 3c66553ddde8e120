package stconv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/safetensors"
)

// checkpointDir writes a sharded checkpoint with config and tokenizer files.
func checkpointDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var specs []safetensors.TensorSpec
	for i := range 5 {
		specs = append(specs, safetensors.TensorSpec{Name: "layer." + string(rune('a'+i)) + ".weight", DType: dtype.BF16, Shape: []int64{8, 8}})
	}
	plan, err := safetensors.PlanShards(specs, 300, safetensors.Metadata{{Key: "format", Value: "pt"}})
	if err != nil {
		t.Fatal(err)
	}
	fill := func(ti safetensors.TensorInfo) (io.Reader, error) {
		return bytes.NewReader(bytes.Repeat([]byte(ti.Name[6:7]), int(ti.Size()))), nil
	}
	if err := plan.WriteDir(dir, fill); err != nil {
		t.Fatal(err)
	}
	for n, c := range map[string]string{"config.json": `{"model_type": "llama"}`, "tokenizer.json": `{"version":"1.0"}`} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// importInto runs imp on a file holding lead, positioned after it, and returns the
// bytes after lead.
func importInto(t *testing.T, lead []byte, imp func(*os.File) error) ([]byte, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.apr")
	if err := os.WriteFile(path, lead, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(int64(len(lead)), 0); err != nil {
		t.Fatal(err)
	}
	err = imp(f)
	if cerr := f.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !bytes.HasPrefix(b, lead) {
		t.Fatal("the bytes before the import changed")
	}
	return b[len(lead):], err
}

// TestImportFile imports every valid fixture and a checkpoint directory with
// ImportFile and Digest (and the single files with ImportOpenFile) into a file, where the digests
// are computed beside the conversion and patched in, plain and compressed, and wants
// the bytes of the digest-first import of Open, a file that verifies and the right
// digests. Into a buffer it takes Open's path and gives the same bytes.
func TestImportFile(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dig := ImportOptions{Digest: true}
	paths := append(validFiles(t), checkpointDir(t))
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, opts := range [][]container.Option{nil, {container.WithCompression(container.CompressZstd)}} {
				want := toAPR(t, mustOpenOpts(t, path, dig), opts...)
				got, err := importInto(t, []byte("leading bytes\n"), func(f *os.File) error {
					return ImportFile(f, path, dig, opts...)
				})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("ImportFile into a file: %d bytes, want %d, first difference at %d", len(got), len(want), firstDiff(got, want))
				}
				checkPatched(t, got, path, st.IsDir())

				var buf bytes.Buffer
				if err := ImportFile(&buf, path, dig, opts...); err != nil || !bytes.Equal(buf.Bytes(), want) {
					t.Fatalf("ImportFile into a buffer: %v, first difference at %d", err, firstDiff(buf.Bytes(), want))
				}
				if st.IsDir() {
					continue
				}

				src, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				s, err := OpenFile(src, "stdin", dig)
				if err != nil {
					t.Fatal(err)
				}
				want = toAPR(t, s, opts...)
				got, err = importInto(t, nil, func(f *os.File) error {
					src, err := os.Open(path)
					if err != nil {
						t.Fatal(err)
					}
					return ImportOpenFile(f, src, "stdin", dig, opts...)
				})
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("ImportOpenFile into a file: %v, first difference at %d", err, firstDiff(got, want))
				}
			}
		})
	}
}

// checkPatched wants a that verifies, with the SHA-256 of every source file.
func checkPatched(t *testing.T, a []byte, path string, dir bool) {
	t.Helper()
	cf, err := container.Open(writeTemp(t, "got.apr", a))
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	if err := cf.Verify(); err != nil {
		t.Errorf("patched file does not verify: %v", err)
	}
	files, _ := cf.Header().Metadata.Provenance[ProvFiles].([]any)
	if len(files) == 0 {
		t.Fatal("no source_files in the provenance")
	}
	for _, e := range files {
		m := e.(map[string]any)
		p := path
		if dir {
			p = filepath.Join(path, m["name"].(string))
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); m["sha256"] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: digest %v, want %x", p, m["sha256"], sum)
		}
	}
}

// TestImportFileErrors: a bad source fails before anything is written, an import
// without Digest gives Open's bytes without digests, and a file opened for appending
// takes the digest-first path.
func TestImportFileErrors(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	got, err := importInto(t, nil, func(f *os.File) error {
		return ImportFile(f, "../../testdata/safetensors/cases/bad_dtype.safetensors", ImportOptions{})
	})
	if err == nil || len(got) != 0 {
		t.Errorf("bad source: %v, %d bytes written", err, len(got))
	}
	path := validFiles(t)[0]
	want := toAPR(t, mustOpenOpts(t, path, ImportOptions{}))
	got, err = importInto(t, nil, func(f *os.File) error {
		return ImportFile(f, path, ImportOptions{})
	})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("without Digest: %v, first difference at %d", err, firstDiff(got, want))
	}
	if runtime.GOOS == "js" {
		return
	}
	// A file opened for appending is not patched: the digests come first.
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "a.apr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ImportFile(f, path, ImportOptions{Digest: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil || !bytes.Equal(b, toAPR(t, mustOpenOpts(t, path, ImportOptions{Digest: true}))) {
		t.Fatalf("O_APPEND output: %v", err)
	}
}

func mustOpenOpts(t *testing.T, path string, o ImportOptions) *fileStream {
	t.Helper()
	s, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*fileStream)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

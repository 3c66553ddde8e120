package pipelines

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHFCacheLayout: a checkpoint as `huggingface-cli download` keeps it,
// models--ORG--NAME/snapshots/REV/ whose every file is a relative link to
// ../../blobs/SHA256, converts with apr-st import | apr-gguf export to the very GGUF
// of its plain copy (in a directory of the same name: the GGUF's general.name comes
// from it). config.json as a link was skipped: the export was a generic apr_custom
// GGUF that llama.cpp cannot run.
func TestHFCacheLayout(t *testing.T) {
	needPrograms(t, "apr-st", "apr-gguf")
	src, err := filepath.Abs("../testdata/hf/tiny-llama")
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := sh(t, t.TempDir(), `
rev=0123456789abcdef0123456789abcdef01234567
snap=models--apr-go--tiny-llama/snapshots/$rev
mkdir -p models--apr-go--tiny-llama/blobs "$snap" plain/$rev
for f in '`+src+`'/*; do
	sum=$(sha256sum "$f" | cut -d' ' -f1)
	cp "$f" models--apr-go--tiny-llama/blobs/$sum
	ln -s ../../blobs/$sum "$snap/$(basename "$f")"
	cp "$f" plain/$rev/
done
test -L "$snap/config.json"
apr-st import "$snap" | apr-gguf export -o cache.gguf
apr-st import plain/$rev | apr-gguf export -o plain.gguf
cmp cache.gguf plain.gguf && echo same
`)
	if code != 0 || !strings.Contains(out, "same") {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
}

// TestFIFOInCheckpoint: a FIFO where a checkpoint's file or a split set's part is
// expected ends the program at once with an error naming it, exit 1 and no output
// left; the open waited for a writer forever. timeout(1) turns a hang into exit 124.
func TestFIFOInCheckpoint(t *testing.T) {
	needPrograms(t, "apr-st", "apr-gguf")
	for _, c := range []string{"mkfifo", "timeout"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skip(err)
		}
	}
	hf, _ := filepath.Abs("../testdata/hf")
	split, _ := filepath.Abs("../testdata/gguf/split")
	for _, c := range []struct {
		ckpt, fifo, run string
	}{
		{hf + "/tiny-llama", "model.safetensors", "apr-st import ck -o out/m.apr"},
		{hf + "/tiny-llama", "config.json", "apr-st import ck -o out/m.apr"},
		{hf + "/tiny-llama", "tokenizer.model", "apr-st import ck -o out/m.apr"},
		{hf + "/small-mistral", "model.safetensors.index.json", "apr-st import ck -o out/m.apr"},
		{hf + "/small-mistral", "model-00002-of-00003.safetensors", "apr-st import ck -o out/m.apr"},
		{split, "tiny-llama.Q4_K_M-00002-of-00003.gguf", "apr-gguf import ck/tiny-llama.Q4_K_M-00001-of-00003.gguf -o out/m.apr"},
	} {
		t.Run(c.fifo, func(t *testing.T) {
			_, stderr, code := sh(t, t.TempDir(), `
mkdir ck out
cp '`+c.ckpt+`'/* ck/
rm ck/`+c.fifo+`
mkfifo ck/`+c.fifo+`
code=0
timeout 20 `+c.run+` || code=$?
echo "exit $code" >&2
test -z "$(ls -A out)" || { echo "left in out/: $(ls -A out)" >&2; exit 3; }
exit $code
`)
			if want := "ck/" + c.fifo + ": not a regular file (a FIFO)"; code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, %s; want exit 1 and %q", code, stderr, want)
			}
		})
	}
}

//go:build unix

package distill

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/npy"
)

// TestDataDigest: Data.SHA256 is the digest of the file's bytes, for a CSV file, a
// gzip-compressed one, a .npy file, and a CSV file that is a FIFO (--data <(...)),
// which apr-distill read a second time for the digest and so recorded the digest of
// no bytes.
func TestDataDigest(t *testing.T) {
	dir := t.TempDir()
	csv := []byte("label,a,b\n1,0.5,2\n0,1.5,3\n")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(csv)
	zw.Close()
	files := map[string][]byte{"d.csv": csv, "d.csv.gz": gz.Bytes()}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := npy.WriteFile(filepath.Join(dir, "x.npy"), dtype.F64, []int64{1, 2}, f64bytes([]float64{1, 2})); err != nil {
		t.Fatal(err)
	}
	files["x.npy"], _ = os.ReadFile(filepath.Join(dir, "x.npy"))
	fifo := filepath.Join(dir, "fifo.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write(csv)
		w.Close()
	}()
	files["fifo.csv"] = csv
	for name, b := range files {
		opt := LoadOptions{LabelColumn: "label"}
		if name == "x.npy" {
			opt = LoadOptions{}
		}
		d, err := LoadData(filepath.Join(dir, name), opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sum := sha256.Sum256(b)
		if want := hex.EncodeToString(sum[:]); d.SHA256 != want {
			t.Errorf("%s: SHA-256 %s, want %s", name, d.SHA256, want)
		}
	}
}

package container

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

// TestManySmallTensorsAllocateLittle: uncompressed tensors are copied through one
// buffer for the whole file. A buffer a tensor made 10,000 tiny tensors cost 2.5 GB
// of garbage (65,536 of them, from a SafeTensors header of empty tensors, crashed a
// program under ulimit -v).
func TestManySmallTensorsAllocateLittle(t *testing.T) {
	const n = 10000
	w, err := NewWriter(io.Discard, Header{Type: modeltype.Custom})
	if err != nil {
		t.Fatal(err)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for i := range n {
		// A reader that is not a *bytes.Reader or *Tensor, as a SafeTensors stream's is.
		if err := w.WriteTensor(TensorInfo{Name: fmt.Sprint("t", i), DType: dtype.U8, Shape: []int64{4}}, io.LimitReader(strings.NewReader("abcd"), 4)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&ms1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := ms1.TotalAlloc - ms0.TotalAlloc; got > 64<<20 {
		t.Errorf("writing %d 4-byte tensors allocated %d bytes", n, got)
	}
}

// TestMetadataEncodeStopsAtCap: metadata over MaxMetadata is refused as soon as its
// encoding passes the cap, without a buffer larger than the cap.
func TestMetadataEncodeStopsAtCap(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	m := Metadata{Custom: map[string]any{}}
	for i := range 100 { // 100 MiB of values
		m.Custom[fmt.Sprint("k", i)] = big
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	_, err := m.Encode()
	runtime.ReadMemStats(&ms1)
	if err == nil || !strings.Contains(err.Error(), "cap") {
		t.Fatalf("Encode of 100 MiB: %v", err)
	}
	if got := ms1.TotalAlloc - ms0.TotalAlloc; got > 2*MaxMetadata {
		t.Errorf("encoding allocated %d bytes, want at most twice the cap (%d)", got, 2*MaxMetadata)
	}
	if _, err := NewWriter(io.Discard, Header{Type: modeltype.Custom, Metadata: m}); err == nil {
		t.Error("NewWriter accepted 100 MiB of metadata")
	}
	small := Metadata{Custom: map[string]any{"k": big}}
	b, err := small.Encode()
	if err != nil || !bytes.Contains(b, []byte(big)) {
		t.Errorf("1 MiB of metadata: %v", err)
	}
}

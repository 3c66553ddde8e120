package container

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

// shortInPlace claims Len bytes but writes fewer: WriteTensor must notice.
type shortInPlace struct{ data []byte }

func (s shortInPlace) Len() int                 { return len(s.data) + 1 }
func (s shortInPlace) Read([]byte) (int, error) { return 0, io.EOF }
func (s shortInPlace) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.data)
	return int64(n), err
}

// A tensor handed over in place (a bytes.Reader) is written as the same bytes as one
// read through the buffer, larger than a piece included; one that falls short is an error.
func TestInPlaceData(t *testing.T) {
	data := make([]byte, 3*inPlacePiece+12)
	for i := range data {
		data[i] = byte(i * 31)
	}
	info := TensorInfo{Name: "w", DType: dtype.U8, Shape: []int64{int64(len(data))}}
	write := func(r io.Reader) ([]byte, error) {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, Header{Type: modeltype.Custom})
		if err != nil {
			return nil, err
		}
		if err := w.WriteTensor(info, r); err != nil {
			return nil, err
		}
		return buf.Bytes(), w.Close()
	}
	inPlace, err := write(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	copied, err := write(iotest.OneByteReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(inPlace, copied) {
		t.Fatal("the in-place write differs from the buffered one")
	}
	if _, err := write(shortInPlace{data[:len(data)-1]}); err == nil || !strings.Contains(err.Error(), "data ended after") {
		t.Fatalf("a short in-place tensor gave %v", err)
	}
}

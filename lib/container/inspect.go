package container

import (
	"io"

	"github.com/apr-go/apr/lib/internal/iocount"
)

// Info is everything Inspect reports: header, metadata, index and blocks, without
// tensor data.
type Info struct {
	FileHeader
	Size    int64
	Tensors []Entry
	Blocks  []Block
}

// Inspect reads header, metadata, footer and index of the named file in a fixed number
// of reads, without touching tensor data.
func Inspect(path string) (*Info, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Info(), nil
}

// Info returns the file's Info.
func (f *File) Info() *Info {
	return &Info{FileHeader: f.hdr, Size: f.size, Tensors: f.entries, Blocks: f.blocks}
}

// InspectStream reads a whole stream that cannot seek (a pipe), checking every frame
// and record CRC but decompressing nothing, and reports the same Info.
func InspectStream(r io.Reader) (*Info, error) {
	cr := &iocount.Reader{R: r}
	rd, err := NewReader(cr)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if err := rd.Each(func(*Tensor) error { return nil }); err != nil {
		return nil, err
	}
	return &Info{FileHeader: rd.Header(), Size: cr.N, Tensors: rd.Entries(), Blocks: rd.Blocks()}, nil
}

package safetensors

import (
	"fmt"
	"io"
	"os"

	"github.com/apr-go/apr/lib/internal/mmap"
	"github.com/apr-go/apr/lib/internal/regfile"
)

// File is an open SafeTensors file whose header has been read and fully checked
// (including that the data ends exactly at the end of the file). Where the OS
// supports it the file is memory-mapped and Data returns slices of the mapping;
// elsewhere (js/wasm, wasip1, windows, ...) data is read with ReadAt.
type File struct {
	h    *Header
	path string
	f    *os.File
	size int64
	mm   []byte // whole-file mapping, nil when not mapped
	idx  map[string]int
}

// Open opens and checks the SafeTensors file at path, following symbolic links; a
// path that is not a regular file in the end (a FIFO, a device) is refused without
// blocking (see regfile.Open).
func Open(path string) (*File, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	sf, err := newFile(f, path)
	if err != nil {
		f.Close()
		return nil, withFile(err, path)
	}
	return sf, nil
}

// NewFile checks the SafeTensors file already open as f (for example a redirected
// stdin) and takes ownership of it: Close closes f. name is used in messages.
func NewFile(f *os.File, name string) (*File, error) {
	sf, err := newFile(f, name)
	if err != nil {
		return nil, withFile(err, name)
	}
	return sf, nil
}

func newFile(f *os.File, path string) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: safetensors: not a regular file (use NewReader for streams)", path)
	}
	size := st.Size()
	h, err := decodeAt(f, size)
	if err != nil {
		return nil, err
	}
	sf := &File{h: h, path: path, f: f, size: size}
	sf.idx = make(map[string]int, len(h.Tensors))
	for i, t := range h.Tensors {
		sf.idx[t.Name] = i
	}
	sf.mm, _ = mmap.Map(f, size) // nil when unavailable: ReadAt is used instead
	return sf, nil
}

// Lookup returns the entry of tensor name.
func (f *File) Lookup(name string) (TensorInfo, bool) {
	t, err := f.lookup(name)
	return t, err == nil
}

// Header returns the file's header.
func (f *File) Header() *Header { return f.h }

// Path returns the path the file was opened with.
func (f *File) Path() string { return f.path }

// OSFile is the open file under f, for splicing its bytes (valid until Close).
func (f *File) OSFile() *os.File { return f.f }

// Mapped reports whether the file is memory-mapped.
func (f *File) Mapped() bool { return f.mm != nil }

// Close unmaps and closes the file. Slices returned by Data are invalid afterwards.
func (f *File) Close() error {
	var err error
	if f.mm != nil {
		err = mmap.Unmap(f.mm)
		f.mm = nil
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *File) lookup(name string) (TensorInfo, error) {
	i, ok := f.idx[name]
	if !ok {
		return TensorInfo{}, &Error{Kind: TensorNotFound, File: f.path, Tensor: name, Offset: -1, Msg: "no tensor of that name in the header"}
	}
	return f.h.Tensors[i], nil
}

// Data returns the bytes of tensor name. On a mapped file it is a read-only view of
// the mapping (no copy; do not write to it; valid until Close); otherwise a new slice
// read from the file.
func (f *File) Data(name string) ([]byte, error) {
	t, err := f.lookup(name)
	if err != nil {
		return nil, err
	}
	return f.TensorData(t)
}

// TensorData is Data for a TensorInfo of this file's header.
func (f *File) TensorData(t TensorInfo) ([]byte, error) {
	off := f.h.DataStart() + t.Begin
	if f.mm != nil {
		return f.mm[off : off+t.Size() : off+t.Size()], nil
	}
	b := make([]byte, t.Size()) // bounded: the header was checked against the file size
	if _, err := f.f.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("%s: safetensors: tensor %q at offset %d: %w", f.path, t.Name, off, err)
	}
	return b, nil
}

// Section returns a reader of tensor name's bytes, for tensors too large to hold.
func (f *File) Section(name string) (*io.SectionReader, error) {
	t, err := f.lookup(name)
	if err != nil {
		return nil, err
	}
	return io.NewSectionReader(f, f.h.DataStart()+t.Begin, t.Size()), nil
}

// ReadAt reads the file's bytes at off (from the mapping when there is one).
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if f.mm == nil {
		return f.f.ReadAt(p, off)
	}
	if off < 0 {
		return 0, fmt.Errorf("safetensors: negative offset %d", off)
	}
	if off >= int64(len(f.mm)) {
		return 0, io.EOF
	}
	n := copy(p, f.mm[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// DropPages tells the OS that the file bytes [off, off+n) will not be read again
// soon, so that their mapped pages leave the process's resident set (they stay in
// the page cache; a later read maps them again). Streaming a large mapped file
// with DropPages behind the reader keeps the resident set bounded. It is a no-op
// when the file is not mapped, and it never invalidates data: the mapping is
// read-only and shared.
func (f *File) DropPages(off, n int64) {
	if f.mm == nil || n <= 0 || off < 0 || off >= int64(len(f.mm)) {
		return
	}
	end := min(off+n, int64(len(f.mm)))
	mmap.DropPages(f.mm, off, end)
}

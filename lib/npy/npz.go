package npy

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/internal/regfile"
)

// Limits applied to .npz archives.
const (
	// MaxEntries caps the number of arrays in an archive.
	MaxEntries = 1 << 16
	// MaxNameLen caps the length of an entry name.
	MaxNameLen = 4096
	// MaxNPZHeaderBytes caps the sum of all entries' .npy header lengths, so a
	// small deflated archive cannot make OpenNPZ inflate 65536 headers of 1 MiB
	// each. numpy writes 128 bytes for most arrays.
	MaxNPZHeaderBytes = 16 << 20
)

// NPZEntry is one array of an .npz archive.
type NPZEntry struct {
	Name   string // tensor name: the entry name without ".npy"
	Header Header // its .npy header
	file   *zip.File
}

// NPZReader reads an .npz archive. Opening it validates every entry name and
// reads every entry's .npy header; the data of each array is read on demand.
type NPZReader struct {
	name    string
	entries []NPZEntry
	index   map[string]int
}

// OpenNPZ opens the .npz archive held by r (size bytes). name (a file name or "")
// is used in errors. Entry names must end in ".npy", be relative and free of "."
// and ".." elements and backslashes, and be unique; directory entries are
// skipped; at most MaxEntries arrays are accepted.
func OpenNPZ(r io.ReaderAt, size int64, name string) (*NPZReader, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, newErr(name, -1, ErrFormat, "not a readable .npz (zip) archive: %v", err)
	}
	if len(zr.File) > MaxEntries {
		return nil, newErr(name, -1, ErrUnsupported, "archive has %d entries, more than the limit of %d", len(zr.File), MaxEntries)
	}
	z := &NPZReader{name: name, index: make(map[string]int, len(zr.File))}
	var headerBytes int64
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") && f.UncompressedSize64 == 0 {
			continue // a directory
		}
		tname, err := tensorName(f.Name)
		if err != nil {
			return nil, newErr(name, -1, ErrFormat, "entry %q: %v", f.Name, err)
		}
		if _, dup := z.index[tname]; dup {
			return nil, newErr(name, -1, ErrFormat, "entry %q: duplicate array name %q", f.Name, tname)
		}
		ename := z.entryName(f.Name)
		rc, err := f.Open()
		if err != nil {
			return nil, newErr(ename, -1, ErrUnsupported, "cannot open entry: %v", err)
		}
		lr := &budgetReader{r: rc, left: MaxNPZHeaderBytes - headerBytes}
		h, err := readHeader(lr, ename)
		rc.Close()
		if err != nil {
			if lr.hit {
				return nil, newErr(ename, -1, ErrUnsupported, "the archive's .npy headers exceed %d bytes in all", MaxNPZHeaderBytes)
			}
			return nil, err
		}
		headerBytes += h.HeaderLen
		if want := uint64(h.HeaderLen) + uint64(h.DataSize); f.UncompressedSize64 != want {
			return nil, newErr(ename, h.HeaderLen, ErrFormat,
				"entry holds %d bytes but its header (%d bytes) announces %s %v of %d data bytes, %d in all",
				f.UncompressedSize64, h.HeaderLen, h.DType, h.Shape, h.DataSize, want)
		}
		z.index[tname] = len(z.entries)
		z.entries = append(z.entries, NPZEntry{Name: tname, Header: h, file: f})
	}
	return z, nil
}

func (z *NPZReader) entryName(entry string) string {
	if z.name == "" {
		return entry
	}
	return z.name + ":" + entry
}

// tensorName validates an entry name and strips ".npy".
func tensorName(entry string) (string, error) {
	switch {
	case len(entry) > MaxNameLen:
		return "", fmt.Errorf("name longer than %d bytes", MaxNameLen)
	case !strings.HasSuffix(entry, ".npy"):
		return "", errors.New("not a .npy array (the name does not end in \".npy\")")
	case strings.ContainsAny(entry, "\\\x00"):
		return "", errors.New("name contains a backslash or NUL byte")
	case strings.HasPrefix(entry, "/"):
		return "", errors.New("absolute path")
	}
	t := strings.TrimSuffix(entry, ".npy")
	if t == "" {
		return "", errors.New("empty array name")
	}
	for _, el := range strings.Split(t, "/") {
		if el == "" || el == "." || el == ".." {
			return "", fmt.Errorf("path element %q is not allowed", el)
		}
	}
	if len(t) >= 2 && t[1] == ':' {
		return "", errors.New("name starts with a drive letter")
	}
	return t, nil
}

// Entries returns the arrays in archive order.
func (z *NPZReader) Entries() []NPZEntry { return z.entries }

// Lookup returns the entry of the named array.
func (z *NPZReader) Lookup(name string) (NPZEntry, bool) {
	i, ok := z.index[name]
	if !ok {
		return NPZEntry{}, false
	}
	return z.entries[i], true
}

// Open opens the named array for reading (see Reader). The caller must Close it.
func (z *NPZReader) Open(name string) (*NPZArray, error) {
	i, ok := z.index[name]
	if !ok {
		return nil, fmt.Errorf("npy: %s: no array named %q", z.name, name)
	}
	e := z.entries[i]
	rc, err := e.file.Open()
	if err != nil {
		return nil, newErr(z.entryName(e.file.Name), -1, ErrUnsupported, "cannot open entry: %v", err)
	}
	r, err := NewReader(rc, z.entryName(e.file.Name))
	if err != nil {
		rc.Close()
		return nil, err
	}
	return &NPZArray{Reader: r, rc: rc}, nil
}

// NPZArray is one array of an archive being read: a Reader that must be closed.
// Its Read verifies the entry's CRC-32 when it reaches the end.
type NPZArray struct {
	*Reader
	rc io.ReadCloser
}

// Close releases the entry.
func (a *NPZArray) Close() error { return a.rc.Close() }

// NPZFile is an .npz archive opened from a file.
type NPZFile struct {
	*NPZReader
	f *os.File
}

// OpenNPZFile opens the .npz archive at path.
func OpenNPZFile(path string) (*NPZFile, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	z, err := OpenNPZ(f, fi.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &NPZFile{NPZReader: z, f: f}, nil
}

// Close closes the file.
func (z *NPZFile) Close() error { return z.f.Close() }

// Compression selects how an NPZWriter stores arrays.
type Compression int

const (
	// Store writes arrays uncompressed, as numpy.savez does.
	Store Compression = iota
	// Deflate compresses arrays, as numpy.savez_compressed does.
	Deflate
)

// npzTime is the modification time of every entry, fixed so that the same
// arrays always give the same archive bytes.
var npzTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// NPZWriter streams arrays into an .npz archive, one after another. Entries use
// zip64 when they need it.
type NPZWriter struct {
	zw     *zip.Writer
	method uint16
	names  map[string]struct{}
	cur    *Writer
	err    error
}

// NewNPZWriter returns a writer of an .npz archive to w.
func NewNPZWriter(w io.Writer, c Compression) *NPZWriter {
	m := zip.Store
	if c == Deflate {
		m = zip.Deflate
	}
	return &NPZWriter{zw: zip.NewWriter(w), method: m, names: map[string]struct{}{}}
}

// Create starts the array name (stored as "name.npy") of dtype d and the given
// shape, finishing the previous one, and returns the Writer its little-endian
// data must be written to.
func (z *NPZWriter) Create(name string, d dtype.DType, shape []int64) (*Writer, error) {
	if err := z.finish(); err != nil {
		return nil, err
	}
	if _, err := tensorName(name + ".npy"); err != nil {
		return nil, fmt.Errorf("npy: array name %q: %v", name, err)
	}
	if _, dup := z.names[name]; dup {
		return nil, fmt.Errorf("npy: array name %q written twice", name)
	}
	if len(z.names) >= MaxEntries {
		return nil, fmt.Errorf("npy: more than %d arrays", MaxEntries)
	}
	if _, err := EncodeHeader(d, shape); err != nil {
		return nil, err
	}
	fw, err := z.zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: z.method, Modified: npzTime})
	if err != nil {
		z.err = err
		return nil, err
	}
	w, err := NewWriter(fw, d, shape)
	if err != nil {
		z.err = err
		return nil, err
	}
	z.names[name] = struct{}{}
	z.cur = w
	return w, nil
}

// WriteArray writes a whole array (see Create).
func (z *NPZWriter) WriteArray(name string, d dtype.DType, shape []int64, data []byte) error {
	w, err := z.Create(name, d, shape)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Close()
}

func (z *NPZWriter) finish() error {
	if z.err != nil {
		return z.err
	}
	if z.cur != nil {
		err := z.cur.Close()
		z.cur = nil
		if err != nil {
			z.err = err
			return err
		}
	}
	return nil
}

// Close finishes the last array and writes the archive's central directory. It
// does not close the underlying writer.
func (z *NPZWriter) Close() error {
	if err := z.finish(); err != nil {
		return err
	}
	z.err = errors.New("npy: NPZWriter is closed")
	return z.zw.Close()
}

// budgetReader reads at most left bytes from r and records whether a read
// was cut short by the budget.
type budgetReader struct {
	r    io.Reader
	left int64
	hit  bool
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.hit = true
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

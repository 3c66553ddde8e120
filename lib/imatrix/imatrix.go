// Package imatrix reads llama-imatrix's importance matrices: per weight tensor, one
// value per input column (the mean square of the activations that column multiplies),
// which llama-quantize --imatrix uses to weight its quantizers' fits.
//
// The format is llama-imatrix's binary .dat file as llama.cpp b4747 (commit c392e509)
// writes and llama-quantize reads it, all integers little-endian int32:
//
//	n_entries
//	n_entries times: name_len, name (name_len bytes), ncall, nval, nval float32 values
//	optionally:      chunks (m_last_call), dataset_len, dataset (dataset_len bytes)
//
// The values in the file are sums over ncall calls; Parse divides them by ncall (in
// float32) as llama-quantize's loader does, so Entries hold what the quantizers get.
// The GGUF form of later llama.cpp versions is not read.
package imatrix

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Caps on what a file may declare; a larger value is refused before anything is
// allocated for it.
const (
	MaxEntries = 1 << 20 // tensors (llama.cpp's largest models have a few thousand)
	MaxNameLen = 4096    // bytes of a tensor name (ggml's are at most 63)
	MaxFileLen = 1 << 32 // bytes of a file Load reads
)

// Matrix is one importance matrix.
type Matrix struct {
	// File is the path the matrix was loaded from, as given (llama-quantize records
	// it in quantize.imatrix.file); empty for Parse.
	File string
	// Entries maps a tensor name to its weights, one per column of the tensor's rows
	// (times the number of experts for a 3-D expert tensor), already divided by the
	// number of calls.
	Entries map[string][]float32
	// Names lists the entries in file order.
	Names []string
	// Chunks is the number of chunks the matrix was computed on (0 when the file has
	// no trailer); Dataset names the calibration text, as llama-imatrix recorded it.
	Chunks  int32
	Dataset string
}

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("malformed importance matrix")

// Load reads and parses the .dat file at path.
func Load(path string) (*Matrix, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Mode().IsRegular() && st.Size() > MaxFileLen {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d this reader takes", path, ErrFormat, st.Size(), int64(MaxFileLen))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileLen+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxFileLen {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", path, ErrFormat, int64(MaxFileLen))
	}
	m, err := Parse(path, b)
	if err != nil {
		return nil, err
	}
	m.File = path
	return m, nil
}

// reader walks the bytes, naming the file and offset in its errors.
type reader struct {
	name string
	b    []byte
	off  int
}

func (r *reader) errf(at int, format string, a ...any) error {
	return fmt.Errorf("%s: offset %d: %w: %s", r.name, at, ErrFormat, fmt.Sprintf(format, a...))
}

func (r *reader) int32(what string) (int32, error) {
	if len(r.b)-r.off < 4 {
		return 0, r.errf(r.off, "the file ends inside %s (%d of 4 bytes)", what, len(r.b)-r.off)
	}
	v := int32(binary.LittleEndian.Uint32(r.b[r.off:]))
	r.off += 4
	return v, nil
}

// bytes returns the next n bytes, n checked against what is left.
func (r *reader) bytes(n int64, what string) ([]byte, error) {
	if n > int64(len(r.b)-r.off) {
		return nil, r.errf(r.off, "%s of %d bytes, but only %d bytes are left", what, n, len(r.b)-r.off)
	}
	v := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return v, nil
}

// Parse reads an importance matrix from b; name (the file's) prefixes every error.
// Besides the format it refuses what llama-quantize would refuse or misread: no
// entries, a name that is empty, holds a NUL byte or repeats, an entry without
// values, a NaN or infinite value, a truncated trailer, bytes after it.
func Parse(name string, b []byte) (*Matrix, error) {
	r := &reader{name: name, b: b}
	if bytes.HasPrefix(b, []byte("GGUF")) {
		return nil, r.errf(0, "this is a GGUF file; apr reads llama-imatrix's .dat format (llama.cpp b4747), not the GGUF form of later versions")
	}
	n, err := r.int32("the entry count")
	if err != nil {
		return nil, err
	}
	if n < 1 || n > MaxEntries {
		return nil, r.errf(0, "%d entries (want 1 to %d)", n, MaxEntries)
	}
	m := &Matrix{Entries: make(map[string][]float32, min(int(n), 1<<12))}
	for i := range int(n) {
		at := r.off
		l, err := r.int32(fmt.Sprintf("the name length of entry %d", i+1))
		if err != nil {
			return nil, err
		}
		if l < 1 || l > MaxNameLen {
			return nil, r.errf(at, "entry %d: name of %d bytes (want 1 to %d)", i+1, l, MaxNameLen)
		}
		nb, err := r.bytes(int64(l), fmt.Sprintf("entry %d: a name", i+1))
		if err != nil {
			return nil, err
		}
		tensor := string(nb)
		if strings.IndexByte(tensor, 0) >= 0 {
			return nil, r.errf(at+4, "entry %d: the name %q holds a NUL byte", i+1, tensor)
		}
		if _, dup := m.Entries[tensor]; dup {
			return nil, r.errf(at+4, "entry %d: a second entry for %q", i+1, tensor)
		}
		ncall, err := r.int32(fmt.Sprintf("the call count of %q", tensor))
		if err != nil {
			return nil, err
		}
		at = r.off
		nval, err := r.int32(fmt.Sprintf("the value count of %q", tensor))
		if err != nil {
			return nil, err
		}
		if nval < 1 {
			return nil, r.errf(at, "%q: %d values (want at least 1)", tensor, nval)
		}
		raw, err := r.bytes(4*int64(nval), fmt.Sprintf("%q: %d values", tensor, nval))
		if err != nil {
			return nil, err
		}
		vals := make([]float32, nval)
		for j := range vals {
			v := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, r.errf(at+4+4*j, "%q: value %d is %v; llama-quantize refuses non-finite importances", tensor, j, v)
			}
			if ncall > 0 {
				v /= float32(ncall)
			}
			vals[j] = v
		}
		m.Entries[tensor] = vals
		m.Names = append(m.Names, tensor)
	}
	if r.off == len(b) {
		return m, nil
	}
	if m.Chunks, err = r.int32("the chunk count"); err != nil {
		return nil, err
	}
	at := r.off
	dl, err := r.int32("the dataset name's length")
	if err != nil {
		return nil, err
	}
	if dl < 0 {
		return nil, r.errf(at, "dataset name of %d bytes", dl)
	}
	ds, err := r.bytes(int64(dl), "the dataset name")
	if err != nil {
		return nil, err
	}
	m.Dataset = string(ds)
	if r.off != len(b) {
		return nil, r.errf(r.off, "%d bytes after the dataset name, where the file should end", len(b)-r.off)
	}
	return m, nil
}

// Encode writes m in the .dat format, with Calls 1 for every entry (the values are
// then read back as they are); a Chunks or Dataset that is set adds the trailer.
func (m *Matrix) Encode(w io.Writer) error {
	var buf bytes.Buffer
	put := func(v int32) { binary.Write(&buf, binary.LittleEndian, v) }
	put(int32(len(m.Names)))
	for _, name := range m.Names {
		put(int32(len(name)))
		buf.WriteString(name)
		put(1)
		vals := m.Entries[name]
		put(int32(len(vals)))
		binary.Write(&buf, binary.LittleEndian, vals)
	}
	if m.Chunks != 0 || m.Dataset != "" {
		put(m.Chunks)
		put(int32(len(m.Dataset)))
		buf.WriteString(m.Dataset)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

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
//
// Today's llama-imatrix (llama.cpp of 2026-09-28) writes GGUF by default (gguf.go):
// per weight tensor NAME an F32 tensor NAME.in_sum2 of the raw sums (ne0 columns by
// one row per expert) and NAME.counts of the token counts (one per expert), and the
// keys general.type "imatrix", imatrix.datasets, imatrix.chunk_count and
// imatrix.chunk_size. Read tells the formats apart by their content (the GGUF magic),
// whatever the file's name.
//
// Either file is read as it streams in, every length checked before anything is
// allocated for it (see the caps); memory follows the bytes that arrive (about twice
// the values: the raw sums are kept for Convert beside the normalized Entries).
package imatrix

import (
	"bufio"
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
// allocated for it, and so is a length beyond the bytes the file has left (when its
// size is known) or beyond MaxFileLen. The figures are from the largest imatrix
// files of llama.cpp models: llama-imatrix records every matrix multiplication's
// weight, about a dozen a layer (DeepSeek-V3: about 730 entries; an old Mixtral-style
// file with one entry per expert, 56 layers of 8 experts: about 1,600), and an
// expert tensor's entry holds its column count times its experts (Kimi K2's
// ffn_gate_exps: 7168 x 384 = 2,752,512 values; DeepSeek-V3's: 7168 x 256); a
// DeepSeek-V3 file is about 1 GB, a Kimi K2 file about 1.5 GB.
const (
	MaxEntries    = 1 << 16 // tensors: 40 times DeepSeek-V3's, 4 times 128 experts x 3 x 35 layers split per expert
	MaxNameLen    = 4096    // bytes of a tensor name (ggml's are at most 63)
	MaxValues     = 1 << 24 // values of one entry (64 MiB): 6 times Kimi K2's largest
	MaxDatasetLen = 1 << 16 // bytes of the trailer's dataset name (a file name, as llama-imatrix records it)
	MaxFileLen    = 1 << 32 // bytes of a file: 2.7 times a Kimi K2 file
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
	// no trailer); Dataset names the calibration text, as llama-imatrix recorded it
	// (a GGUF's first dataset: llama-quantize records that one).
	Chunks  int32
	Dataset string
	// Datasets are all the datasets a GGUF names (a .dat's one, when it names one);
	// ChunkSize is a GGUF's imatrix.chunk_size (tokens a chunk; 0 for a .dat).
	Datasets  []string
	ChunkSize int32
	// GGUF: the file was llama-imatrix's GGUF form.
	GGUF bool

	raw map[string]rawEntry // the file's own numbers, for Convert
}

// rawEntry is an entry as the file holds it: a .dat's sums (already divided by the
// call count and multiplied by it again, as llama-imatrix writes them) and its call
// count; a GGUF's raw sums and per-expert token counts.
type rawEntry struct {
	sums   []float32
	counts []int64
}

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("malformed importance matrix")

// Load reads and parses the file at path as it streams in (see Read): a regular
// file's size bounds every length, and a pipe or device is read no further than the
// lengths it declares, within the caps.
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
	size := int64(-1)
	if st.Mode().IsRegular() {
		size = st.Size()
	}
	m, err := Read(path, f, size)
	if err != nil {
		return nil, err
	}
	m.File = path
	return m, nil
}

// Parse reads an importance matrix from b; name (the file's) prefixes every error.
func Parse(name string, b []byte) (*Matrix, error) {
	return Read(name, bytes.NewReader(b), int64(len(b)))
}

// Read reads an importance matrix from r, which holds size bytes (-1: unknown, a
// pipe); name (the file's) prefixes every error, with the offset. Every length is
// read before anything is allocated for it and checked against the caps and the
// bytes left, so memory follows the bytes that actually arrive. The format is told
// by the first bytes; apr reads llama-imatrix's .dat format (readDat).
func Read(name string, r io.Reader, size int64) (*Matrix, error) {
	buf := 64 << 10
	if size >= 0 {
		buf = int(min(int64(buf), size)) // a small file, a small buffer
	}
	rd := &reader{name: name, r: bufio.NewReaderSize(r, buf), size: size}
	if size > MaxFileLen {
		return nil, rd.errf(0, "%d bytes, more than the %d this reader takes (MaxFileLen)", size, int64(MaxFileLen))
	}
	if magic, _ := rd.r.Peek(4); string(magic) == "GGUF" {
		return readGGUF(rd)
	}
	return readDat(rd)
}

// reader walks the input, naming the file and offset in its errors.
type reader struct {
	name string
	r    *bufio.Reader
	off  int64
	size int64  // bytes in the input, -1 when unknown
	buf  []byte // for values
}

func (r *reader) errf(at int64, format string, a ...any) error {
	return fmt.Errorf("%s: offset %d: %w: %s", r.name, at, ErrFormat, fmt.Sprintf(format, a...))
}

// need fails unless n more bytes (of what) can be there: within the input's size
// when known, and within MaxFileLen.
func (r *reader) need(n int64, what string) error {
	if r.size >= 0 && n > r.size-r.off {
		return r.errf(r.off, "%s of %d bytes, but only %d bytes are left", what, n, r.size-r.off)
	}
	if n > MaxFileLen-r.off {
		return r.errf(r.off, "%s of %d bytes would take the file past %d bytes (MaxFileLen)", what, n, int64(MaxFileLen))
	}
	return nil
}

// read fills p (what, for errors); an input that ends first is an error naming where.
func (r *reader) read(p []byte, what string) error {
	n, err := io.ReadFull(r.r, p)
	r.off += int64(n)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return r.errf(r.off, "the file ends inside %s (%d of %d bytes)", what, n, len(p))
	case err != nil:
		return fmt.Errorf("%s: offset %d: %w", r.name, r.off, err)
	}
	return nil
}

func (r *reader) int32(what string) (int32, error) {
	var b [4]byte
	if err := r.read(b[:], what); err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(b[:])), nil
}

// bytes returns the next n bytes, n checked against what is left before anything is
// allocated.
func (r *reader) bytes(n int64, what string) ([]byte, error) {
	if err := r.need(n, what); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	return b, r.read(b, what)
}

// atEnd reports whether the input has no more bytes.
func (r *reader) atEnd() (bool, error) {
	_, err := r.r.Peek(1)
	if err == io.EOF {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: offset %d: %w", r.name, r.off, err)
	}
	return false, nil
}

// readDat reads llama-imatrix's .dat format. Besides the format it refuses what
// llama-quantize would refuse or misread: no entries, a name that is empty, holds a
// NUL byte or repeats, an entry without values, a NaN or infinite value, a truncated
// trailer, bytes after it.
func readDat(r *reader) (*Matrix, error) {
	n, err := r.int32("the entry count")
	if err != nil {
		return nil, err
	}
	if n < 1 || n > MaxEntries {
		return nil, r.errf(0, "%d entries (want 1 to %d, MaxEntries)", n, MaxEntries)
	}
	m := &Matrix{Entries: make(map[string][]float32, min(int(n), 1<<12)), raw: map[string]rawEntry{}}
	for i := range int(n) {
		at := r.off
		l, err := r.int32(fmt.Sprintf("the name length of entry %d", i+1))
		if err != nil {
			return nil, err
		}
		if l < 1 || l > MaxNameLen {
			return nil, r.errf(at, "entry %d: name of %d bytes (want 1 to %d, MaxNameLen)", i+1, l, MaxNameLen)
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
		if nval < 1 || nval > MaxValues {
			return nil, r.errf(at, "%q: %d values (want 1 to %d, MaxValues)", tensor, nval, MaxValues)
		}
		sums, err := r.values(tensor, int(nval))
		if err != nil {
			return nil, err
		}
		vals := sums
		if ncall > 0 {
			vals = make([]float32, len(sums))
			for j, v := range sums {
				vals[j] = v / float32(ncall)
			}
		}
		m.Entries[tensor] = vals
		m.raw[tensor] = rawEntry{sums: sums, counts: []int64{int64(ncall)}}
		m.Names = append(m.Names, tensor)
	}
	if end, err := r.atEnd(); end || err != nil {
		return m, err
	}
	if m.Chunks, err = r.int32("the chunk count"); err != nil {
		return nil, err
	}
	at := r.off
	dl, err := r.int32("the dataset name's length")
	if err != nil {
		return nil, err
	}
	if dl < 0 || dl > MaxDatasetLen {
		return nil, r.errf(at, "dataset name of %d bytes (want 0 to %d, MaxDatasetLen)", dl, MaxDatasetLen)
	}
	ds, err := r.bytes(int64(dl), "the dataset name")
	if err != nil {
		return nil, err
	}
	m.Dataset = string(ds)
	if dl > 0 {
		m.Datasets = []string{m.Dataset}
	}
	if end, err := r.atEnd(); err != nil {
		return nil, err
	} else if !end {
		more := "bytes"
		if r.size >= 0 {
			more = fmt.Sprintf("%d bytes", r.size-r.off)
		}
		return nil, r.errf(r.off, "%s after the dataset name, where the file should end", more)
	}
	return m, nil
}

// values reads an entry's nval values (checked against what is left first), refusing
// NaN and infinities. From a pipe the slice grows as the bytes arrive, so a count the
// input does not back costs no more than the bytes it sent.
func (r *reader) values(tensor string, nval int) ([]float32, error) {
	what := fmt.Sprintf("%q: %d values", tensor, nval)
	if err := r.need(4*int64(nval), what); err != nil {
		return nil, err
	}
	capacity := nval // need checked the bytes are there
	if r.size < 0 {
		capacity = min(nval, 1<<16)
	}
	vals := make([]float32, 0, capacity)
	if want := 4 * min(nval, 16<<10); len(r.buf) < want {
		r.buf = make([]byte, want)
	}
	for len(vals) < nval {
		at := r.off
		b := r.buf[:4*min(nval-len(vals), len(r.buf)/4)]
		if err := r.read(b, what); err != nil {
			return nil, err
		}
		for j := 0; j < len(b); j += 4 {
			v := math.Float32frombits(binary.LittleEndian.Uint32(b[j:]))
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, r.errf(at+int64(j), "%q: value %d is %v; llama-quantize refuses non-finite importances", tensor, len(vals), v)
			}
			vals = append(vals, v)
		}
	}
	return vals, nil
}

// Encode writes m in the .dat format, with Calls 1 for every entry (the values are
// then read back as they are); a Chunks or Dataset that is set adds the trailer.
func (m *Matrix) Encode(w io.Writer) error {
	var buf bytes.Buffer
	putInt32(&buf, int32(len(m.Names)))
	for _, name := range m.Names {
		putDatEntry(&buf, name, 1, m.Entries[name])
	}
	if m.Chunks != 0 || m.Dataset != "" {
		putDatTrailer(&buf, m.Chunks, m.Dataset)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// putInt32, putDatEntry and putDatTrailer write the pieces of the .dat layout (see
// the package comment) to a buffer, whose flush or write reports any error.

func putInt32(w io.Writer, v int32) { binary.Write(w, binary.LittleEndian, v) }

func putDatEntry(w io.Writer, name string, calls int32, vals []float32) {
	putInt32(w, int32(len(name)))
	io.WriteString(w, name)
	putInt32(w, calls)
	putInt32(w, int32(len(vals)))
	binary.Write(w, binary.LittleEndian, vals)
}

func putDatTrailer(w io.Writer, chunks int32, dataset string) {
	putInt32(w, chunks)
	putInt32(w, int32(len(dataset)))
	io.WriteString(w, dataset)
}

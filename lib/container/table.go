package container

import (
	"fmt"
	"slices"

	"github.com/apr-go/apr/lib/dtype"
)

// The tensor table (format 2.1) lists every tensor's name, dtype and shape before the
// first record, so that an exporter to a format whose header lists the tensors before
// the data (GGUF, SafeTensors) can write that header at once when it reads a pipe,
// instead of spooling the data until the index at the end arrives. The index stays the
// truth: readers check every record, and the index, against the table.

const (
	tableFixed      = 16 // magic, reserved, tensor count
	tableEntryFixed = 8  // dtype, ndims, reserved, name length, reserved
	// MaxTable caps the table section, as MaxMetadata caps the metadata.
	MaxTable = 64 << 20
)

var magicTable = [4]byte{'A', 'P', 'R', 'L'}

// encodeTable returns the table section (unpadded) for tensors, which the caller has
// validated.
func encodeTable(tensors []TensorInfo) []byte {
	b := make([]byte, tableFixed)
	copy(b, magicTable[:])
	le.PutUint64(b[8:], uint64(len(tensors)))
	for _, t := range tensors {
		var f [tableEntryFixed]byte
		le.PutUint16(f[0:], uint16(t.DType))
		f[2] = byte(len(t.Shape))
		le.PutUint16(f[4:], uint16(len(t.Name)))
		b = append(b, f[:]...)
		for _, d := range t.Shape {
			b = le.AppendUint64(b, uint64(d))
		}
		b = append(b, t.Name...)
	}
	return b
}

// checkTable validates a producer's table: every tensor valid, names unique.
func checkTable(tensors []TensorInfo) error {
	names := make(map[string]bool, len(tensors))
	for i, t := range tensors {
		if err := t.validate(); err != nil {
			return fmt.Errorf("tensor table entry %d: %w", i, err)
		}
		if names[t.Name] {
			return fmt.Errorf("tensor table: duplicate tensor name %q", t.Name)
		}
		names[t.Name] = true
	}
	return nil
}

// decodeTable parses a whole table section (magic to last entry) located at off. The
// caller has checked its CRC. It never returns nil without an error: an empty table
// is an empty, non-nil slice.
func decodeTable(b []byte, off int64) ([]TensorInfo, error) {
	if len(b) < tableFixed || [4]byte(b[:4]) != magicTable {
		return nil, formatErr(off, "expected the tensor table (\"APRL\")")
	}
	if le.Uint32(b[4:]) != 0 {
		return nil, formatErr(off+4, "reserved tensor table bytes are not zero")
	}
	n := le.Uint64(b[8:])
	if n > uint64(len(b)-tableFixed)/(tableEntryFixed+1) {
		return nil, formatErr(off+8, "tensor table claims %d tensors in %d bytes", n, len(b))
	}
	out := make([]TensorInfo, 0, n)
	names := make(map[string]bool, n)
	p := tableFixed
	for i := uint64(0); i < n; i++ {
		at := off + int64(p)
		if len(b)-p < tableEntryFixed {
			return nil, formatErr(at, "tensor table entry %d truncated", i)
		}
		f := b[p : p+tableEntryFixed]
		nd, nl := int(f[2]), int(le.Uint16(f[4:]))
		if f[3] != 0 || le.Uint16(f[6:]) != 0 {
			return nil, formatErr(at, "tensor table entry %d: reserved bytes are not zero", i)
		}
		size := tableEntryFixed + 8*nd + nl
		if nd > MaxDims || len(b)-p < size {
			return nil, formatErr(at, "tensor table entry %d (%d dims, %d-byte name) overruns the table", i, nd, nl)
		}
		t := TensorInfo{DType: dtype.DType(le.Uint16(f[0:])), Shape: make([]int64, nd)}
		q := p + tableEntryFixed
		for j := range t.Shape {
			t.Shape[j] = int64(le.Uint64(b[q:]))
			q += 8
		}
		t.Name = string(b[q : q+nl])
		if err := t.validate(); err != nil {
			return nil, &FormatError{Offset: at, Tensor: t.Name, Msg: "tensor table: " + err.Error()}
		}
		if names[t.Name] {
			return nil, &FormatError{Offset: at, Tensor: t.Name, Msg: "duplicate tensor name in the tensor table"}
		}
		names[t.Name] = true
		out = append(out, t)
		p += size
	}
	if p != len(b) {
		return nil, formatErr(off+int64(p), "%d unexpected bytes after the last tensor table entry", len(b)-p)
	}
	return out, nil
}

// sameInfo reports whether a record or index entry describes the tensor a table lists.
func sameInfo(a, b TensorInfo) bool {
	return a.Name == b.Name && a.DType == b.DType && slices.Equal(a.Shape, b.Shape)
}

// tableMismatch is the error for tensor i of a file, described by got, that the
// table at tableOff lists as want (or does not list: want is nil).
func tableMismatch(off int64, i int, got TensorInfo, want *TensorInfo, count int) error {
	if want == nil {
		return &FormatError{Offset: off, Tensor: got.Name,
			Msg: fmt.Sprintf("tensor %d, but the tensor table lists %d tensors", i, count)}
	}
	return &FormatError{Offset: off, Tensor: got.Name,
		Msg: fmt.Sprintf("tensor %d is %v %v, the tensor table says %q %v %v", i, got.DType, got.Shape, want.Name, want.DType, want.Shape)}
}

// checkAgainstTable checks index entries against a table: the same tensors in order.
func checkAgainstTable(entries []Entry, table []TensorInfo, indexOff int64) error {
	for i := range entries {
		var want *TensorInfo
		if i < len(table) {
			want = &table[i]
		}
		if want == nil || !sameInfo(entries[i].TensorInfo, *want) {
			return tableMismatch(entries[i].RecordOffset, i, entries[i].TensorInfo, want, len(table))
		}
	}
	if len(entries) != len(table) {
		return formatErr(indexOff, "the index lists %d tensors, the tensor table %d", len(entries), len(table))
	}
	return nil
}

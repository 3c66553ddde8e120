package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/apr-go/apr/lib/dtype"
)

const (
	// align is the boundary numpy pads headers to, so data can be mapped in place.
	align = 64
	// growthDigits is numpy's spare room after the dict, sized for the longest
	// outermost dimension, so a header can be rewritten in place when an array
	// grows (numpy >= 1.24 writes it; readers ignore it).
	growthDigits = 21
)

// ErrDType is returned by the writers for a dtype numpy has no type for.
var ErrDType = errors.New("npy: dtype has no NumPy equivalent")

// EncodeHeader returns the .npy header numpy.save writes for a C-order,
// little-endian array of dtype d and the given shape: version 1.0 when the header
// fits in 65535 bytes, else 2.0, padded so the data starts on a 64-byte boundary.
func EncodeHeader(d dtype.DType, shape []int64) ([]byte, error) {
	return encodeHeader(d, shape, 1)
}

func encodeHeader(d dtype.DType, shape []int64, major int) ([]byte, error) {
	descr := d.Info().NumPy
	if descr == "" {
		return nil, fmt.Errorf("%w: %s (convert it to a type NumPy has, such as F32)", ErrDType, d)
	}
	if len(shape) > MaxDims {
		return nil, fmt.Errorf("npy: shape has %d dimensions, more than %d", len(shape), MaxDims)
	}
	if _, err := dtype.Size(d, shape); err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	b := make([]byte, 0, 128)
	b = append(b, "{'descr': '"...)
	b = append(b, descr...)
	b = append(b, "', 'fortran_order': False, 'shape': ("...)
	for i, s := range shape {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, s, 10)
	}
	if len(shape) == 1 {
		b = append(b, ',')
	}
	b = append(b, "), }"...)
	if len(shape) > 0 {
		b = append(b, bytes.Repeat([]byte{' '}, max(0, growthDigits-len(strconv.FormatInt(shape[0], 10))))...)
	}
	for ; major <= 3; major++ {
		prefix := 10
		if major > 1 {
			prefix = 12
		}
		// numpy pads with at least one space: the dict, the spaces and a newline
		// end on the next multiple of 64 strictly after the dict.
		body := len(b) + 1
		pad := align - (prefix+body)%align
		total := body + pad
		if major == 1 && total > 0xFFFF {
			continue
		}
		out := make([]byte, 0, prefix+total)
		out = append(out, Magic...)
		out = append(out, byte(major), 0)
		if major == 1 {
			out = binary.LittleEndian.AppendUint16(out, uint16(total))
		} else {
			out = binary.LittleEndian.AppendUint32(out, uint32(total))
		}
		out = append(out, b...)
		out = append(out, bytes.Repeat([]byte{' '}, pad)...)
		return append(out, '\n'), nil
	}
	return nil, fmt.Errorf("npy: header of %d bytes is too long", len(b))
}

// WriteHeader writes the .npy header for a C-order, little-endian array of dtype
// d and the given shape; exactly Size(d, shape) bytes of little-endian data must
// follow. See EncodeHeader.
func WriteHeader(w io.Writer, d dtype.DType, shape []int64) error {
	b, err := EncodeHeader(d, shape)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Writer writes one .npy stream: the header when created, then exactly the
// number of little-endian data bytes the header announces.
type Writer struct {
	w      io.Writer
	d      dtype.DType
	shape  []int64
	remain int64
	err    error
}

// NewWriter writes the header of an array of dtype d and the given shape to w and
// returns a Writer for its data.
func NewWriter(w io.Writer, d dtype.DType, shape []int64) (*Writer, error) {
	size, err := dtype.Size(d, shape)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	if err := WriteHeader(w, d, shape); err != nil {
		return nil, err
	}
	return &Writer{w: w, d: d, shape: append([]int64{}, shape...), remain: size}, nil
}

// Write writes little-endian data bytes. Writing more than the header announces
// is an error and writes nothing.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if int64(len(p)) > w.remain {
		return 0, fmt.Errorf("npy: %d bytes written past the end of %s %v (%d bytes left)", len(p), w.d, w.shape, w.remain)
	}
	n, err := w.w.Write(p)
	w.remain -= int64(n)
	if err != nil {
		w.err = err
	}
	return n, err
}

// Close checks that all data bytes were written. It does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.remain != 0 {
		w.err = fmt.Errorf("npy: %s %v closed with %d data bytes missing", w.d, w.shape, w.remain)
		return w.err
	}
	return nil
}

// Write writes a whole .npy stream: the header and data, which must hold exactly
// the array's bytes, little-endian.
func Write(w io.Writer, d dtype.DType, shape []int64, data []byte) error {
	size, err := dtype.Size(d, shape)
	if err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	if int64(len(data)) != size {
		return fmt.Errorf("npy: %s %v needs %d data bytes, got %d", d, shape, size, len(data))
	}
	nw, err := NewWriter(w, d, shape)
	if err != nil {
		return err
	}
	if _, err := nw.Write(data); err != nil {
		return err
	}
	return nw.Close()
}

// WriteFile writes a whole .npy file (see Write). On error the file is removed.
func WriteFile(path string, d dtype.DType, shape []int64, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = Write(f, d, shape, data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

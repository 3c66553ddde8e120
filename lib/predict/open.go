package predict

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/apr-go/apr/lib/cleanup"
)

// Open reads features from r in the format its first bytes show (Sniff): CSV,
// .npy, or an .npz archive's member (see NPZRows), which needs random access: a
// regular file is read in place, a pipe is spooled to a temporary file in tempDir
// first. name is used in errors; features, the model's feature count, caps CSV lines
// (NewCSVRows). close releases what Open holds (not r).
func Open(r io.Reader, name string, features int, member, tempDir string) (rows Rows, f Format, close func(), err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	prefix, _ := br.Peek(8)
	f = Sniff(prefix)
	if member != "" && f != NPZ {
		return nil, f, nil, fmt.Errorf("%s: an array name is for .npz features; these are %v", name, f)
	}
	nop := func() {}
	switch f {
	case NPY:
		rows, err = NewNPYRows(br, name)
		return rows, f, nop, err
	case CSV:
		c, err := NewCSVRows(br, features)
		if err != nil {
			return nil, f, nil, fmt.Errorf("%s: %w", name, err)
		}
		return c, f, nop, nil
	}
	if file, ok := r.(*os.File); ok {
		if fi, err := file.Stat(); err == nil && fi.Mode().IsRegular() {
			if off, err := file.Seek(0, io.SeekCurrent); err == nil && off == int64(br.Buffered()) {
				rows, c, err := NPZRows(file, fi.Size(), name, member)
				if err != nil {
					return nil, f, nil, err
				}
				return rows, f, func() { c.Close() }, nil
			}
		}
	}
	spool, remove, err := cleanup.CreateTemp(tempDir, "apr-predict-*.npz")
	if err != nil {
		return nil, f, nil, fmt.Errorf("spool file for %s: %w", name, err)
	}
	size, err := io.Copy(spool, br)
	if err != nil {
		remove()
		return nil, f, nil, fmt.Errorf("%s: %w", name, err)
	}
	rows, c, err := NPZRows(spool, size, name, member)
	if err != nil {
		remove()
		return nil, f, nil, err
	}
	return rows, f, func() { c.Close(); remove() }, nil
}

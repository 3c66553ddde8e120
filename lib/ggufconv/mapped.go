package ggufconv

import (
	"io"
	"os"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/internal/mmap"
)

// mapReader reads a file from a read-only mapping of it. Tensor bytes are copied
// once, from the page cache into the consumer's buffer, instead of twice (read()
// into a buffer, then the consumer's copy or write), and the pages already read leave
// the resident set every dropEvery bytes, so a multi-gigabyte file is imported in
// bounded memory. It is the same sequential reader as the file itself, so the
// streaming checks (offset order, padding, truncation, trailing bytes) are unchanged.
type mapReader struct {
	f       *os.File
	m       []byte
	pos     int
	dropped int // m[:dropped] has been dropped (a multiple of the page size)
	taken   int // where the slice of the last TakeMapped began
}

// dropEvery is how many bytes mapReader reads between two DropPages.
const dropEvery = 8 << 20

var pageSize = os.Getpagesize()

// mapFile maps f, a regular file, for a mapReader positioned at f's current offset.
// ok is false where the platform cannot map or mapping fails: read f instead.
func mapFile(f *os.File) (r *mapReader, ok bool) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, false
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil || pos > st.Size() {
		return nil, false
	}
	m, ok := mmap.Map(f, st.Size())
	if !ok {
		return nil, false
	}
	return &mapReader{f: f, m: m, pos: int(pos), dropped: int(pos) &^ (pageSize - 1)}, true
}

func (r *mapReader) Read(p []byte) (int, error) {
	if r.pos >= len(r.m) {
		r.drop()
		return 0, io.EOF
	}
	n := copy(p, r.m[r.pos:])
	r.pos += n
	if r.pos-r.dropped >= dropEvery {
		r.drop()
	}
	return n, nil
}

// WriteSpan writes the next n bytes (fewer at the end) to w as a slice of the
// mapping, without a copy, or as the file's pages when w can splice them
// (container.FileWriter); the pages of the spans before it leave the resident set
// (gguf.Spanner).
func (r *mapReader) WriteSpan(w io.Writer, n int) (int, error) {
	r.drop()
	b := r.m[r.pos:min(r.pos+n, len(r.m))]
	if len(b) == 0 {
		return 0, nil
	}
	m, err := container.WriteFileBytes(w, b, r.f, int64(r.pos))
	r.pos += m
	return m, err
}

// TakeMapped returns the next n bytes as a slice of the mapping and moves past them,
// or nil when fewer are left (gguf.Mapper); their pages are given back by
// ReleaseMapped, as the consumer is done with them, not by the reads that follow.
func (r *mapReader) TakeMapped(n int) []byte {
	if n <= 0 || len(r.m)-r.pos < n {
		return nil
	}
	r.taken, r.pos = r.pos, r.pos+n
	return r.m[r.taken:r.pos]
}

// ReleaseMapped drops the whole pages of the first n bytes TakeMapped returned.
func (r *mapReader) ReleaseMapped(n int) {
	end := min(r.taken+n, r.pos) &^ (pageSize - 1)
	if end > r.dropped {
		mmap.DropPages(r.m, int64(r.dropped), int64(end))
		r.dropped = end
	}
}

// ReadByte serves the header decoder and the check for bytes after the data.
func (r *mapReader) ReadByte() (byte, error) {
	if r.pos >= len(r.m) {
		r.drop()
		return 0, io.EOF
	}
	r.pos++
	return r.m[r.pos-1], nil
}

// drop gives the whole pages read so far back to the kernel (they stay in the page
// cache).
func (r *mapReader) drop() {
	end := r.pos &^ (pageSize - 1)
	if r.pos >= len(r.m) {
		end = len(r.m) // the last, partial page too
	}
	if end > r.dropped {
		mmap.DropPages(r.m, int64(r.dropped), int64(end))
		r.dropped = end
	}
}

// unmap releases the mapping; reads after it see the end of the input.
func (r *mapReader) unmap() error {
	m := r.m
	r.m, r.pos = nil, 0
	return mmap.Unmap(m)
}

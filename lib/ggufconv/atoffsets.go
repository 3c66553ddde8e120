package ggufconv

import (
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stream"
)

// exportAtOffsets writes the GGUF of a stream whose tensor table lists every tensor but
// in another order than the file's (a preset's tensors, which llama-quantize orders by
// layer), to a regular file: the header is planned from the table and each tensor's
// bytes are written at their place in the file as they arrive (pwrite), so that no
// spool is needed. Every byte of the result is written (header, data, the padding
// after each tensor), so it equals what a sequential write gives, from f's current
// offset on; f's offset is left at the end.
func exportAtOffsets(f container.PatchFile, s stream.Stream, h container.Header) error {
	table, _ := llamaQuantizeOrder(h.Table, make([]span, len(h.Table)))
	gh, err := Plan(h, table)
	if err != nil {
		return err
	}
	if err := gh.Layout(); err != nil {
		return err
	}
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	var head bytes.Buffer
	if _, err := gguf.NewWriter(&head, gh); err != nil {
		return err
	}
	if _, err := f.WriteAt(head.Bytes(), start); err != nil {
		return err
	}
	at := make(map[string]int, len(table))
	for i, t := range table {
		at[t.Name] = i
	}
	align := gh.Alignment
	var end int64 = gh.DataOffset
	done := make([]bool, len(table))
	buf := make([]byte, 1<<20)
	zeros := make([]byte, align)
	for {
		info, r, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		i, ok := at[info.Name]
		if !ok || done[i] {
			return fmt.Errorf("tensor %q: not in the stream's tensor table (%d tensors), or twice in the stream", info.Name, len(table))
		}
		want := table[i]
		if info.DType != want.DType || !slices.Equal(info.Shape, want.Shape) {
			return fmt.Errorf("tensor %q is %v %v, the stream's tensor table says %v %v", info.Name, info.DType, info.Shape, want.DType, want.Shape)
		}
		size, _ := want.RawSize() // Plan checked it
		off := start + gh.DataOffset + gh.Tensors[i].Offset
		if err := copyTensor(io.NewOffsetWriter(f, off), r, buf, info.Name, size); err != nil {
			return err
		}
		pad := (align - size%align) % align
		if _, err := f.WriteAt(zeros[:pad], off+size); err != nil {
			return err
		}
		end = max(end, gh.DataOffset+gh.Tensors[i].Offset+size+pad)
		done[i] = true
	}
	if i := slices.Index(done, false); i >= 0 {
		return fmt.Errorf("tensor %q: in the stream's tensor table but not in the stream", table[i].Name)
	}
	_, err = f.Seek(start+end, io.SeekStart)
	return err
}

package stream

import (
	"io"

	"github.com/apr-go/apr/lib/container"
)

// Reencode copies every tensor of src into a new APR v2 stream on dst with the given
// writer options (compression, shuffle, workers). edit, when not nil, may change the
// header (metadata edits) before it is written; keepBlocks copies the input's
// signature and license blocks, which stay valid across re-compression because they
// cover the tensors' content, not their encoding.
func Reencode(dst io.Writer, src Stream, edit func(*container.Header), keepBlocks bool, opts ...container.Option) error {
	h := src.Header()
	if !keepBlocks {
		h.Flags &^= container.FlagSigned | container.FlagLicensed
	}
	if edit != nil {
		edit(&h)
	}
	w, err := container.NewWriter(dst, h, opts...)
	if err != nil {
		return err
	}
	if err := Copy(w, src); err != nil {
		return err
	}
	if keepBlocks {
		for _, b := range src.Blocks() {
			if err := w.AddBlock(b); err != nil {
				return err
			}
		}
	}
	return w.Close()
}

package stream

import (
	"io"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/internal/iocount"
)

// Check reads a whole APR v2 stream or aprender file from r and verifies every
// checksum on the way, decompressing every chunk. Sealed tensors are checked by their
// chunk CRCs, which cover the ciphertext, so no key is needed. It returns the number of
// tensors and of bytes read.
func Check(r io.Reader) (tensors int, size int64, err error) {
	cr := &iocount.Reader{R: r}
	s, err := Open(cr)
	if err != nil {
		return 0, cr.N, err
	}
	defer s.Close()
	err = Each(s, func(_ container.TensorInfo, tr io.Reader) error {
		tensors++
		if t, ok := tr.(*container.Tensor); ok && t.Encrypted {
			return nil // Next checks a sealed tensor's chunk CRCs when it moves on
		}
		_, err := io.Copy(io.Discard, tr)
		return err
	})
	return tensors, cr.N, err
}

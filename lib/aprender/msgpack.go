package aprender

import (
	"errors"

	"github.com/apr-go/apr/lib/internal/mpwalk"
)

// decodeMsgpackMap decodes b, which must hold exactly one MessagePack map, with the
// library's hostile walker (lib/internal/msgpack: every claimed length is checked
// against the bytes left before anything is allocated, nesting is capped, extension
// types are refused). base is the file offset of b[0], for errors.
func decodeMsgpackMap(b []byte, base int64) (map[string]any, error) {
	m, err := mpwalk.Decode(b)
	var e *mpwalk.Error
	if errors.As(err, &e) {
		fe := &FormatError{Layout: LayoutAPRN, Offset: base + int64(e.Pos), Field: "metadata", Msg: e.Msg}
		if e.Truncated {
			fe.Err = ErrTruncated
		}
		return nil, fe
	}
	return m, err
}

// Package source opens a model in any format apr reads (an APR file or stream, a GGUF
// file or split set, a SafeTensors file, a Hugging Face checkpoint directory) as a
// tensor stream, telling the formats apart by content, not by name.
//
// A program that imports, converts and exports in one process (apr-quant TYPE
// model.gguf -o out.gguf) must give the bytes of the pipe of the programs that each
// do one step (apr-gguf import | apr-quant | apr-gguf export). Between two programs a
// stream's header crosses the pipe as an APR header: its metadata is encoded as
// MessagePack and decoded again, and the reader reports only the flags a producer
// declares. Piped gives a stream that header, so the next step (quant.New, the GGUF
// export) sees what it would see at the other end of the pipe; the tensor bytes go
// through untouched.
package source

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/stconv"
	"github.com/apr-go/apr/lib/stream"
)

// Kind is the format of a model input.
type Kind int

// The formats apr reads. APR covers aprender's files too (apr.OpenStream reads them).
const (
	APR         Kind = iota // APR (or aprender) file or stream
	GGUF                    // GGUF file (the first part of a split set: the set)
	SafeTensors             // one .safetensors file
	Checkpoint              // Hugging Face checkpoint: a directory, or its index .json
)

func (k Kind) String() string {
	switch k {
	case GGUF:
		return "GGUF"
	case SafeTensors:
		return "SafeTensors"
	case Checkpoint:
		return "checkpoint"
	}
	return "APR"
}

// SniffLen is how many leading bytes Sniff looks at: room for white space before a
// SafeTensors header's '{'.
const SniffLen = 64

// Sniff tells the format of a file or stream from its first bytes (up to SniffLen;
// fewer when it is shorter): "GGUF" is a GGUF file; a little-endian header length
// below 1 GiB followed by '{' is SafeTensors' JSON header, after JSON white space
// (which the safetensors crate's JSON parser skips) or a UTF-8 byte order mark
// (which it refuses; the SafeTensors reader then says so); anything else is left to
// the APR reader, which reads APR and aprender's files and names what it finds when
// it is neither (a NumPy file, a zip).
func Sniff(b []byte) Kind {
	switch {
	case len(b) >= 4 && string(b[:4]) == "GGUF":
		return GGUF
	case len(b) >= 9 && binary.LittleEndian.Uint64(b) < 1<<30:
		json := bytes.TrimLeft(b[8:], " \t\r\n")
		if len(json) > 0 && json[0] == '{' || bytes.HasPrefix(b[8:], []byte("\xef\xbb\xbf")) {
			return SafeTensors
		}
	}
	return APR
}

// KindOf tells the format of the input at path: a directory, or a .json file (a
// checkpoint's index), is a checkpoint; a regular file is sniffed. Other files (a FIFO)
// are APR here: their first bytes cannot be read without consuming them; open them
// with OpenReader.
func KindOf(path string) (Kind, error) {
	st, err := os.Stat(path)
	if err != nil {
		return APR, err
	}
	switch {
	case st.IsDir():
		return Checkpoint, nil
	case !st.Mode().IsRegular():
		return APR, nil
	case strings.HasSuffix(path, ".json"):
		return Checkpoint, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return APR, err
	}
	defer f.Close()
	b := make([]byte, SniffLen)
	n, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return APR, err
	}
	return Sniff(b[:n]), nil
}

// Options are the importers' options.
type Options struct {
	// Set, when not nil, is told the parts of a GGUF split set (ggufconv.ImportOptions.Set).
	Set func(parts []string)
	// SafeTensors are the options of a SafeTensors or checkpoint import (apr-st
	// import's flags); a GGUF or APR input ignores them.
	SafeTensors stconv.ImportOptions
}

// Open imports the GGUF, SafeTensors or checkpoint input at path as apr-gguf import
// and apr-st import do with a file argument (and their default options), and returns
// it Piped. An APR input is not opened here (its readers take options of their own,
// such as mapping in quant.MapFile): Open returns a nil stream and kind APR for it.
func Open(path string, o Options) (stream.Stream, Kind, error) {
	k, err := KindOf(path)
	if err != nil {
		return nil, k, err
	}
	var s stream.Stream
	switch k {
	case APR:
		return nil, k, nil
	case GGUF:
		s, err = ggufconv.OpenFile(path, ggufconv.ImportOptions{Set: o.Set})
	default:
		s, err = stconv.Open(path, o.SafeTensors)
	}
	if err != nil {
		return nil, k, err
	}
	p, err := Piped(s)
	if err != nil {
		s.Close()
		return nil, k, err
	}
	return p, k, nil
}

// OpenReader imports a GGUF or SafeTensors stream from r (stdin) as apr-gguf import
// and apr-st import do (o.SafeTensors for the latter), and returns it Piped. For an APR stream it returns a nil
// stream, kind APR, and the reader to give the APR reader in place of r (the bytes
// looked at are not lost). A regular *os.File (a redirection) is looked at in place,
// so the importers can map it; name is its name in messages ("stdin").
func OpenReader(r io.Reader, name string, o Options) (stream.Stream, Kind, io.Reader, error) {
	var head []byte
	if f, ok := r.(*os.File); ok && isRegular(f) {
		off, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, APR, r, err
		}
		b := make([]byte, SniffLen)
		n, err := f.ReadAt(b, off)
		if err != nil && err != io.EOF {
			return nil, APR, r, fmt.Errorf("%s: %w", name, err)
		}
		head = b[:n]
	} else {
		br := bufio.NewReaderSize(r, 64<<10)
		b, err := br.Peek(SniffLen)
		if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, APR, br, fmt.Errorf("%s: %w", name, err)
		}
		head, r = b, br
	}
	k := Sniff(head)
	var s stream.Stream
	var err error
	switch k {
	case APR:
		return nil, k, r, nil
	case GGUF:
		s, err = ggufconv.NewStream(r, ggufconv.ImportOptions{Name: name})
	default:
		if f, ok := r.(*os.File); ok {
			s, err = stconv.OpenFile(f, name, o.SafeTensors) // takes f, as apr-st import takes stdin
		} else {
			s, err = stconv.NewStream(r, o.SafeTensors)
		}
	}
	if err != nil {
		return nil, k, nil, named(name, err)
	}
	p, err := Piped(s)
	if err != nil {
		s.Close()
		return nil, k, nil, named(name, err)
	}
	return p, k, nil, nil
}

func isRegular(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode().IsRegular()
}

// named prefixes err with the input's name unless it already names it.
func named(name string, err error) error {
	if strings.Contains(err.Error(), name) {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Piped returns s with the header a reader at the other end of a pipe would report
// for it: the metadata encoded as the APR writer encodes it and decoded as the
// reader decodes it, only the flags a producer declares (signed, licensed,
// quantized), and the same tensor table. Metadata the writer would refuse (over its
// cap) is refused here too. Closing the result closes s.
func Piped(s stream.Stream) (stream.Stream, error) {
	h := s.Header()
	b, err := h.Metadata.Encode()
	if err != nil {
		return nil, err
	}
	md, err := container.DecodeMetadata(b)
	if err != nil {
		return nil, err
	}
	h.Metadata = *md
	h.Flags &= container.FlagSigned | container.FlagLicensed | container.FlagQuantized
	return &piped{Stream: s, h: h}, nil
}

type piped struct {
	stream.Stream
	h container.Header
}

func (p *piped) Header() container.Header { return p.h }

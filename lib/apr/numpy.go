package apr

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/npy"
)

// NumPyStream returns a Stream over NumPy files: each .npy file is one tensor named
// after the file (without directory and extension); each .npz entry is one tensor
// named after the entry. Files are opened one at a time as the stream advances, and
// data streams from disk, so memory stays bounded whatever the array sizes.
// Big-endian arrays are converted to little-endian; Fortran-order arrays are refused.
func NumPyStream(h container.Header, paths []string) (Stream, error) {
	for _, p := range paths {
		switch strings.ToLower(filepath.Ext(p)) {
		case ".npy", ".npz":
		default:
			return nil, fmt.Errorf("%s: not a .npy or .npz file", p)
		}
	}
	return &npyStream{h: h, paths: paths, seen: map[string]string{}}, nil
}

type npyStream struct {
	h       container.Header
	paths   []string
	seen    map[string]string // tensor name -> file it came from
	closers []io.Closer
	zip     *npy.NPZFile
	entries []npy.NPZEntry
	zipPath string
}

func (s *npyStream) Header() container.Header  { return s.h }
func (s *npyStream) Blocks() []container.Block { return nil }

func (s *npyStream) Close() error {
	for _, c := range s.closers {
		c.Close()
	}
	s.closers = nil
	if s.zip != nil {
		s.zip.Close()
		s.zip = nil
	}
	return nil
}

func (s *npyStream) Next() (container.TensorInfo, io.Reader, error) {
	for _, c := range s.closers { // the previous tensor is done
		c.Close()
	}
	s.closers = nil
	for len(s.entries) == 0 {
		if s.zip != nil {
			s.zip.Close()
			s.zip = nil
		}
		if len(s.paths) == 0 {
			return container.TensorInfo{}, nil, io.EOF
		}
		p := s.paths[0]
		s.paths = s.paths[1:]
		if strings.EqualFold(filepath.Ext(p), ".npy") {
			return s.openNPY(p)
		}
		z, err := npy.OpenNPZFile(p)
		if err != nil {
			return container.TensorInfo{}, nil, err
		}
		s.zip, s.zipPath, s.entries = z, p, z.Entries()
	}
	e := s.entries[0]
	s.entries = s.entries[1:]
	if err := s.claim(e.Name, s.zipPath); err != nil {
		return container.TensorInfo{}, nil, err
	}
	a, err := s.zip.Open(e.Name)
	if err != nil {
		return container.TensorInfo{}, nil, err
	}
	s.closers = append(s.closers, a)
	return container.TensorInfo{Name: e.Name, DType: e.Header.DType, Shape: e.Header.Shape}, a, nil
}

func (s *npyStream) openNPY(p string) (container.TensorInfo, io.Reader, error) {
	name := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
	if err := s.claim(name, p); err != nil {
		return container.TensorInfo{}, nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return container.TensorInfo{}, nil, err
	}
	s.closers = append(s.closers, f)
	r, err := npy.NewReader(f, p)
	if err != nil {
		return container.TensorInfo{}, nil, err
	}
	h := r.Header()
	return container.TensorInfo{Name: name, DType: h.DType, Shape: h.Shape}, r, nil
}

func (s *npyStream) claim(name, from string) error {
	if prev, ok := s.seen[name]; ok {
		return fmt.Errorf("tensor %q comes from both %s and %s", name, prev, from)
	}
	s.seen[name] = from
	return nil
}

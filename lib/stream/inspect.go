package stream

import (
	"fmt"
	"io"

	"github.com/apr-go/apr/lib/aprender"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/internal/regfile"
)

// Info describes a model file without its weights.
type Info struct {
	Format string // "APR v2", or the aprender layout name
	*container.Info
}

// Inspect reports type, version, flags, sizes, metadata and tensor list. For an APR v2
// file it reads only header, metadata, footer and index; aprender files are read whole
// (their layouts have no index at the end).
func Inspect(path string) (*Info, error) {
	if !IsAprenderFile(path) {
		ci, err := container.Inspect(path)
		if err != nil {
			return nil, err
		}
		return &Info{Format: "APR v2", Info: ci}, nil
	}
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := aprender.ReadAll(f)
	if err != nil {
		return nil, err
	}
	info, err := InspectAprender(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}

// InspectAprender describes an aprender file held in memory.
func InspectAprender(b []byte) (*Info, error) {
	af, err := aprender.Read(b)
	if err != nil {
		return nil, AprenderError(err)
	}
	md, err := container.MetadataFromMap(af.Metadata)
	if err != nil { // aprender's JSON may type a well-known key differently: keep it verbatim
		md = &container.Metadata{Extra: af.Metadata}
	}
	var major, minor uint8
	fmt.Sscanf(af.Version, "%d.%d", &major, &minor)
	ci := &container.Info{Size: int64(len(b))}
	ci.Major, ci.Minor, ci.Type, ci.Metadata = major, minor, af.ModelType, md
	for _, t := range af.Tensors {
		ci.Tensors = append(ci.Tensors, container.Entry{
			TensorInfo: container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape},
			RawSize:    int64(len(t.Data)), StoredSize: int64(len(t.Data)),
		})
	}
	return &Info{Format: af.Layout, Info: ci}, nil
}

// InspectReader describes a model read from a stream that cannot seek: an APR v2
// stream is read through to its end (checking every record and chunk CRC, decompressing
// nothing); an aprender file is read whole.
func InspectReader(r io.Reader) (*Info, error) {
	br, whole, err := sniff(r)
	if err != nil {
		return nil, err
	}
	if whole != nil {
		return InspectAprender(whole)
	}
	ci, err := container.InspectStream(br)
	if err != nil {
		return nil, err
	}
	return &Info{Format: "APR v2", Info: ci}, nil
}

// IsAprenderFile reports whether the file at path starts like one of aprender's layouts; every
// other file goes to the APR v2 reader, whose errors say what an APR file needs.
func IsAprenderFile(path string) bool {
	f, err := regfile.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [5]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false
	}
	_, ok := aprender.Detect(b[:])
	return ok
}

// AprenderError maps aprender's checksum error onto container's, so that a damaged
// file of any layout fails with one error type.
func AprenderError(err error) error {
	if ce, ok := err.(*aprender.ChecksumError); ok {
		return &container.ChecksumError{What: ce.What, Offset: ce.Offset, Expected: ce.Expected, Actual: ce.Actual}
	}
	return err
}

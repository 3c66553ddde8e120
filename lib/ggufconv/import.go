package ggufconv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/internal/regfile"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/version"
)

// ImportOptions controls an import.
type ImportOptions struct {
	// Name is the input's name in error messages ("stdin", a path).
	Name string
	// Limits caps what the GGUF reader accepts (zero fields: gguf.DefaultLimits).
	Limits gguf.Limits
	// Digest records the SHA-256 of a file source (OpenFile) in the provenance. It
	// costs one extra read of the file, and SHA-256 (about 1.3 GB/s on one core) is
	// slower than the conversion, so it is off unless asked for.
	Digest bool
	// Set, when not nil, is called with the paths of a split set's parts, in order,
	// once every part has been checked (OpenFile, ImportFile of a first part).
	Set func(parts []string)
}

// NewStream reads a GGUF file from r, which may be a pipe, and returns it as a tensor
// stream: the header is read and checked at once, tensor data then streams from r in
// bounded memory. A pipe has no digest in the provenance (it would be known only after
// the APR metadata has gone out). When r is a regular *os.File (a redirected stdin),
// the rest of it is read from a read-only mapping, as OpenFile does. Close does not
// close r.
func NewStream(r io.Reader, o ImportOptions) (stream.Stream, error) {
	var s *importStream
	var err error
	if f, ok := r.(*os.File); ok {
		s, err = fileStream(f, o, nil)
	} else {
		s, err = newStream(r, o, nil)
	}
	if err != nil {
		return nil, err
	}
	// A split set's parts are found by the first part's name, which a reader lacks.
	if si, ok, err := splitOf(s.gh); err != nil || ok {
		s.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		return nil, pipedPart(s.name, si)
	}
	return s, nil
}

// OpenFile opens the GGUF file at path as a tensor stream. With o.Digest, it also
// reads the whole file once for the SHA-256 recorded in the provenance.
//
// When the file is the first part of a split set (llama.cpp's gguf-split, named
// PREFIX-00001-of-NNNNN.gguf, split.count > 1), the stream is the whole set's, the one
// of the merged file: every part is found by name and checked (split.no,
// split.count, split.tensors.count, the tensors and the size of each) before the
// stream is returned, the split keys are left out of the KVs, and the provenance
// lists the parts under ProvFiles (with their SHA-256s under o.Digest) instead of a
// single file's size and digest. A later part is an error that names the first.
//
// Where the platform allows, the file is read from a read-only mapping (see
// mapReader); the file must then not be truncated by another process during the
// import (the mapped pages would be gone: the process faults).
func OpenFile(path string, o ImportOptions) (stream.Stream, error) {
	if o.Name == "" {
		o.Name = path
	}
	f, err := openInput(path, o)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s, err := fileStream(f, o, nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.closer, s.file = f, f
	if !st.Mode().IsRegular() {
		return pipedFile(s)
	}
	if set, ok, err := maybeSet(s, path, o, ""); ok || err != nil {
		return set, err
	}
	prov := s.hdr.Metadata.Provenance
	prov[ProvSize] = st.Size()
	if o.Digest {
		d, err := hashFile(f, st.Size(), nil)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: %w", o.Name, err)
		}
		prov[ProvSHA256] = d
	}
	return s, nil
}

// openInput opens the GGUF file at path. A path that is not a regular file (a FIFO
// such as <(...) makes) is read as stdin is (pipedFile), unless a digest is asked
// for: that would be known only after the metadata has gone out, so the path is
// then opened with regfile, which refuses it without waiting for a writer.
func openInput(path string, o ImportOptions) (*os.File, error) {
	if !o.Digest {
		return os.Open(path)
	}
	f, err := regfile.Open(path)
	if nr := (*regfile.NotRegularError)(nil); errors.As(err, &nr) {
		return nil, fmt.Errorf("%w: a digest needs a file (a stream's would be known only after the metadata has gone out)", err)
	}
	return f, err
}

// pipedFile is the stream of a path that is not a regular file, checked as NewStream
// checks stdin: no size in the provenance, and no split set (its other parts are
// files found beside a first part that is one).
func pipedFile(s *importStream) (stream.Stream, error) {
	if si, ok, err := splitOf(s.gh); err != nil || ok {
		s.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		return nil, fmt.Errorf("%s: holds part %d of a split GGUF set of %d parts (split.no, split.count), but is not a regular file: give the parts as files", s.name, si.no+1, si.count)
	}
	return s, nil
}

// fileStream is newStream of f from its current offset, read from a mapping of f
// where one can be made, else with read(). Close releases the mapping, not f.
func fileStream(f *os.File, o ImportOptions, prov map[string]any) (*importStream, error) {
	m, ok := mapFile(f)
	if !ok {
		return newStream(f, o, prov)
	}
	s, err := newStream(m, o, prov)
	if err != nil {
		m.unmap()
		return nil, err
	}
	s.mapped = m
	return s, nil
}

type importStream struct {
	name   string
	hdr    container.Header
	gh     *gguf.Header
	br     io.ByteReader
	dr     *gguf.DataReader
	mapped *mapReader // the input, when it is a mapping: released by Close
	closer io.Closer
	file   *os.File // the input file, when opened by path
	done   bool
	err    error
}

func newStream(r io.Reader, o ImportOptions, prov map[string]any) (*importStream, error) {
	name := o.Name
	if name == "" {
		name = "stdin"
	}
	br, data := sources(r)
	gh, err := o.Limits.ReadHeader(br)
	if err != nil {
		return nil, named(name, err)
	}
	s, err := headerStream(name, gh, prov)
	if err != nil {
		return nil, err
	}
	if err := s.attach(br, data); err != nil {
		return nil, err
	}
	return s, nil
}

// sources returns the reader a GGUF file's header is read from and the reader of the
// data after it, both at r's position: a mapping is read in place, anything else
// through one buffer, which the tensor data bypasses (directReader).
func sources(r io.Reader) (br byteReader, data io.Reader) {
	if m, ok := r.(*mapReader); ok {
		return m, m
	}
	b := bufio.NewReaderSize(r, 1<<20)
	return b, &directReader{br: b, r: r}
}

type byteReader interface {
	io.Reader
	io.ByteReader
}

// headerStream is the stream of the GGUF header gh, read from the input name, without
// its data yet (attach): the APR header and, as the GGUF header lists every tensor,
// the APR stream's tensor table, in the order the data comes.
func headerStream(name string, gh *gguf.Header, prov map[string]any) (*importStream, error) {
	hdr, err := importHeader(gh, prov)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	order, err := gguf.NewDataReader(nil, gh) // the data order; overlaps refused now
	if err != nil {
		return nil, named(name, err)
	}
	hdr.Table = make([]container.TensorInfo, 0, len(gh.Tensors))
	for _, i := range order.Order() {
		ti := &gh.Tensors[i]
		d, _ := ti.Type.DType() // importHeader checked every type
		hdr.Table = append(hdr.Table, container.TensorInfo{Name: ti.Name, DType: d, Shape: ti.Shape()})
	}
	return &importStream{name: name, hdr: hdr, gh: gh}, nil
}

// attach gives s its data: br positioned at the data section, data reading the same
// bytes (see sources).
func (s *importStream) attach(br io.ByteReader, data io.Reader) error {
	dr, err := gguf.NewDataReader(data, s.gh)
	if err != nil {
		return named(s.name, err)
	}
	s.br, s.dr = br, dr
	return nil
}

// directReader reads through br while it holds bytes and straight from r, the reader
// under br, once it is empty and the caller asks for at least 64 KiB: tensor data is
// not copied through the buffer first.
type directReader struct {
	br *bufio.Reader
	r  io.Reader
}

func (d *directReader) Read(p []byte) (int, error) {
	if len(p) >= 64<<10 && d.br.Buffered() == 0 {
		return d.r.Read(p)
	}
	return d.br.Read(p)
}

// named puts the input's name into a gguf error that lacks one.
func named(name string, err error) error {
	var ge *gguf.Error
	if errors.As(err, &ge) && ge.Path != "" {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// importHeader builds the APR header of a GGUF file: model type, flags and metadata.
func importHeader(gh *gguf.Header, prov map[string]any) (container.Header, error) {
	created, err := container.CreatedAt()
	if err != nil {
		return container.Header{}, err
	}
	md := container.Metadata{CreatedAt: created, Producer: version.Producer,
		Extra: map[string]any{KeyGGUF: gguf.EncodeKVs(gh.Version, gh.KVs)}}
	p := map[string]any{"source_format": SourceFormat, "source_version": int64(gh.Version)}
	for k, v := range prov {
		p[k] = v
	}
	md.Provenance = p
	str := func(key string) string {
		v, _ := gh.Get(key)
		s, _ := v.AsString()
		return s
	}
	md.Name, md.Description, md.License = str(KeyName), str(KeyDescription), str(KeyLicense)
	h := container.Header{Type: modeltype.Custom, Metadata: md}
	if t, ok := archType(str(KeyArchitecture)); ok {
		h.Type = t
		prefix := str(KeyArchitecture) + "."
		cfg := map[string]any{}
		for _, kv := range gh.KVs {
			if k, ok := strings.CutPrefix(kv.Key, prefix); ok && k != "" {
				cfg[k] = kvToConfig(kv.Value)
			}
		}
		if len(cfg) > 0 {
			h.Metadata.ModelConfig = cfg
		}
	}
	for i := range gh.Tensors {
		ti := &gh.Tensors[i]
		d, ok := ti.Type.DType()
		if !ok {
			return container.Header{}, fmt.Errorf("tensor %q: ggml type %v has no apr dtype", ti.Name, ti.Type)
		}
		if d.Info().Quantized() {
			h.Flags |= container.FlagQuantized
		}
	}
	return h, nil
}

// archType maps general.architecture "apr_<type>" to the apr model type.
func archType(arch string) (modeltype.Type, bool) {
	name, ok := strings.CutPrefix(arch, ArchPrefix)
	if !ok {
		return 0, false
	}
	for _, t := range modeltype.Types() {
		if strings.ToLower(t.String()) == name {
			return t, true
		}
	}
	return 0, false
}

// Arch returns the general.architecture of an apr model type: "apr_" and the type's
// registry name in lower case ("apr_linearregression").
func Arch(t modeltype.Type) string { return ArchPrefix + strings.ToLower(t.String()) }

func (s *importStream) Header() container.Header { return s.hdr }

// GGUF returns the GGUF header that was read.
func (s *importStream) GGUF() *gguf.Header { return s.gh }

func (s *importStream) Next() (container.TensorInfo, io.Reader, error) {
	if s.err != nil {
		return container.TensorInfo{}, nil, s.err
	}
	if s.done {
		return container.TensorInfo{}, nil, io.EOF
	}
	i, r, err := s.dr.Next()
	if err == io.EOF {
		// The data section must be the end of the input: bytes after it would be lost.
		if _, err := s.br.ReadByte(); err != io.EOF {
			if err == nil {
				err = fmt.Errorf("%s: unexpected bytes after the data section (offset %d)", s.name, s.gh.DataOffset+s.gh.DataSize())
			} else {
				err = fmt.Errorf("%s: %w", s.name, err)
			}
			s.err = err
			return container.TensorInfo{}, nil, err
		}
		s.done = true
		return container.TensorInfo{}, nil, io.EOF
	}
	if err != nil {
		s.err = named(s.name, err)
		return container.TensorInfo{}, nil, s.err
	}
	ti := &s.gh.Tensors[i]
	d, _ := ti.Type.DType()
	info := container.TensorInfo{Name: ti.Name, DType: d, Shape: ti.Shape()}
	tr := &tensorReader{r: r, name: s.name}
	if in, ok := r.(container.InPlace); ok {
		return info, &inPlaceReader{tensorReader: tr, in: in}, nil
	}
	return info, tr, nil
}

// tensorReader names the input in a read error (a truncated file); the consumer
// names the tensor.
type tensorReader struct {
	r    io.Reader
	name string
}

func (t *tensorReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	return n, t.named(err)
}

func (t *tensorReader) named(err error) error {
	switch {
	case err == nil || err == io.EOF:
	case errors.Is(err, io.ErrUnexpectedEOF):
		// Not wrapped: consumers report an end of data in their own words and would
		// drop the input's name.
		err = fmt.Errorf("%s: the input ends inside the tensor data (truncated file)", t.name)
	default:
		err = fmt.Errorf("%s: %w", t.name, err)
	}
	return err
}

// inPlaceReader is a tensorReader over a mapped input's tensor, which the APR writer
// takes in place (container.InPlace).
type inPlaceReader struct {
	*tensorReader
	in container.InPlace
}

func (t *inPlaceReader) Len() int { return t.in.Len() }

// TakeMapped and ReleaseMapped lend the tensor in place when the input is mapped
// (gguf.Mapper): lib/quant's workers convert it where it is.
func (t *inPlaceReader) TakeMapped() []byte {
	if m, ok := t.in.(interface{ TakeMapped() []byte }); ok {
		return m.TakeMapped()
	}
	return nil
}

func (t *inPlaceReader) ReleaseMapped(n int) {
	if m, ok := t.in.(interface{ ReleaseMapped(int) }); ok {
		m.ReleaseMapped(n)
	}
}

func (t *inPlaceReader) WriteTo(w io.Writer) (int64, error) {
	n, err := t.in.WriteTo(w)
	return n, t.named(err)
}

func (s *importStream) Blocks() []container.Block { return nil }

func (s *importStream) Close() error {
	var err error
	if s.mapped != nil {
		err = s.mapped.unmap()
		s.mapped = nil
	}
	if s.closer != nil {
		err = errors.Join(err, s.closer.Close())
		s.closer = nil
	}
	return err
}

// Import converts a GGUF stream to an APR v2 stream on w (uncompressed unless opts
// say otherwise).
func Import(w io.Writer, s stream.Stream, opts ...container.Option) error {
	return stream.Write(w, s, opts...)
}

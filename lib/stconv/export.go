package stconv

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/cleanup"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/llm"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/safetensors"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// ExportOptions control an export.
type ExportOptions struct {
	// DType is the dtype quantized tensors are dequantized to: F32, F16, BF16 or F64.
	// Zero means each tensor's dtype before import (provenance "source_dtypes") when
	// it is one of those, else F32. Other tensors keep their dtype.
	DType dtype.DType
	// ShardSize, for ExportDir, is the largest shard in bytes (Hugging Face's
	// max_shard_size); zero writes one model.safetensors.
	ShardSize int64
	// TempDir is where a source that must be spooled is spooled ("" is os.TempDir()).
	TempDir string
	// Spooling, when not nil, is told why a stream source is spooled to a temporary
	// file instead of streamed (a program says so on stderr).
	Spooling func(reason string)
}

// Source is the APR input of an export: a seekable APR v2 file, whose index lists
// every tensor up front, or any tensor stream (a pipe, an aprender file), which is
// spooled.
type Source struct {
	hdr     container.Header
	f       io.ReaderAt // APR v2 file; nil for a stream
	size    int64
	entries []container.Entry
	s       stream.Stream
	closer  io.Closer
}

// OpenSource opens the APR file at path for export; a file that is not APR v2 (an
// aprender file) is read as a stream.
func OpenSource(path string) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	src, err := FileSource(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return src, nil
}

// FileSource is OpenSource for a file already open (a redirected stdin); it takes
// ownership of f. A file that is not a regular file is read as a stream.
func FileSource(f *os.File) (*Source, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	var magic [5]byte
	if st.Mode().IsRegular() {
		if _, err := f.ReadAt(magic[:], 0); err == nil && string(magic[:4]) == "APRN" && magic[4] == container.MajorVersion {
			cf, err := container.NewFile(f, st.Size())
			if err != nil {
				f.Close()
				return nil, err
			}
			fh := cf.Header()
			if fh.Flags&container.FlagEncrypted != 0 {
				f.Close()
				return nil, errors.New("the tensor data is sealed (encrypted): unseal it first (apr-seal unseal)")
			}
			h := container.Header{Type: fh.Type, Flags: fh.Flags, Metadata: *fh.Metadata}
			src, err := hfLayout(&Source{hdr: h, f: f, size: st.Size(), entries: cf.Entries(), closer: f})
			if err != nil {
				f.Close()
			}
			return src, err
		}
	}
	s, err := stream.Open(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	src, err := hfLayout(&Source{hdr: s.Header(), s: s, closer: closers{s, f}})
	if err != nil {
		s.Close()
		f.Close()
	}
	return src, err
}

// StreamSource exports a tensor stream (it is spooled). A language model imported from
// a checkpoint comes back in the checkpoint's layout, as with FileSource.
func StreamSource(s stream.Stream) *Source {
	src := &Source{hdr: s.Header(), s: s, closer: s}
	if hf, err := hfLayout(src); err == nil {
		return hf
	}
	return src // the metadata's GGUF keys are unreadable: export fails there, naming them
}

// hfLayout returns src in Hugging Face's layout when it is a language model imported
// from a checkpoint (its config files travel in the metadata) in llama.cpp's form
// (lib/llm): tensor names, Q/K rows and the dtype of 1-D tensors as the checkpoint had
// them. Any other source comes back as it is. A file source becomes a stream source.
func hfLayout(src *Source) (*Source, error) {
	if !HasFiles(src.hdr) {
		return src, nil
	}
	cp, ok, err := llm.FromMetadata(src.hdr.Metadata)
	if err != nil || !ok {
		return src, err
	}
	return hfSource(src, cp)
}

// hfSource is src, a language model in llama.cpp's form, as a stream in Hugging Face's
// layout.
func hfSource(src *Source, cp *llm.Checkpoint) (*Source, error) {
	s, closer := src.s, src.closer
	if s == nil {
		cr, err := container.NewReader(io.NewSectionReader(src.f, 0, src.size))
		if err != nil {
			return nil, err
		}
		s = stream.FromReader(cr)
		closer = closers{s, src.closer}
	}
	hs := cp.HFStream(s, HasFiles(src.hdr))
	return &Source{hdr: hs.Header(), s: hs, closer: closer}, nil
}

// Header returns the source's model type, flags and metadata.
func (s *Source) Header() container.Header { return s.hdr }

// Close releases the source.
func (s *Source) Close() error { return s.closer.Close() }

type closers []io.Closer

func (c closers) Close() error {
	var first error
	for _, x := range c {
		if err := x.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// outTensor is a tensor of the source and what it becomes in the export.
type outTensor struct {
	src  container.TensorInfo
	spec safetensors.TensorSpec
	size int64 // output bytes
}

// provider returns the output bytes of each tensor, asked for in the writer's order.
type provider interface {
	open(name string) (io.Reader, error)
	finish() error // after the last tensor: check the rest of the source
	close()
}

// Export writes src as one SafeTensors file to w: header, then the data, streamed.
// Checkpoint files kept in the metadata (hf_files) are not written; see ExportDir.
func Export(w io.Writer, src *Source, opts ExportOptions) error {
	meta, list, spooled, err := prepare(src, opts)
	if err != nil {
		return err
	}
	specs := specsOf(list)
	h, err := safetensors.Layout(meta, specs)
	if err != nil {
		closeProvider(spooled)
		return err
	}
	order := make([]string, len(h.Tensors))
	for i, t := range h.Tensors {
		order[i] = t.Name
	}
	p, err := src.provider(order, list, spooled, opts)
	if err != nil {
		return err
	}
	defer p.close()
	hb, err := h.MarshalHeader()
	if err != nil {
		return err
	}
	if _, err := w.Write(hb); err != nil {
		return err
	}
	buf := make([]byte, copyBuf)
	for _, t := range h.Tensors {
		r, err := p.open(t.Name)
		if err != nil {
			return err
		}
		if err := copyTensor(w, r, t.Name, t.Size(), h.DataStart()+t.Begin, buf); err != nil {
			return err
		}
	}
	return p.finish()
}

const copyBuf = 1 << 20

// copyTensor copies exactly size bytes of tensor name from r to w.
func copyTensor(w io.Writer, r io.Reader, name string, size, off int64, buf []byte) error {
	var n int64
	var err error
	if lr, ok := r.(*io.LimitedReader); ok {
		if _, isFile := lr.R.(*os.File); isFile {
			n, err = io.Copy(w, r) // lets the OS copy file to file (copy_file_range)
		}
	}
	if n == 0 && err == nil {
		n, err = io.CopyBuffer(struct{ io.Writer }{w}, r, buf)
	}
	if err != nil {
		return fmt.Errorf("tensor %q (output offset %d): %w", name, off, err)
	}
	if n != size {
		return fmt.Errorf("tensor %q (output offset %d): %d bytes of data, expected %d", name, off, n, size)
	}
	return nil
}

// ExportDir writes src as a Hugging Face checkpoint directory: model.safetensors, or
// with opts.ShardSize the shards model-00001-of-0000N.safetensors and
// model.safetensors.index.json (split as huggingface_hub splits them, tensors taken in
// the source's order), and the checkpoint files kept in the metadata. Everything is
// written into a temporary directory beside dir and moved into place only when
// complete; an existing dir keeps its other files, except stale shards and a stale
// index of an earlier export, which are removed.
//
// A language model in llama.cpp's form imported from a GGUF file (so without kept
// files) of an architecture lib/llm knows is written in Hugging Face's layout, with the
// config and tokenizer files generated from its GGUF key-values (llm.HFFiles).
func ExportDir(dir string, src *Source, opts ExportOptions) error {
	gen, err := fromGGUF(src)
	if err != nil {
		return err
	}
	files, err := keptFiles(src.hdr)
	if err != nil {
		return err
	}
	meta, list, spooled, err := prepare(src, opts)
	if err != nil {
		return err
	}
	if gen != nil {
		shapes := make([]llm.TensorShape, len(list))
		for i, t := range list {
			shapes[i] = llm.TensorShape{Name: t.spec.Name, DType: t.spec.DType, Shape: t.spec.Shape}
		}
		if files, err = gen.HFFiles(shapes); err != nil {
			closeProvider(spooled)
			return fmt.Errorf("writing the Hugging Face files: %w", err)
		}
	}
	specs := specsOf(list)
	limit := opts.ShardSize
	if limit <= 0 {
		limit = math.MaxInt64
	}
	plan, err := safetensors.PlanShards(specs, limit, meta)
	if err != nil {
		closeProvider(spooled)
		return err
	}
	var order []string
	for _, s := range plan.Shards {
		for _, t := range s.Header.Tensors {
			order = append(order, t.Name)
		}
	}
	p, err := src.provider(order, list, spooled, opts)
	if err != nil {
		return err
	}
	defer p.close()
	parent := filepath.Dir(filepath.Clean(dir))
	stage, removeStage, err := cleanup.MkdirTempPerm(parent, "."+filepath.Base(filepath.Clean(dir))+".tmp-", 0o777)
	if err != nil {
		return err
	}
	defer removeStage()
	if err := plan.WriteDir(stage, func(t safetensors.TensorInfo) (io.Reader, error) { return p.open(t.Name) }); err != nil {
		return err
	}
	if err := p.finish(); err != nil {
		return err
	}
	written := map[string]bool{}
	for _, s := range plan.Shards {
		written[s.File] = true
	}
	if plan.Index != nil {
		written[safetensors.IndexFileName] = true
	}
	for name, b := range files {
		if written[name] {
			return fmt.Errorf("metadata %s: file %q clashes with an output file", KeyFiles, name)
		}
		if err := os.WriteFile(filepath.Join(stage, name), b, 0o666); err != nil {
			return err
		}
		written[name] = true
	}
	return commitDir(stage, dir, written)
}

// fromGGUF turns src, when it is a language model in llama.cpp's form without kept
// checkpoint files (imported from a GGUF file) of an architecture lib/llm knows, into
// its Hugging Face layout in place, with safetensors' "format": "pt" metadata as
// transformers writes it, and returns the description the files are generated from.
// Any other source, and a GGUF without a tokenizer (a set of tensors rather than a
// model), is left as it is (nil).
func fromGGUF(src *Source) (*llm.Checkpoint, error) {
	if HasFiles(src.hdr) {
		return nil, nil
	}
	cp, ok, err := llm.FromMetadata(src.hdr.Metadata)
	if err != nil || !ok || !cp.HasVocab() {
		return nil, err
	}
	hf, err := hfSource(src, cp)
	if err != nil {
		return nil, err
	}
	if _, ok := hf.hdr.Metadata.Extra[KeyMetadata]; !ok {
		hf.hdr.Metadata.Extra[KeyMetadata] = []any{[]any{"format", "pt"}}
	}
	*src = *hf
	return cp, nil
}

var shardName = regexp.MustCompile(`^model-[0-9]{5}-of-[0-9]{5}\.safetensors$`)

// commitDir moves the staged files into dir.
func commitDir(stage, dir string, written map[string]bool) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return os.Rename(stage, dir) // made 0777 less the umask, as mkdir makes it
	}
	old, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for name := range written {
		if err := os.Rename(filepath.Join(stage, name), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	for _, e := range old {
		n := e.Name()
		if !written[n] && (n == safetensors.IndexFileName || n == safetensors.SingleFileName || shardName.MatchString(n)) {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// keptFiles returns the checkpoint files of the metadata, checking their names.
func keptFiles(h container.Header) (map[string][]byte, error) {
	v, ok := h.Metadata.Extra[KeyFiles]
	if !ok || v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("metadata %s: %T, expected a map of file name to bytes", KeyFiles, v)
	}
	out := make(map[string][]byte, len(m))
	for name, b := range m {
		if !KeepFile(name) {
			return nil, fmt.Errorf("metadata %s: refusing file name %q (only plain config and tokenizer file names)", KeyFiles, name)
		}
		switch x := b.(type) {
		case []byte:
			out[name] = x
		case string:
			out[name] = []byte(x)
		default:
			return nil, fmt.Errorf("metadata %s: file %q is %T, expected bytes", KeyFiles, name, b)
		}
	}
	return out, nil
}

// HasFiles reports whether h's metadata holds checkpoint files (which only ExportDir
// writes).
func HasFiles(h container.Header) bool {
	m, ok := h.Metadata.Extra[KeyFiles].(map[string]any)
	return ok && len(m) > 0
}

// ExportMetadata is the __metadata__ an export of a model with header h writes: the
// imported one, verbatim; else, for a model type other than Custom, its type and
// config; else none.
func ExportMetadata(h container.Header) (safetensors.Metadata, error) {
	if v, ok := h.Metadata.Extra[KeyMetadata]; ok && v != nil {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("metadata %s: %T, expected a list of [key, value] pairs", KeyMetadata, v)
		}
		meta := make(safetensors.Metadata, 0, len(list))
		for i, e := range list {
			pair, ok := e.([]any)
			if ok && len(pair) == 2 {
				k, ok1 := pair[0].(string)
				v, ok2 := pair[1].(string)
				if ok1 && ok2 {
					meta = append(meta, safetensors.MetadataEntry{Key: k, Value: v})
					continue
				}
			}
			return nil, fmt.Errorf("metadata %s: entry %d is not a [key, value] pair of strings", KeyMetadata, i)
		}
		return meta, nil
	}
	if h.Type == modeltype.Custom || h.Type == 0 {
		return nil, nil
	}
	return typeMetadata(h.Type, h.Metadata.ModelConfig)
}

// typeMetadata is {"apr.model_type": TYPE, "apr.model_config": JSON (sorted keys)}.
func typeMetadata(t modeltype.Type, cfg map[string]any) (safetensors.Metadata, error) {
	if cfg == nil {
		cfg = map[string]any{}
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("model config as JSON: %w", err)
	}
	return safetensors.Metadata{{Key: MetaModelType, Value: t.String()}, {Key: MetaModelConfig, Value: string(js)}}, nil
}

// prepare decides every tensor's output dtype and the __metadata__; a stream source
// is spooled on the way (spooled is then its provider).
func prepare(src *Source, opts ExportOptions) (safetensors.Metadata, []outTensor, provider, error) {
	switch opts.DType {
	case dtype.Invalid, dtype.F32, dtype.F16, dtype.BF16, dtype.F64:
	default:
		return nil, nil, nil, fmt.Errorf("cannot dequantize to %v: choose F32, F16, BF16 or F64", opts.DType)
	}
	meta, err := ExportMetadata(src.hdr)
	if err != nil {
		return nil, nil, nil, err
	}
	conv := converter{opts: opts}
	if m, ok := src.hdr.Metadata.Provenance[ProvDTypes].(map[string]any); ok {
		conv.source = m
	}
	infos := make([]container.TensorInfo, len(src.entries))
	for i, e := range src.entries {
		infos[i] = e.TensorInfo
	}
	if src.f == nil {
		if src.hdr.Table == nil {
			if opts.Spooling != nil {
				opts.Spooling("the input has no tensor table (an APR stream of format 2.0, or from a producer that did not know its tensors up front): spooling the tensors to a temporary file")
			}
			sp, err := newSpool(src.s, conv, opts.TempDir)
			if err != nil {
				return nil, nil, nil, err
			}
			return meta, sp.list, sp, nil
		}
		// The stream's tensor table lists what will come: the header can be planned
		// now, and the data streamed if it comes in the output's order (provider).
		infos = src.hdr.Table
	}
	list := make([]outTensor, len(infos))
	for i, t := range infos {
		if list[i], err = conv.out(t); err != nil {
			return nil, nil, nil, err
		}
	}
	return meta, list, nil, nil
}

func closeProvider(p provider) {
	if p != nil {
		p.close()
	}
}

// provider picks how the data of a file source is read for the given output order:
// by random access when every tensor is stored plain (each tensor's CRC32 checked as
// it is copied; header, metadata and index were checked when the file was opened); in
// one pass of the streaming reader when the file's order is the output order;
// otherwise through a spool.
func (s *Source) provider(order []string, list []outTensor, spooled provider, opts ExportOptions) (provider, error) {
	if spooled != nil {
		return spooled, nil
	}
	if s.f == nil {
		return s.streamProvider(order, list, opts)
	}
	byName := make(map[string]int, len(list))
	for i, t := range list {
		byName[t.src.Name] = i
	}
	inOrder := len(order) == len(s.entries)
	plain := true
	for i, e := range s.entries {
		if inOrder && order[i] != e.Name {
			inOrder = false
		}
		if e.Chunked() || e.Encrypted {
			plain = false
		}
	}
	if plain {
		return &randomProvider{s: s, list: list, byName: byName}, nil
	}
	if inOrder {
		r, err := container.NewReader(io.NewSectionReader(s.f, 0, s.size))
		if err != nil {
			return nil, err
		}
		return &orderProvider{r: r, list: list, byName: byName}, nil
	}
	r, err := container.NewReader(io.NewSectionReader(s.f, 0, s.size))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	conv := converter{opts: opts}
	if m, ok := s.hdr.Metadata.Provenance[ProvDTypes].(map[string]any); ok {
		conv.source = m
	}
	return newSpool(&readerStream{r}, conv, opts.TempDir)
}

// streamProvider serves a stream source with a tensor table (list, in the stream's
// order): straight from the stream when that is the output's order, else through a
// spool.
func (s *Source) streamProvider(order []string, list []outTensor, opts ExportOptions) (provider, error) {
	inOrder := len(order) == len(list)
	for i := 0; inOrder && i < len(order); i++ {
		inOrder = order[i] == list[i].spec.Name
	}
	if inOrder {
		return &tableProvider{s: s.s, list: list}, nil
	}
	if opts.Spooling != nil {
		opts.Spooling("the output orders the tensors otherwise than the input: spooling the tensors to a temporary file")
	}
	conv := converter{opts: opts}
	if m, ok := s.hdr.Metadata.Provenance[ProvDTypes].(map[string]any); ok {
		conv.source = m
	}
	return newSpool(s.s, conv, opts.TempDir)
}

// tableProvider reads a stream whose tensor table (list) is the output's order, in
// one pass, checking each tensor against the table and, at the end, that the stream
// ends there (for an APR stream: index, footer and whole-file CRC verified).
type tableProvider struct {
	s    stream.Stream
	list []outTensor
	i    int
}

func (p *tableProvider) open(name string) (io.Reader, error) {
	if p.i >= len(p.list) || p.list[p.i].spec.Name != name {
		return nil, fmt.Errorf("tensor %q: not next in the stream's tensor table", name)
	}
	want := p.list[p.i].src
	info, r, err := p.s.Next()
	if err == io.EOF {
		return nil, fmt.Errorf("tensor %q: the stream ended after %d of the %d tensors its table lists", want.Name, p.i, len(p.list))
	}
	if err != nil {
		return nil, err
	}
	if info.Name != want.Name || info.DType != want.DType || !slices.Equal(info.Shape, want.Shape) {
		return nil, fmt.Errorf("tensor %d is %q %v %v, the stream's tensor table says %q %v %v", p.i, info.Name, info.DType, info.Shape, want.Name, want.DType, want.Shape)
	}
	t := p.list[p.i]
	p.i++
	return convertReader(t, r), nil
}

func (p *tableProvider) finish() error {
	info, _, err := p.s.Next()
	if err == nil {
		return fmt.Errorf("tensor %q: not in the stream's tensor table (%d tensors)", info.Name, len(p.list))
	}
	if err != io.EOF {
		return err
	}
	return nil
}

func (p *tableProvider) close() {}

// readerStream adapts a container.Reader to stream.Stream for the spool.
type readerStream struct{ r *container.Reader }

func (s *readerStream) Header() container.Header { return container.Header{} }
func (s *readerStream) Next() (container.TensorInfo, io.Reader, error) {
	t, err := s.r.Next()
	if err != nil {
		return container.TensorInfo{}, nil, err
	}
	return t.TensorInfo, t, nil
}
func (s *readerStream) Blocks() []container.Block { return nil }
func (s *readerStream) Close() error              { return s.r.Close() }

// orderProvider reads a file in one pass, its order being the output order.
type orderProvider struct {
	r      *container.Reader
	list   []outTensor
	byName map[string]int
}

func (p *orderProvider) open(name string) (io.Reader, error) {
	t, err := p.r.Next()
	if err == io.EOF {
		return nil, fmt.Errorf("tensor %q: the file ended before it", name)
	}
	if err != nil {
		return nil, err
	}
	if t.Name != name {
		return nil, fmt.Errorf("tensor %q: found %q in its place (the index and the records disagree)", name, t.Name)
	}
	return convertReader(p.list[p.byName[name]], t), nil
}

func (p *orderProvider) finish() error {
	t, err := p.r.Next()
	if err == io.EOF {
		return nil
	}
	if err == nil {
		return fmt.Errorf("tensor %q: a record the index does not list", t.Name)
	}
	return err
}

func (p *orderProvider) close() { p.r.Close() }

// randomProvider reads plain tensors where they are, checking each one's CRC32.
type randomProvider struct {
	s      *Source
	list   []outTensor
	byName map[string]int
}

func (p *randomProvider) open(name string) (io.Reader, error) {
	i, ok := p.byName[name]
	if !ok {
		return nil, fmt.Errorf("tensor %q: not in the index", name)
	}
	e := p.s.entries[i]
	cr := &crcReader{r: io.NewSectionReader(p.s.f, e.DataOffset, e.RawSize), e: e}
	return convertReader(p.list[i], cr), nil
}

func (p *randomProvider) finish() error { return nil }
func (p *randomProvider) close()        {}

// crcReader checks the CRC32 of a plain tensor's bytes when it reaches their end.
type crcReader struct {
	r   io.Reader
	e   container.Entry
	crc uint32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, crc32.IEEETable, p[:n])
	if err == io.EOF && c.crc != c.e.CRC {
		return n, &container.ChecksumError{What: "tensor data", Tensor: c.e.Name, Offset: c.e.DataOffset, Expected: c.e.CRC, Actual: c.crc}
	}
	return n, err
}

// spool holds a source's output bytes in a temporary file.
type spool struct {
	f      *os.File
	remove func()
	list   []outTensor
	off    map[string][2]int64 // offset, size
}

func newSpool(s stream.Stream, conv converter, dir string) (*spool, error) {
	f, remove, err := cleanup.CreateTemp(dir, "apr-st-spool-*")
	if err != nil {
		return nil, fmt.Errorf("spool file: %w", err)
	}
	sp := &spool{f: f, remove: remove, off: map[string][2]int64{}}
	if err := sp.fill(s, conv); err != nil {
		sp.close()
		return nil, err
	}
	return sp, nil
}

func (sp *spool) fill(s stream.Stream, conv converter) error {
	f := sp.f
	bw := bufio.NewWriterSize(f, copyBuf)
	var pos int64
	err := stream.Each(s, func(info container.TensorInfo, r io.Reader) error {
		if _, dup := sp.off[info.Name]; dup {
			return fmt.Errorf("tensor %q: twice in the input", info.Name)
		}
		t, err := conv.out(info)
		if err != nil {
			return err
		}
		n, err := io.Copy(bw, convertReader(t, r))
		if err != nil {
			return tensor.Wrap(info.Name, err)
		}
		if n != t.size {
			return fmt.Errorf("tensor %q: %d bytes, expected %d for %v %v", info.Name, n, t.size, t.spec.DType, t.spec.Shape)
		}
		sp.off[info.Name] = [2]int64{pos, n}
		sp.list = append(sp.list, t)
		pos += n
		return nil
	})
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("spool file: %w", err)
	}
	return nil
}

func (sp *spool) open(name string) (io.Reader, error) {
	o, ok := sp.off[name]
	if !ok {
		return nil, fmt.Errorf("tensor %q: not in the input", name)
	}
	if _, err := sp.f.Seek(o[0], io.SeekStart); err != nil {
		return nil, err
	}
	return &io.LimitedReader{R: sp.f, N: o[1]}, nil
}

func (sp *spool) finish() error { return nil }

func (sp *spool) close() { sp.remove() }

// converter decides output dtypes.
type converter struct {
	opts   ExportOptions
	source map[string]any // provenance source_dtypes
}

// specsOf returns the output specs of list, in order.
func specsOf(list []outTensor) []safetensors.TensorSpec {
	specs := make([]safetensors.TensorSpec, len(list))
	for i, t := range list {
		specs[i] = t.spec
	}
	return specs
}

func (c converter) out(t container.TensorInfo) (outTensor, error) {
	info, ok := dtype.Lookup(t.DType)
	if !ok {
		return outTensor{}, fmt.Errorf("tensor %q: unknown dtype %v", t.Name, t.DType)
	}
	d := t.DType
	if info.SafeTensors == "" {
		if !info.Quantized() || !kernels.CanDequantize(t.DType) {
			return outTensor{}, fmt.Errorf("tensor %q: dtype %v has no SafeTensors equivalent and cannot be dequantized", t.Name, t.DType)
		}
		d = c.opts.DType
		if d == dtype.Invalid {
			d = dtype.F32
			if s, ok := c.source[t.Name].(string); ok {
				if sd, ok := dtype.FromSafeTensors(s); ok && (sd == dtype.F16 || sd == dtype.BF16 || sd == dtype.F64) {
					d = sd
				}
			}
		}
	}
	spec := safetensors.TensorSpec{Name: t.Name, DType: d, Shape: t.Shape}
	size, err := safetensors.SpecSize(spec)
	if err != nil {
		return outTensor{}, tensor.Wrap(t.Name, err)
	}
	return outTensor{src: t, spec: spec, size: size}, nil
}

// convertReader returns a reader of t's output bytes given a reader of its source
// bytes (stream.Decode: the source's GGML blocks dequantized and encoded as the
// output's float dtype).
func convertReader(t outTensor, r io.Reader) io.Reader {
	return stream.Decode(t.src.Name, t.src.DType, t.spec.DType, t.size/int64(t.spec.DType.Info().BlockBytes), r)
}

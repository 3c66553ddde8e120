package stconv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/internal/jsonobj"
	"github.com/apr-go/apr/lib/internal/regfile"
	"github.com/apr-go/apr/lib/llm"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/safetensors"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/version"
)

// ImportOptions control how a SafeTensors source becomes an APR tensor stream.
type ImportOptions struct {
	// Type is the model type of the stream. Zero means: the type named by the
	// "apr.model_type" key of __metadata__ when there is one, else Custom.
	Type modeltype.Type
	// Name is the model name written into the metadata ("" leaves it empty).
	Name string
	// SkipFiles leaves a checkpoint directory's config and tokenizer files out of the
	// metadata.
	SkipFiles bool
	// HFLayout keeps a language model's tensors as the checkpoint names and lays them
	// out. Without it, a checkpoint whose config.json names an architecture apr
	// converts (lib/llm) is imported in llama.cpp's form: GGUF tensor names, Q and K
	// rows permuted, 1-D tensors in F32, and its description as GGUF key-values.
	HFLayout bool
	// Digest records the SHA-256 of each source file in "source_files" (the digest
	// sha256sum and the Hugging Face Hub show). It costs one extra read of every byte,
	// and SHA-256 runs at about 1.3 GB/s on one core: slower than the conversion itself,
	// so it is off unless asked for.
	Digest bool
	// TokenizerPre names llama.cpp's pre-tokenizer of a BPE tokenizer.json that lib/llm's
	// table does not recognize (llm.Options).
	TokenizerPre string
	// MMProj imports a multimodal checkpoint's vision projector in llama.cpp's form
	// (the file convert_hf_to_gguf.py --mmproj writes, with what llama.cpp's loader
	// needs beyond it: llm.FromCheckpointProjector) instead of its text model.
	MMProj bool
}

// Caps on the checkpoint files kept in the metadata; the container's metadata cap is
// container.MaxMetadata (64 MiB), and the rest of the metadata needs room too.
const (
	MaxFileSize   = 32 << 20 // one kept file
	MaxFilesTotal = 48 << 20 // all kept files together
)

// ErrTooLarge is wrapped by the error of an import whose kept files exceed the caps.
var ErrTooLarge = errors.New("checkpoint files too large for the metadata")

// Open imports the SafeTensors source at path: a .safetensors file, a Hugging Face
// checkpoint directory (holding model.safetensors.index.json and its shards, or
// model.safetensors), or an index file. Every file is opened, memory-mapped where the
// platform allows it, and fully checked before the stream is returned; tensors come
// out shard by shard (in file name order), each shard in data order, and the stream
// holds no tensor in memory: it reads the mapping in place and releases the pages it
// has passed. With opts.Digest, each source file's SHA-256 is recorded in the provenance. From a
// directory or index, the checkpoint's config and tokenizer files are kept in the
// metadata (see KeepFile) unless opts.SkipFiles.
func Open(path string, opts ImportOptions) (stream.Stream, error) {
	shards, files, closer, err := openSource(path, opts)
	if err != nil {
		return nil, err
	}
	s, err := newFileStream(shards, files, opts)
	if err != nil {
		closer()
		return nil, err
	}
	s.closer = closer
	return s, nil
}

// openSource opens the shards of the SafeTensors source at path and reads its kept
// files (see Open); closer closes the shards.
func openSource(path string, opts ImportOptions) (shards []*safetensors.File, files map[string]any, closer func() error, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, nil, err
	}
	ckpt := st.IsDir() || strings.HasSuffix(path, ".json")
	c, err := safetensors.OpenCheckpoint(path)
	if err != nil {
		return nil, nil, nil, err
	}
	if ckpt && !opts.SkipFiles {
		if files, err = readFiles(c.Dir); err != nil {
			c.Close()
			return nil, nil, nil, err
		}
	}
	return c.Shards, files, c.Close, nil
}

// OpenFile imports the SafeTensors file already open as f (a redirected stdin, for
// example), as Open does for a single file; it takes ownership of f. name is used in
// messages and the provenance.
func OpenFile(f *os.File, name string, opts ImportOptions) (stream.Stream, error) {
	sf, err := safetensors.NewFile(f, name)
	if err != nil {
		f.Close()
		return nil, err
	}
	s, err := newFileStream([]*safetensors.File{sf}, nil, opts)
	if err != nil {
		sf.Close()
		return nil, err
	}
	s.closer = sf.Close
	return s, nil
}

// NewStream imports a SafeTensors stream that cannot seek (a pipe): the header comes
// first, so the APR header can be written at once and each tensor streamed through as
// it arrives, in data order, with memory bounded by one read buffer. The end of the
// stream is checked (the data must end exactly where the header says) before Next
// reports io.EOF. No digest of the source is recorded: it would only be known at the
// end, after the APR metadata has gone out.
func NewStream(r io.Reader, opts ImportOptions) (stream.Stream, error) {
	if opts.MMProj {
		return nil, fmt.Errorf("--mmproj needs a checkpoint directory with its config files, not a SafeTensors stream")
	}
	sr, err := safetensors.NewReader(r)
	if err != nil {
		return nil, err
	}
	h := sr.Header()
	hdr, err := importHeader(h.Metadata, [][]safetensors.TensorInfo{h.Tensors}, nil, nil, opts)
	if err != nil {
		return nil, err
	}
	hdr.Table = tableOf([][]safetensors.TensorInfo{h.Tensors}, nil)
	return &pipeStream{h: hdr, r: sr}, nil
}

type pipeStream struct {
	h container.Header
	r *safetensors.Reader
}

func (s *pipeStream) Header() container.Header { return s.h }
func (s *pipeStream) Next() (container.TensorInfo, io.Reader, error) {
	t, r, err := s.r.Next()
	if err != nil {
		return container.TensorInfo{}, nil, err
	}
	return containerInfo(t), r, nil
}
func (s *pipeStream) Blocks() []container.Block { return nil }
func (s *pipeStream) Close() error              { return nil }

func containerInfo(t safetensors.TensorInfo) container.TensorInfo {
	return container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}
}

// fileStream serves the tensors of mapped (or ReadAt) files in order.
type fileStream struct {
	h      container.Header
	shards []*safetensors.File
	// tensors are each shard's tensors in the order they come out: the data's, or by
	// name for a language model, as the converter reads them (byName)
	tensors [][]safetensors.TensorInfo
	shard   int // current shard
	next    int // next tensor of the current shard
	seen    map[string]string
	closer  func() error
	llm     *llm.Checkpoint // a language model imported in llama.cpp's form, or nil
	// generated counts the tensors of llm.Generated already given out
	generated int
	// walk places the tensors made of several (stacked experts) in the stream; parts
	// are those due out next.
	walk  *llm.Walk
	parts []llm.Part
	// planned counts the tensors of llm.Plan already given out, for a family whose
	// tensors are planned (gpt-oss, FP8 checkpoints).
	planned int
	// byName finds a source tensor in the shards (of a stacked or planned tensor).
	byName map[string]planSource
}

// planSource is where one checkpoint tensor's bytes are: tensor t of shard f, n bytes
// at off.
type planSource struct {
	f   *safetensors.File
	t   safetensors.TensorInfo
	off int64
	n   int64
}

func newFileStream(shards []*safetensors.File, files map[string]any, opts ImportOptions) (*fileStream, error) {
	digests, err := digestFiles(shards, opts.Digest, nil)
	if err != nil {
		return nil, err
	}
	return newFileStreamDigests(shards, files, digests, opts)
}

// newFileStreamDigests is newFileStream with the source_files entries given.
func newFileStreamDigests(shards []*safetensors.File, files map[string]any, digests []any, opts ImportOptions) (*fileStream, error) {
	tensors := make([][]safetensors.TensorInfo, len(shards))
	for i, f := range shards {
		tensors[i] = f.Header().Tensors
	}
	var meta safetensors.Metadata
	if len(shards) > 0 {
		meta = shards[0].Header().Metadata
	}
	h, err := importHeader(meta, tensors, digests, files, opts)
	if err != nil {
		return nil, err
	}
	s := &fileStream{h: h, shards: shards, tensors: tensors, seen: map[string]string{}}
	if opts.MMProj && (files == nil || opts.HFLayout) {
		return nil, fmt.Errorf("--mmproj needs a checkpoint directory with its config files (not a single .safetensors file, --no-files or --hf-layout)")
	}
	if files != nil && !opts.HFLayout {
		if opts.MMProj {
			s.llm, err = describeProjector(files, shards)
		} else {
			s.llm, err = describeLLM(files, shards, llm.Options{TokenizerPre: opts.TokenizerPre})
		}
		if err != nil {
			return nil, err
		}
		if s.llm != nil {
			s.tensors = byName(tensors)
			s.llm.SetMetadata(&s.h.Metadata)
			s.walk = s.llm.Walk()
			s.byName = map[string]planSource{}
			for _, f := range shards {
				for _, t := range f.Header().Tensors {
					if _, dup := s.byName[t.Name]; dup {
						return nil, fmt.Errorf("%s: tensor %q is also in %s", f.Path(), t.Name, s.byName[t.Name].f.Path())
					}
					s.byName[t.Name] = planSource{f: f, t: t, off: f.Header().DataStart() + t.Begin, n: t.Size()}
				}
			}
		}
	}
	plan, planned := s.llm.Plan()
	if !planned {
		s.h.Table = tableOf(s.tensors, s.llm)
		return s, nil
	}
	s.h.Table = []container.TensorInfo{}
	for _, t := range s.llm.Generated() {
		s.h.Table = append(s.h.Table, container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape})
	}
	for _, p := range plan {
		s.h.Table = append(s.h.Table, p.Info)
		if p.Info.DType.Info().Quantized() { // gpt-oss's MXFP4 experts
			s.h.Flags |= container.FlagQuantized
		}
	}
	return s, nil
}

// Open reads one checkpoint tensor for a planned tensor (llm.Source): with plain reads
// (pread) where the shard is an open file, as open does for stacked experts. A planned
// tensor of experts (an FP8 checkpoint's stacked experts, gpt-oss's) reads a piece of
// each expert's tensor in turn; read from the mapping, each fault maps neighbouring
// pages too, and the resident set grew with the number of experts (68 MB for an FP8
// DeepSeek-V3 shape of 512 experts, against 29 MB for its BF16 twin) although the
// pieces were dropped as they were done.
func (s *fileStream) Open(name string) (io.ReaderAt, error) {
	p, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("the checkpoint has no tensor %q", name)
	}
	if osf := p.f.OSFile(); osf != nil {
		return io.NewSectionReader(osf, p.off, p.n), nil
	}
	return &planReader{SectionReader: io.NewSectionReader(p.f, p.off, p.n), src: p}, nil
}

// planReader reads one checkpoint tensor for a planned tensor from a mapping without
// an open file, and drops the mapped pages it is done with (Release), as pageReader
// does for the tensors read in order.
type planReader struct {
	*io.SectionReader
	src planSource
}

func (r *planReader) Release(off, n int64) {
	if r.src.f.Mapped() && off >= 0 && n > 0 && off+n <= r.src.n {
		r.src.f.DropPages(r.src.off+off, n)
	}
}

// tableOf is the tensor table of the APR stream of the shards' tensors (in data
// order, shard after shard), converted to llama.cpp's form by cp when it is not nil:
// the tensors the converter computes first, then each tensor as cp.Info describes it,
// those llama.cpp drops left out. A tensor cp cannot convert gives no table: Next
// reports that error.
func tableOf(shards [][]safetensors.TensorInfo, cp *llm.Checkpoint) []container.TensorInfo {
	table := []container.TensorInfo{}
	var walk *llm.Walk
	if cp != nil {
		for _, t := range cp.Generated() {
			table = append(table, container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape})
		}
		walk = cp.Walk()
	}
	for _, tensors := range shards {
		for _, t := range tensors {
			info := containerInfo(t)
			if cp != nil {
				if parts, handled, err := walk.Place(t.Name); err != nil {
					return nil
				} else if handled {
					for _, p := range parts {
						table = append(table, p.Info)
					}
					continue
				}
				var skip bool
				var err error
				if info, skip, err = cp.Info(info); err != nil {
					return nil
				} else if skip {
					continue
				}
			}
			table = append(table, info)
		}
	}
	return table
}

// byName returns each shard's tensors sorted by name: the order of today's converter,
// which reads the shards in file name order (those the index names, sorted:
// conversion/base.py, index_tensors) and each shard's tensors by name (gguf-py's
// SafetensorsLocal sorts them), whatever the order of the data or of the index's
// weight_map.
func byName(shards [][]safetensors.TensorInfo) [][]safetensors.TensorInfo {
	sorted := make([][]safetensors.TensorInfo, len(shards))
	for i, ts := range shards {
		sorted[i] = slices.SortedStableFunc(slices.Values(ts), func(a, b safetensors.TensorInfo) int { return strings.Compare(a.Name, b.Name) })
	}
	return sorted
}

// describeProjector returns the description of a multimodal checkpoint's projector
// file (llm.FromCheckpointProjector).
func describeProjector(files map[string]any, shards []*safetensors.File) (*llm.Checkpoint, error) {
	raw, shapes, dir := llmInputs(files, shards)
	return llm.FromCheckpointProjector(raw, dir, shapes)
}

// describeLLM returns the description of a checkpoint whose config.json names an
// architecture lib/llm converts, nil for any other checkpoint.
func describeLLM(files map[string]any, shards []*safetensors.File, lo llm.Options) (*llm.Checkpoint, error) {
	raw, shapes, dir := llmInputs(files, shards)
	cp, ok, err := llm.FromCheckpointWith(raw, dir, shapes, lo)
	if err != nil || !ok {
		return nil, err
	}
	return cp, nil
}

// llmInputs are lib/llm's inputs of a checkpoint: its kept files, its tensors and
// the directory's name.
func llmInputs(files map[string]any, shards []*safetensors.File) (map[string][]byte, []llm.TensorShape, string) {
	raw := make(map[string][]byte, len(files))
	for name, b := range files {
		raw[name], _ = b.([]byte)
	}
	// Each shard's tensors by name, as the converter lists them (gguf-py's
	// SafetensorsLocal sorts them): the order of a planned stream (gpt-oss, FP8), which
	// may differ from the data's where a file mixes dtypes.
	var shapes []llm.TensorShape
	for _, f := range shards {
		n := len(shapes)
		for _, t := range f.Header().Tensors {
			shapes = append(shapes, llm.TensorShape{Name: t.Name, DType: t.DType, Shape: t.Shape})
		}
		slices.SortStableFunc(shapes[n:], func(a, b llm.TensorShape) int { return strings.Compare(a.Name, b.Name) })
	}
	var dir string
	if len(shards) > 0 {
		dir = filepath.Base(filepath.Dir(shards[0].Path()))
	}
	return raw, shapes, dir
}

func (s *fileStream) Header() container.Header { return s.h }

func (s *fileStream) Next() (container.TensorInfo, io.Reader, error) {
	if s.llm != nil && s.generated < len(s.llm.Generated()) {
		t := s.llm.Generated()[s.generated]
		s.generated++
		return container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}, bytes.NewReader(t.Data), nil
	}
	if plan, ok := s.llm.Plan(); ok {
		if s.planned == len(plan) {
			return container.TensorInfo{}, nil, io.EOF
		}
		p := plan[s.planned]
		s.planned++
		r, err := p.Make(s)
		return p.Info, r, err
	}
	for {
		if len(s.parts) > 0 {
			p := s.parts[0]
			s.parts = s.parts[1:]
			r, err := p.Open(s.open)
			return p.Info, r, err
		}
		info, r, err := s.next1()
		if err == io.EOF && s.walk != nil {
			if err := s.walk.Done(); err != nil {
				return info, nil, err
			}
		}
		if err != nil || s.llm == nil {
			return info, r, err
		}
		parts, handled, err := s.walk.Place(info.Name)
		if err != nil {
			return info, nil, err
		}
		if handled { // its data is read in place when its parts come out
			s.parts = parts
			continue
		}
		info, r, skip, err := s.llm.Convert(info, r)
		if !skip {
			return info, r, err
		}
	}
}

// open returns a reader of the data of the checkpoint tensor name, wherever it is in
// the shards: a tensor made of several (stacked experts) reads its sources this way,
// with plain reads (pread) rather than from the mapping. A stacked tensor takes every
// third tensor of a layer's experts; read from the mapping, each page fault maps its
// neighbours' pages too (the kernel's fault-around, 64 KiB), which stay resident until
// those are read, and the resident set grew with the number of experts (to 110 MB for
// 512 experts of 512 KiB). Plain reads leave them in the page cache only.
func (s *fileStream) open(name string) (io.Reader, error) {
	p, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("tensor %q is not in the checkpoint", name)
	}
	if osf := p.f.OSFile(); osf != nil {
		return io.NewSectionReader(osf, p.off, p.n), nil
	}
	return tensorReader(p.f, p.t)
}

// tensorReader reads tensor t of f: in place from the mapping when f is mapped.
func tensorReader(f *safetensors.File, t safetensors.TensorInfo) (io.Reader, error) {
	off := f.Header().DataStart() + t.Begin
	if !f.Mapped() {
		return io.NewSectionReader(f, off, t.Size()), nil
	}
	data, err := f.TensorData(t)
	if err != nil {
		return nil, err
	}
	return &pageReader{f: f, data: data, off: off}, nil
}

func (s *fileStream) next1() (container.TensorInfo, io.Reader, error) {
	for s.shard < len(s.shards) && s.next == len(s.tensors[s.shard]) {
		s.shard++
		s.next = 0
	}
	if s.shard == len(s.shards) {
		return container.TensorInfo{}, nil, io.EOF
	}
	f := s.shards[s.shard]
	t := s.tensors[s.shard][s.next]
	s.next++
	if prev, dup := s.seen[t.Name]; dup {
		return container.TensorInfo{}, nil, fmt.Errorf("%s: tensor %q is also in %s", f.Path(), t.Name, prev)
	}
	s.seen[t.Name] = f.Path()
	r, err := tensorReader(f, t)
	if err != nil {
		return container.TensorInfo{}, nil, err
	}
	return containerInfo(t), r, nil
}

func (s *fileStream) Blocks() []container.Block { return nil }

func (s *fileStream) Close() error {
	if s.closer == nil {
		return nil
	}
	c := s.closer
	s.closer = nil
	return c()
}

// pageReader reads a tensor from the mapping and drops the pages it has passed from
// the resident set, every dropEvery bytes and at the end.
type pageReader struct {
	f       *safetensors.File
	data    []byte
	off     int64 // file offset of data[0]
	pos     int
	dropped int
	taken   int // where the slice of TakeMapped began
}

const dropEvery = 8 << 20

var pageSize = os.Getpagesize()

func (r *pageReader) Read(p []byte) (int, error) {
	if r.pos == len(r.data) {
		r.drop()
		return 0, io.EOF
	}
	n := copy(p, r.data[r.pos:])
	r.pos += n
	if r.pos-r.dropped >= dropEvery || r.pos == len(r.data) {
		r.drop()
	}
	return n, nil
}

// WriteTo writes the rest of the tensor in slices of the mapping, without a copy
// (spliced as the file's pages when w can: container.FileWriter).
func (r *pageReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for r.pos < len(r.data) {
		end := min(r.pos+dropEvery, len(r.data))
		n, err := container.WriteFileBytes(w, r.data[r.pos:end], r.f.OSFile(), r.off+int64(r.pos))
		r.pos += n
		total += int64(n)
		r.drop()
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Len is the number of bytes not yet read (container.InPlace).
func (r *pageReader) Len() int { return len(r.data) - r.pos }

// TakeMapped returns the rest of the tensor as a slice of the mapping and moves the
// reader to its end, for a consumer that reads it in place (lib/quant's workers); the
// consumer gives the pages back with ReleaseMapped as it is done with them. The slice
// is valid until the stream is closed.
func (r *pageReader) TakeMapped() []byte {
	b := r.data[r.pos:]
	r.taken, r.pos = r.pos, len(r.data)
	return b
}

// ReleaseMapped drops from the resident set the whole pages of the first n bytes of
// what TakeMapped returned (they stay in the page cache).
func (r *pageReader) ReleaseMapped(n int) {
	end := min(r.taken+n, len(r.data))
	if end < len(r.data) {
		// Up to a page boundary of the file: the page a chunk's end cuts goes with the
		// next chunk, instead of staying resident.
		end = int((r.off+int64(end))&^int64(pageSize-1) - r.off)
	}
	if end > r.dropped {
		r.f.DropPages(r.off+int64(r.dropped), int64(end-r.dropped))
		r.dropped = end
	}
}

func (r *pageReader) drop() {
	if r.pos > r.dropped {
		r.f.DropPages(r.off+int64(r.dropped), int64(r.pos-r.dropped))
		r.dropped = r.pos
	}
}

// digestFiles returns the name, size and SHA-256 (the same digest as the Hugging Face
// Hub's LFS object id of the file) of each whole file, reading them with plain reads
// (so the hashing does not grow the resident set), several files at once. A close of
// stop (nil: never) ends the hashing early with an error.
func digestFiles(shards []*safetensors.File, hash bool, stop <-chan struct{}) ([]any, error) {
	out := make([]any, len(shards))
	if !hash {
		for i, f := range shards {
			out[i] = map[string]any{"name": filepath.Base(f.Path()), "size": f.Header().FileSize()}
		}
		return out, nil
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, f := range shards {
		g.Go(func() error {
			h := sha256.New()
			size := f.Header().FileSize()
			buf := make([]byte, 1<<20)
			for off := int64(0); off < size; {
				select {
				case <-stop:
					return errStopped
				default:
				}
				n := int(min(int64(len(buf)), size-off))
				if _, err := readAtFile(f, buf[:n], off); err != nil {
					return fmt.Errorf("%s: reading at offset %d for the digest: %w", f.Path(), off, err)
				}
				h.Write(buf[:n])
				off += int64(n)
				if f.Mapped() {
					f.DropPages(off-int64(n), int64(n))
				}
			}
			out[i] = map[string]any{"name": filepath.Base(f.Path()), "size": size, "sha256": hex.EncodeToString(h.Sum(nil))}
			return nil
		})
	}
	return out, g.Wait()
}

var errStopped = errors.New("digest stopped")

func readAtFile(f *safetensors.File, p []byte, off int64) (int, error) {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return n, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// importHeader builds the APR header of an import: the model type (opts, else
// __metadata__'s apr.model_type, else Custom), model config from apr.model_config,
// __metadata__ itself verbatim and in order, the kept files, and the provenance.
func importHeader(meta safetensors.Metadata, shards [][]safetensors.TensorInfo, digests []any, files map[string]any, opts ImportOptions) (container.Header, error) {
	created, err := container.CreatedAt()
	if err != nil {
		return container.Header{}, err
	}
	md := container.Metadata{Name: opts.Name, CreatedAt: created, Producer: version.Producer}
	typ := modeltype.Custom
	if v, ok := meta.Get(MetaModelType); ok {
		if typ, err = modeltype.ParseType(v); err != nil {
			return container.Header{}, fmt.Errorf("__metadata__ %q: %w", MetaModelType, err)
		}
	}
	if v, ok := meta.Get(MetaModelConfig); ok {
		if md.ModelConfig, err = jsonobj.Decode(v); err != nil {
			return container.Header{}, fmt.Errorf("__metadata__ %q: %w", MetaModelConfig, err)
		}
	}
	if opts.Type != 0 {
		typ = opts.Type
	}
	md.Extra = map[string]any{}
	if meta != nil {
		pairs := make([]any, len(meta))
		for i, e := range meta {
			pairs[i] = []any{e.Key, e.Value}
		}
		md.Extra[KeyMetadata] = pairs
	}
	if len(files) > 0 {
		md.Extra[KeyFiles] = files
	}
	if len(md.Extra) == 0 {
		md.Extra = nil
	}
	prov := map[string]any{"source_format": SourceFormat}
	dtypes := map[string]any{}
	for _, ts := range shards {
		for _, t := range ts {
			if t.DType.Info().Float {
				dtypes[t.Name] = t.DTypeName
			}
		}
	}
	if len(dtypes) > 0 {
		prov[ProvDTypes] = dtypes
	}
	if digests != nil {
		prov[ProvFiles] = digests
	}
	md.Provenance = prov
	return container.Header{Type: typ, Metadata: md}, nil
}

// KeepFile reports whether a checkpoint directory's file is kept in the metadata of
// an import (safetensors.KeptFile).
func KeepFile(name string) bool { return safetensors.KeptFile(name) }

// readFiles reads the kept files of dir into a name -> bytes map. Links are followed
// (the Hugging Face cache keeps a checkpoint as links into its blobs); directories
// are skipped, and a kept name that is anything else than a regular file in the end
// (a FIFO, a device, a dangling link, a loop) is an error naming it.
func readFiles(dir string) (map[string]any, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string]any{}
	var total int64
	var names []string
	for _, e := range entries {
		if e.Name() == "config.json" && e.IsDir() {
			return nil, fmt.Errorf("%s is a directory; a checkpoint's config.json is a JSON file", filepath.Join(dir, e.Name()))
		}
		if e.IsDir() || !KeepFile(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := regfile.Open(path)
		if nr := (*regfile.NotRegularError)(nil); errors.As(err, &nr) && nr.Mode.IsDir() {
			if e.Name() == "config.json" {
				return nil, fmt.Errorf("%s links to a directory; a checkpoint's config.json is a JSON file", path)
			}
			continue // a link to a directory
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(b) > MaxFileSize {
			return nil, fmt.Errorf("%s: %w: over %d bytes (import with SkipFiles, or copy it beside the export)", path, ErrTooLarge, MaxFileSize)
		}
		total += int64(len(b))
		names = append(names, e.Name())
		if total > MaxFilesTotal {
			sort.Strings(names)
			return nil, fmt.Errorf("%s: %w: %s together over %d bytes", dir, ErrTooLarge, strings.Join(names, ", "), MaxFilesTotal)
		}
		files[e.Name()] = b
	}
	return files, nil
}

package ggufconv

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/cleanup"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/internal/regfile"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// ExportOptions controls an export.
type ExportOptions struct {
	// TempDir is where Export spools tensor data ("" for os.TempDir()).
	TempDir string
	// Generic writes a Hugging Face language model that is not in llama.cpp's form
	// (see lib/llm) as a generic GGUF instead of refusing it.
	Generic bool
	// Spooling, when not nil, is told why Export spools the tensors of a stream to a
	// temporary file instead of streaming them (a program says so on stderr).
	Spooling func(reason string)
}

// Plan returns the GGUF header for a model with header h and tensors in the given
// order, checked as llama.cpp's reader requires (see gguf.Header.Validate): nothing
// is written, so a model GGUF cannot hold fails here, before any output byte.
//
// The KVs are those of h.Metadata.Extra[KeyGGUF] when present (an imported GGUF),
// in their order and with their types, with general.name, general.description and
// general.license set from the metadata when it has them and they differ, and
// general.file_type updated after a quantization (see the package documentation).
// Otherwise they describe an apr model: general.architecture (Arch), the general.*
// keys of the metadata, and the model config as typed keys "<arch>.<key>".
func Plan(h container.Header, tensors []container.TensorInfo) (*gguf.Header, error) {
	gh := &gguf.Header{}
	md := h.Metadata
	var cfg []gguf.KV
	if x, ok := md.Extra[KeyGGUF]; ok {
		ver, kvs, err := gguf.DecodeKVs(x)
		if err != nil {
			return nil, err
		}
		gh.Version, gh.KVs = ver, kvs
		setFileType(gh, md.Provenance, tensors)
		blocks, pruned := prunedBlockCount(gh, md.Provenance) // before the overrides are set once more
		if err := setKVOverrides(gh, md.Provenance); err != nil {
			return nil, err
		}
		setImatrix(gh, md.Provenance)
		if pruned {
			gh.KVs = quant.SetKV(gh.KVs, blocks.Key, blocks.Value)
		}
	} else {
		arch := Arch(h.Type)
		gh.KVs = []gguf.KV{{Key: KeyArchitecture, Value: gguf.String(arch)}}
		var err error
		if cfg, err = configToKVs(arch+".", md.ModelConfig); err != nil {
			return nil, err
		}
	}
	setString(gh, KeyName, md.Name)
	setString(gh, KeyDescription, md.Description)
	setString(gh, KeyLicense, md.License)
	gh.KVs = append(gh.KVs, cfg...)
	gh.Tensors = make([]gguf.TensorInfo, 0, len(tensors))
	for _, t := range tensors {
		ti, err := tensorInfo(t)
		if err != nil {
			return nil, err
		}
		if presetOf(md.Provenance) {
			ti.Dims = ggmlDims(ti.Dims)
		}
		gh.Tensors = append(gh.Tensors, ti)
	}
	if err := gh.Layout(); err != nil {
		return nil, err
	}
	return gh, nil
}

// tensorInfo converts an APR tensor description to a GGUF tensor info, checking what
// GGUF can hold: a ggml type, 1 to 4 dims, ne0 a whole number of blocks, a name of at
// most 63 bytes.
func tensorInfo(t container.TensorInfo) (gguf.TensorInfo, error) {
	gt, ok := gguf.TensorTypeOf(t.DType)
	if !ok {
		return gguf.TensorInfo{}, fmt.Errorf("tensor %q: dtype %v has no ggml type", t.Name, t.DType)
	}
	if len(t.Shape) < 1 || len(t.Shape) > gguf.MaxDims {
		return gguf.TensorInfo{}, fmt.Errorf("tensor %q: shape %v has %d dims, GGUF takes 1 to %d", t.Name, t.Shape, len(t.Shape), gguf.MaxDims)
	}
	if len(t.Name) == 0 || len(t.Name) > gguf.MaxNameLen {
		return gguf.TensorInfo{}, fmt.Errorf("tensor %q: name of %d bytes, GGUF takes 1 to %d", t.Name, len(t.Name), gguf.MaxNameLen)
	}
	dims := slices.Clone(t.Shape)
	slices.Reverse(dims)
	ti := gguf.TensorInfo{Name: t.Name, Dims: dims, Type: gt}
	if _, err := ti.Size(); err != nil {
		return gguf.TensorInfo{}, tensor.Wrap(t.Name, err)
	}
	return ti, nil
}

// setString sets key to the string v when v is not empty and the file does not already
// hold exactly that string; a new key goes at the end.
func setString(gh *gguf.Header, key, v string) {
	if v == "" {
		return
	}
	for i := range gh.KVs {
		if gh.KVs[i].Key == key {
			if s, ok := gh.KVs[i].Value.AsString(); !ok || s != v {
				gh.KVs[i].Value = gguf.String(v)
			}
			return
		}
	}
	gh.KVs = append(gh.KVs, gguf.KV{Key: key, Value: gguf.String(v)})
}

// fileTypes maps an apr-quant target to llama.cpp's llama_ftype ("mostly" that type;
// K-quants as their _M variant, as llama-quantize's aliases do).
var fileTypes = map[string]uint32{
	"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9,
	"Q2_K": 10, "Q3_K": 12, "Q4_K": 15, "Q5_K": 17, "Q6_K": 18, "BF16": 32,
	"IQ3_XXS": 23, "IQ4_NL": 25, "IQ3_S": 26, "IQ4_XS": 30,
	"IQ2_XXS": 19, "IQ2_XS": 20, "IQ1_S": 24, "IQ2_S": 29, "IQ1_M": 31, // IQ2_S: llama-quantize's IQ2_M (its "IQ2_S" is mostly IQ2_XS)
}

// setFileType updates general.file_type after apr-quant changed the tensor types
// (F32, F16 or BF16 beside MXFP4 tensors, which they keep, is llama.cpp's
// MOSTLY_MXFP4_MOE, 38, as the converter writes for gpt-oss)
// (provenance "quantization" of this APR file, which an import starts afresh), and adds
// general.quantization_version 2 for a GGML block type when it is absent, as
// llama-quantize does. A file that was not quantized after import is left alone.
func setFileType(gh *gguf.Header, prov map[string]any, tensors []container.TensorInfo) {
	q, _ := prov["quantization"].(map[string]any)
	typ, _ := q["type"].(string)
	// A file laid out as llama-quantize writes a preset has that preset's file type
	// (its "IQ2_S" is 28, though fileTypes gives the IQ2_S type 29).
	ft, ok := quant.PresetFileType(typ)
	if rules, _ := q["rules"].(map[string]any); typ == "COPY" {
		n, isInt := asInt64(rules["file_type"]) // llama-quantize COPY keeps the input's
		ft, ok = uint32(n), isInt
	}
	if !ok || !presetOf(prov) {
		if f, isType := fileTypes[typ]; isType {
			ft, ok = f, true
		}
	}
	if !ok {
		return
	}
	// F32, F16, BF16 with MXFP4 experts kept: llama.cpp's MOSTLY_MXFP4_MOE where the file
	// was that already; the converter writes it only for a checkpoint whose
	// quantization_config says mxfp4 (conversion/base.py, prepare_tensors), and the
	// outtype's file type for MXFP4 experts without one.
	if was, _ := gh.Get(KeyFileType); ft <= 1 || ft == 32 {
		n, _ := was.AsUint64()
		if n == 38 && slices.ContainsFunc(tensors, func(t container.TensorInfo) bool { return t.DType == dtype.MXFP4 }) {
			ft = 38
		}
	}
	found := false
	for i := range gh.KVs {
		if gh.KVs[i].Key == KeyFileType {
			gh.KVs[i].Value = gguf.Uint32(ft)
			found = true
		}
	}
	if !found {
		return
	}
	if d, err := dtype.Parse(typ); err == nil && d.Info().Quantized() {
		if _, ok := gh.Get(KeyQuantVersion); !ok {
			gh.KVs = append(gh.KVs, gguf.KV{Key: KeyQuantVersion, Value: gguf.Uint32(2)})
		}
	}
	if presetOf(prov) { // llama-quantize sets these two after copying the other keys
		gh.KVs = quant.SetKV(gh.KVs, KeyQuantVersion, gguf.Uint32(2))
		gh.KVs = quant.SetKV(gh.KVs, KeyFileType, gguf.Uint32(ft))
	}
}

// Export writes the model of s as GGUF to w. GGUF puts every tensor's info before the
// data. When s has a tensor table (format 2.1: every importer, apr-quant, apr-sign and
// apr-seal write one) in the order the GGUF file takes, the header is planned from it
// and written at once, and each tensor's bytes are copied through as they arrive,
// checked against the table; nothing touches the disk. Otherwise (no table, or a
// preset's tensors that llama-quantize orders otherwise) the tensors are first spooled
// to a temporary file in o.TempDir (removed before Export returns) while their infos
// are collected and checked; the header is then planned and checked in full and only
// then is anything written to w. Memory stays bounded (one copy buffer) either way;
// the spool's disk use is the model's raw size.
func Export(w io.Writer, s stream.Stream, o ExportOptions) error {
	h := s.Header()
	if err := checkArchitecture(h.Metadata, o); err != nil {
		return err
	}
	why := spoolReason(h)
	if why == "" {
		return exportTable(w, s, h)
	}
	if f, ok := container.Patchable(w); ok && h.Table != nil {
		return exportAtOffsets(f, s, h) // only the order differs: write in place
	}
	if o.Spooling != nil {
		o.Spooling(why)
	}
	spool, infos, spans, removeSpool, err := spoolStream(s, o.TempDir)
	if err != nil {
		return err
	}
	defer removeSpool()
	buf := make([]byte, 1<<20)
	if presetOf(h.Metadata.Provenance) {
		infos, spans = llamaQuantizeOrder(infos, spans)
	}
	gh, err := Plan(h, infos)
	if err != nil {
		return err
	}
	if out, ok := regularFile(w); ok {
		return copyData(out, spool, "", gh, spans, nil)
	}
	return write(w, gh, func(gw *gguf.Writer) error {
		for _, sp := range spans {
			if _, err := copyBuffer(gw, io.NewSectionReader(spool, sp.off, sp.size), buf); err != nil {
				return err
			}
		}
		return nil
	})
}

// spoolStream copies the tensors of s to a new temporary file in dir, checking each
// one's info and size, and returns the file, the infos and the places of the tensors
// in the file, and a function that removes the file.
func spoolStream(s stream.Stream, dir string) (*os.File, []container.TensorInfo, []span, func(), error) {
	spool, removeSpool, err := cleanup.CreateTemp(dir, "apr-gguf-*.spool")
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("spooling tensors: %w", err)
	}
	buf := make([]byte, 1<<20)
	var infos []container.TensorInfo
	var spans []span
	var off int64
	err = stream.Each(s, func(info container.TensorInfo, r io.Reader) error {
		if _, err := tensorInfo(info); err != nil {
			return err
		}
		size, err := info.RawSize()
		if err != nil {
			return tensor.Wrap(info.Name, err)
		}
		if err := copyTensor(spool, r, buf, info.Name, size); err != nil {
			return err
		}
		infos = append(infos, info)
		spans = append(spans, span{name: info.Name, off: off, size: size})
		off += size
		return nil
	})
	if err != nil {
		removeSpool()
		return nil, nil, nil, nil, err
	}
	return spool, infos, spans, removeSpool, nil
}

// spoolReason says why a stream with header h cannot be exported without a spool, or
// is "" when its tensor table lists the tensors in the order of the GGUF file.
func spoolReason(h container.Header) string {
	if h.Table == nil {
		return "the input has no tensor table (an APR stream of format 2.0, or from a producer that did not know its tensors up front): spooling the tensors to a temporary file"
	}
	if presetOf(h.Metadata.Provenance) {
		sorted, _ := llamaQuantizeOrder(h.Table, make([]span, len(h.Table)))
		for i := range sorted {
			if sorted[i].Name != h.Table[i].Name {
				return "llama-quantize orders this preset's tensors otherwise than the input: spooling the tensors to a temporary file"
			}
		}
	}
	return ""
}

// exportTable writes the GGUF of a stream whose tensor table h.Table lists its tensors
// in the GGUF file's order: the header at once, then each tensor's bytes as they come,
// each tensor checked against the table (the container reader checks records and
// index against it too, but s may be any stream), and the end of s checked (for an APR
// stream: index, footer and whole-file CRC) before it returns.
func exportTable(w io.Writer, s stream.Stream, h container.Header) error {
	table := h.Table
	gh, err := Plan(h, table)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	return write(w, gh, func(gw *gguf.Writer) error {
		for i, want := range table {
			info, r, err := s.Next()
			if err == io.EOF {
				return fmt.Errorf("tensor %q: the stream ended after %d of the %d tensors its table lists", want.Name, i, len(table))
			}
			if err != nil {
				return err
			}
			if info.Name != want.Name || info.DType != want.DType || !slices.Equal(info.Shape, want.Shape) {
				return fmt.Errorf("tensor %d is %q %v %v, the stream's tensor table says %q %v %v", i, info.Name, info.DType, info.Shape, want.Name, want.DType, want.Shape)
			}
			size, _ := want.RawSize() // Plan checked it
			if err := copyTensor(gw, r, buf, info.Name, size); err != nil {
				return err
			}
		}
		info, _, err := s.Next()
		if err == nil {
			return fmt.Errorf("tensor %q: not in the stream's tensor table (%d tensors)", info.Name, len(table))
		}
		if err != io.EOF {
			return err
		}
		return nil
	})
}

// write writes header gh to w and the data that fill provides through a 1 MiB buffer
// that large writes bypass (see passWriter).
func write(w io.Writer, gh *gguf.Header, fill func(*gguf.Writer) error) error {
	pw := newPassWriter(w)
	gw, err := gguf.NewWriter(pw, gh)
	if err != nil {
		return err
	}
	if err := fill(gw); err != nil {
		return err
	}
	if err := gw.Close(); err != nil {
		return err
	}
	return pw.Flush()
}

// passWriter buffers small writes (header, padding) and hands writes of at least
// passMin bytes to w directly, after what is buffered: tensor data is not copied into
// a buffer first, as bufio.Writer would do once a padding write left it part full.
type passWriter struct {
	w  io.Writer
	bw *bufio.Writer
}

const passMin = 64 << 10

func newPassWriter(w io.Writer) *passWriter {
	return &passWriter{w: w, bw: bufio.NewWriterSize(w, 1<<20)}
}

func (p *passWriter) Write(b []byte) (int, error) {
	if len(b) < passMin {
		return p.bw.Write(b)
	}
	if err := p.bw.Flush(); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

func (p *passWriter) Flush() error { return p.bw.Flush() }

// copyBuffer copies src to dst until io.EOF in writes of len(buf) bytes (but the
// last), however short src's reads are (a pipe gives at most 64 KiB a read).
// copyTensor copies the bytes of tensor name from r to dst through buf and checks
// that there are size of them; errors name the tensor once (the reader's often do).
//
// A reader whose bytes are in memory (container.InPlace: a mapped input, apr-quant's
// converted chunks) writes them to dst itself, with no copy through buf.
func copyTensor(dst io.Writer, r io.Reader, buf []byte, name string, size int64) error {
	var n int64
	var err error
	if in, ok := r.(container.InPlace); ok && int64(in.Len()) == size {
		n, err = in.WriteTo(dst)
	} else {
		n, err = copyBuffer(dst, r, buf)
	}
	if err != nil {
		if strings.Contains(err.Error(), strconv.Quote(name)) {
			return err
		}
		return tensor.Wrap(name, err)
	}
	if n != size {
		return fmt.Errorf("tensor %q: %d bytes, want %d", name, n, size)
	}
	return nil
}

func copyBuffer(dst io.Writer, src io.Reader, buf []byte) (int64, error) {
	var total int64
	for {
		n := 0
		var rerr error
		for n < len(buf) && rerr == nil {
			var m int
			m, rerr = src.Read(buf[n:])
			n += m
		}
		if n > 0 {
			m, err := dst.Write(buf[:n])
			total += int64(m)
			if err == nil && m < n {
				err = io.ErrShortWrite
			}
			if err != nil {
				return total, err
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// fileWriter is an output that is an open file (an *os.File, or a type that embeds
// one, as atomicfile.File does).
type fileWriter interface {
	io.Writer
	io.ReaderFrom
	Stat() (os.FileInfo, error)
}

// regularFile returns w as a fileWriter when it writes to a regular file, where
// ReadFrom of a file section is a copy_file_range: the kernel copies the bytes without
// passing them through this process.
func regularFile(w io.Writer) (fileWriter, bool) {
	f, ok := w.(fileWriter)
	if !ok {
		return nil, false
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, false
	}
	return f, true
}

// plainData reports whether every tensor's stored bytes are its raw bytes (no
// compression, no seal), so that they can be copied from the file as they are.
func plainData(entries []container.Entry) bool {
	for i := range entries {
		e := &entries[i]
		if e.Chunked() || e.Encrypted || e.StoredSize != e.RawSize {
			return false
		}
	}
	return true
}

// ExportFile writes the model in the file at path as GGUF to w. For an APR v2 file the
// tensor list comes from the index at the end of the file, so the GGUF header is
// planned and checked before any byte is written and the data is then written in one
// verified pass, without a spool; other inputs (aprender files) go through Export.
//
// A file whose tensors are stored uncompressed is memory-mapped where the platform
// allows (container.Open): a second goroutine checks each tensor's CRC and trailer
// against the CRC-checked index ahead of the writer, and a tensor is written only
// once its check has passed. When w is a regular file (an *os.File, or a type that
// embeds one) the kernel copies the bytes from file to file (copy_file_range, as cat
// does); otherwise they are written from the mapping. Other files are read once in
// order through the verifying stream reader (every CRC and the whole-file CRC); there
// a tensor's bytes reach w before its CRC is known, and the caller discards the output
// on error.
func ExportFile(w io.Writer, path string, o ExportOptions) error {
	if f, ok, err := openStreamPath(path); ok || err != nil {
		if err != nil {
			return err
		}
		s, done, err := verifyingStream(f, path)
		if err != nil {
			return err
		}
		defer done()
		if err := Export(w, s, o); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	info, err := stream.Inspect(path)
	if err != nil {
		return withPath(path, err)
	}
	if err := checkArchitecture(*info.Metadata, o); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// A preset's tensors are reordered as llama-quantize writes them: through the spool.
	reorder := presetOf(info.Metadata.Provenance)
	if info.Format == "APR v2" {
		for _, e := range info.Tensors {
			if e.Encrypted {
				return fmt.Errorf("%s: tensor %q is sealed; unseal the file first", path, e.Name)
			}
		}
		if plainData(info.Tensors) && !reorder {
			return exportPlain(w, path, info.Info)
		}
	}
	f, err := regfile.Open(path)
	if err != nil {
		return err
	}
	s, done, err := verifyingStream(f, path)
	if err != nil {
		return err
	}
	defer done()
	if info.Format != "APR v2" || reorder {
		return Export(w, s, o)
	}
	infos := make([]container.TensorInfo, len(info.Tensors))
	for i, e := range info.Tensors {
		infos[i] = e.TensorInfo
	}
	gh, err := Plan(s.Header(), infos)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	buf := make([]byte, 1<<20)
	return write(w, gh, func(gw *gguf.Writer) error {
		return verifyStream(s, path, info.Tensors, func(i int, t container.TensorInfo, r io.Reader) error {
			size, _ := t.RawSize()
			if n, err := copyBuffer(gw, io.LimitReader(r, size), buf); err != nil {
				return fmt.Errorf("%s: tensor %q: %w", path, t.Name, err)
			} else if n != size {
				return fmt.Errorf("%s: tensor %q: %d bytes, want %d", path, t.Name, n, size)
			}
			return nil
		}, buf)
	})
}

// verifyStream reads every tensor of s, which must be those of the index entries in
// order, calls use (if not nil) with each one's reader, then reads what use left so
// that the tensor's checksum is verified, and finally checks that the stream ends
// (index, blocks, footer and whole-file CRC verified). buf is the drain buffer.
func verifyStream(s stream.Stream, path string, entries []container.Entry, use func(int, container.TensorInfo, io.Reader) error, buf []byte) error {
	for i := range entries {
		want := &entries[i]
		t, r, err := s.Next()
		if err == io.EOF {
			return fmt.Errorf("%s: stream ended after %d of %d tensors in the index", path, i, len(entries))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if t.Name != want.Name || t.DType != want.DType || !slices.Equal(t.Shape, want.Shape) {
			return fmt.Errorf("%s: tensor %d is %q %v %v, the index says %q %v %v", path, i, t.Name, t.DType, t.Shape, want.Name, want.DType, want.Shape)
		}
		if ct, ok := r.(*container.Tensor); ok && ct.DataOffset != want.DataOffset {
			return fmt.Errorf("%s: tensor %q: data at offset %d, the index says %d", path, t.Name, ct.DataOffset, want.DataOffset)
		}
		if use != nil {
			if err := use(i, t, r); err != nil {
				return err
			}
		}
		// Read to the end so that the tensor's checksum is verified.
		if _, err := copyBuffer(io.Discard, r, buf); err != nil {
			return fmt.Errorf("%s: tensor %q: %w", path, t.Name, err)
		}
	}
	if _, _, err := s.Next(); err != io.EOF {
		if err == nil {
			err = errors.New("more tensors than the index lists")
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// exportPlain writes the model of the APR file at path, whose index (checked by
// Inspect against its CRC) is info and whose tensors are stored uncompressed, to w:
// header first, then each tensor once a goroutine that runs ahead has checked its
// bytes against the index CRC. Both read the file in windows of a read-only mapping
// where the platform allows (no copy; the pages are unmapped after use, so resident
// memory stays small), else through a buffer. A regular file w gets the bytes by
// copy_file_range, anything else by write(2) from the mapping.
func exportPlain(w io.Writer, path string, info *container.Info) error {
	h := container.Header{Type: info.Type, Flags: info.Flags & (container.FlagSigned | container.FlagLicensed | container.FlagQuantized), Metadata: *info.Metadata}
	entries := info.Tensors
	infos := make([]container.TensorInfo, len(entries))
	for i, e := range entries {
		infos[i] = e.TensorInfo
	}
	gh, err := Plan(h, infos)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	vf, err := regfile.Open(path)
	if err != nil {
		return err
	}
	defer vf.Close()
	ready := make(chan error, 16)
	done := make(chan struct{})
	defer close(done)
	go func() {
		var buf []byte // for a platform without mmap
		for i := range entries {
			e := &entries[i]
			var crc uint32
			err := eachWindow(vf, e.DataOffset, e.StoredSize, &buf, func(b []byte) error {
				crc = crc32.Update(crc, crc32.IEEETable, b)
				return nil
			})
			if err == nil && crc != e.CRC {
				err = &container.ChecksumError{What: "tensor data", Tensor: e.Name, Offset: e.DataOffset, Expected: e.CRC, Actual: crc}
			} else if err != nil {
				err = tensor.Wrap(e.Name, err)
			}
			select {
			case ready <- err:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	checked := func() error {
		if err := <-ready; err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	src, err := regfile.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	if out, ok := regularFile(w); ok {
		spans := make([]span, len(entries))
		for i, e := range entries {
			spans[i] = span{name: e.Name, off: e.DataOffset, size: e.StoredSize}
		}
		return copyData(out, src, path, gh, spans, checked)
	}
	var buf []byte
	return write(w, gh, func(gw *gguf.Writer) error {
		for i := range entries {
			e := &entries[i]
			if err := checked(); err != nil {
				return err
			}
			if err := eachWindow(src, e.DataOffset, e.StoredSize, &buf, func(b []byte) error {
				_, err := gw.Write(b)
				return err
			}); err != nil {
				return fmt.Errorf("%s: tensor %q: %w", path, e.Name, err)
			}
		}
		return nil
	})
}

// span is where a tensor's bytes are in a file.
type span struct {
	name      string
	off, size int64
}

// copyData writes gh and the tensors' bytes at spans of src (named path in errors, if
// not "") to out, calling before (if not nil) ahead of each tensor and stopping at its
// error. A file that copy_file_range
// cannot write (opened with O_APPEND, on a file system that refuses) gets the rest of
// the data through a buffer.
func copyData(out fileWriter, src *os.File, path string, gh *gguf.Header, spans []span, before func() error) error {
	prefix := ""
	if path != "" {
		prefix = path + ": "
	}
	pw := newPassWriter(out)
	gw, err := gguf.NewWriter(pw, gh)
	if err != nil {
		return err
	}
	var buf []byte // the fallback's buffer, once copy_file_range failed
	for _, e := range spans {
		if before != nil {
			if err := before(); err != nil {
				return err
			}
		}
		if err := pw.Flush(); err != nil {
			return err
		}
		if _, err := src.Seek(e.off, io.SeekStart); err != nil {
			return fmt.Errorf("%s%w", prefix, err)
		}
		lr := &io.LimitedReader{R: src, N: e.size}
		if buf == nil {
			if _, err := out.ReadFrom(lr); err != nil {
				buf = make([]byte, 1<<20) // lr and both file offsets count what was copied
			}
		}
		if buf != nil {
			if _, err := copyBuffer(out, lr, buf); err != nil {
				return fmt.Errorf("%stensor %q: %w", prefix, e.name, err)
			}
		}
		if lr.N != 0 {
			return fmt.Errorf("%stensor %q: %d bytes, want %d", prefix, e.name, e.size-lr.N, e.size)
		}
		if err := gw.Wrote(e.size); err != nil {
			return err
		}
	}
	if err := gw.Close(); err != nil {
		return err
	}
	return pw.Flush()
}

// openStreamPath opens path when it is neither a regular file nor a directory (a
// FIFO, as <(...) gives): such a path is read as stdin is, once, in order. ok is
// false for any other path, which is opened as a file (regfile).
func openStreamPath(path string) (f *os.File, ok bool, err error) {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() || st.IsDir() {
		return nil, false, nil // the file's open reports any error
	}
	f, err = os.Open(path)
	return f, true, err
}

// verifyingStream reads f, the model file at path, through the verifying stream reader;
// done closes both. f is closed on an error.
func verifyingStream(f *os.File, path string) (s stream.Stream, done func(), err error) {
	if s, err = stream.Open(f); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, func() { s.Close(); f.Close() }, nil
}

// withPath names path in err unless err does already.
func withPath(path string, err error) error {
	if strings.Contains(err.Error(), path) {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

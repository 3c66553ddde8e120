package ggufconv

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/atomicfile"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/internal/regfile"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// SplitOptions says how ExportSplit divides a model into the parts of a split set, as
// llama.cpp's llama-gguf-split --split does. Exactly one of the two limits is set.
type SplitOptions struct {
	// MaxTensors is the most tensors a part holds (--split-max-tensors): a new part
	// starts at every tensor whose index is a multiple of it.
	MaxTensors int
	// MaxSize is the most bytes of tensor data a part holds (--split-max-size), each
	// tensor counted with its padding to 32 bytes; the header is not counted.
	MaxSize int64
	// Parts are the tensor counts of the parts, in order, for llama-quantize
	// --keep-split, which keeps the input's parts: the tensors stay in the stream's
	// order (the input's), the first part's split keys are split.no, split.count and
	// split.tensors.count in that order (llama-quantize's), and a single part has none.
	Parts []int
}

// SplitResult is what ExportSplit wrote: the parts' paths in order, and the parts of
// an earlier set of the same prefix with another part count that it removed.
type SplitResult struct {
	Parts   []string
	Removed []string
}

// ParseSplitSize reads a --split-max-size value as llama-gguf-split does: a positive
// integer followed by M (10^6 bytes) or G (10^9 bytes). Anything else ("1.5G", "1MB",
// "1024", "0M") is an error, where llama-gguf-split would read "1.5G" as 1G.
func ParseSplitSize(s string) (int64, error) {
	unit := int64(0)
	switch {
	case strings.HasSuffix(s, "M"):
		unit = 1000 * 1000
	case strings.HasSuffix(s, "G"):
		unit = 1000 * 1000 * 1000
	default:
		return 0, fmt.Errorf("split size %q: want a positive whole number of M (megabytes, 10^6 bytes) or G (gigabytes, 10^9 bytes), as llama-gguf-split takes it: 500M, 4G", s)
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("split size %q: want a positive whole number of M (megabytes, 10^6 bytes) or G (gigabytes, 10^9 bytes), as llama-gguf-split takes it: 500M, 4G", s)
	}
	return n * unit, nil
}

// planSplit divides the merged header gh (laid out) into the parts' headers, as
// llama-gguf-split does: tensors in gh's order; a new part at each multiple of
// MaxTensors, or when a tensor's padded size would take the part's data over MaxSize;
// the first part has every KV of gh (without split keys) and then split.no,
// split.tensors.count and split.count, the others only these three; GGUF version 3.
func planSplit(gh *gguf.Header, o SplitOptions) ([]*gguf.Header, error) {
	set := 0
	for _, on := range []bool{o.MaxTensors > 0, o.MaxSize > 0, o.Parts != nil} {
		if on {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("a split set needs exactly one of a tensor count or a size per part, or the parts' tensor counts")
	}
	// llama-gguf-split pads every tensor to 32 bytes whatever general.alignment says.
	if gh.Alignment != gguf.DefaultAlignment {
		return nil, fmt.Errorf("key general.alignment: %d; llama-gguf-split writes parts aligned to %d only", gh.Alignment, gguf.DefaultAlignment)
	}
	n := len(gh.Tensors)
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("%d tensors: split.tensors.count is an i32", n)
	}
	var groups [][]gguf.TensorInfo
	var err error
	if o.Parts != nil {
		groups, err = partGroups(gh.Tensors, o.Parts)
	} else {
		groups, err = boundedGroups(gh.Tensors, o)
	}
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("the model has no tensors: nothing to split")
	}
	if len(groups) > math.MaxUint16 {
		return nil, fmt.Errorf("%d parts: split.count is a u16 (at most %d parts)", len(groups), math.MaxUint16)
	}
	var model []gguf.KV
	for _, kv := range gh.KVs {
		if kv.Key != KeySplitNo && kv.Key != KeySplitCount && kv.Key != KeySplitTensors {
			model = append(model, kv)
		}
	}
	parts := make([]*gguf.Header, len(groups))
	for p, g := range groups {
		ph := &gguf.Header{Version: 3}
		if p == 0 {
			ph.KVs = slices.Clone(model)
		}
		no := gguf.KV{Key: KeySplitNo, Value: gguf.Uint16(uint16(p))}
		count := gguf.KV{Key: KeySplitCount, Value: gguf.Uint16(uint16(len(groups)))}
		tensors := gguf.KV{Key: KeySplitTensors, Value: gguf.Int32(int32(n))}
		switch {
		case o.Parts == nil:
			ph.KVs = append(ph.KVs, no, tensors, count)
		case len(groups) > 1:
			ph.KVs = append(ph.KVs, no, count, tensors)
		}
		ph.Tensors = slices.Clone(g)
		if err := ph.Layout(); err != nil {
			return nil, fmt.Errorf("part %d: %w", p+1, err)
		}
		parts[p] = ph
	}
	return parts, nil
}

// ExportSplit writes the model of s as a split GGUF set, the files PREFIX-00001-of-
// 0000N.gguf to PREFIX-0000N-of-0000N.gguf, byte for byte what llama-gguf-split --split
// writes from the GGUF that Export would write. Every part is written to a pending
// temporary file beside its path (package atomicfile) and all are renamed into place
// only once every part is complete, so an error leaves no part behind and an earlier
// set of the same name untouched; after the renames, the parts of an earlier set of
// the same prefix with another part count are removed (the importer would refuse the
// mix).
//
// With a tensor table (format 2.1) the parts' headers are planned from it and written
// first, and each tensor's bytes are written at their place in their part as they
// arrive (in the file's order that is a sequential write of one part after the other;
// a preset's tensors, which llama-quantize orders otherwise, land at their offsets
// as well): no spool, one 1 MiB buffer. Without a table the tensors are spooled to a
// temporary file in o.TempDir first, as Export does.
func ExportSplit(prefix string, s stream.Stream, o ExportOptions, so SplitOptions) (*SplitResult, error) {
	h := s.Header()
	if err := checkArchitecture(h.Metadata, o); err != nil {
		return nil, err
	}
	return exportSplit(prefix, s, h, o, so)
}

// ExportSplitFile is ExportSplit of the model in the file at path. An APR v2 file
// without a tensor table gets the one of its index (the file's order), so that its
// tensors too are written as they are read, through the verifying stream reader
// (every record CRC and, before any part is renamed into place, the whole-file CRC).
func ExportSplitFile(prefix, path string, o ExportOptions, so SplitOptions) (*SplitResult, error) {
	if f, ok, err := openStreamPath(path); ok || err != nil {
		if err != nil {
			return nil, err
		}
		s, done, err := verifyingStream(f, path)
		if err != nil {
			return nil, err
		}
		defer done()
		res, err := ExportSplit(prefix, s, o, so)
		if err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return res, err
	}
	info, err := stream.Inspect(path)
	if err != nil {
		return nil, withPath(path, err)
	}
	if err := checkArchitecture(*info.Metadata, o); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, e := range info.Tensors {
		if e.Encrypted {
			return nil, fmt.Errorf("%s: tensor %q is sealed; unseal the file first", path, e.Name)
		}
	}
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	s, done, err := verifyingStream(f, path)
	if err != nil {
		return nil, err
	}
	defer done()
	h := s.Header()
	if h.Table == nil && info.Format == "APR v2" {
		h.Table = make([]container.TensorInfo, len(info.Tensors))
		for i, e := range info.Tensors {
			h.Table[i] = e.TensorInfo
		}
	}
	r, err := exportSplit(prefix, s, h, o, so)
	if err != nil && !strings.HasPrefix(err.Error(), prefix) {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return r, err
}

// exportSplit writes the split set of stream s, whose header (with the tensor table to
// use, if any) is h.
func exportSplit(prefix string, s stream.Stream, h container.Header, o ExportOptions, so SplitOptions) (*SplitResult, error) {
	if h.Table != nil {
		table := h.Table
		if presetOf(h.Metadata.Provenance) && so.Parts == nil {
			table, _ = llamaQuantizeOrder(table, make([]span, len(table)))
		}
		gh, err := Plan(h, table)
		if err != nil {
			return nil, err
		}
		return writeSplit(prefix, gh, so, s.Next)
	}
	if o.Spooling != nil {
		o.Spooling("the input has no tensor table (an APR stream of format 2.0, or from a producer that did not know its tensors up front): spooling the tensors to a temporary file")
	}
	spool, infos, spans, removeSpool, err := spoolStream(s, o.TempDir)
	if err != nil {
		return nil, err
	}
	defer removeSpool()
	if presetOf(h.Metadata.Provenance) && so.Parts == nil {
		infos, spans = llamaQuantizeOrder(infos, spans)
	}
	gh, err := Plan(h, infos)
	if err != nil {
		return nil, err
	}
	i := 0
	return writeSplit(prefix, gh, so, func() (container.TensorInfo, io.Reader, error) {
		if i == len(spans) {
			return container.TensorInfo{}, nil, io.EOF
		}
		i++
		return infos[i-1], io.NewSectionReader(spool, spans[i-1].off, spans[i-1].size), nil
	})
}

// partFile is a pending part of a split set.
type partFile struct {
	path string
	h    *gguf.Header
	f    *atomicfile.File
}

// writeSplit plans the parts of merged header gh, writes their headers to pending
// files, then each tensor that next gives (until io.EOF) at its place in its part with
// the padding after it, and renames the parts into place once every tensor of gh has
// been written and next has ended without error.
func writeSplit(prefix string, gh *gguf.Header, so SplitOptions, next func() (container.TensorInfo, io.Reader, error)) (*SplitResult, error) {
	heads, err := planSplit(gh, so)
	if err != nil {
		return nil, err
	}
	parts := make([]*partFile, len(heads))
	defer func() {
		for _, p := range parts {
			if p != nil && p.f != nil {
				p.f.Abort() // a no-op once committed
			}
		}
	}()
	type place struct{ part, index int }
	at := make(map[string]place, len(gh.Tensors))
	for p, ph := range heads {
		path := prefix + partSuffix(p, len(heads))
		if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file; a part of a split set is written as a new file and renamed into place", path)
		}
		f, err := atomicfile.Create(path, 0o666)
		if err != nil {
			return nil, err
		}
		parts[p] = &partFile{path: path, h: ph, f: f}
		head, err := ph.EncodeHeader()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if _, err := f.WriteAt(head, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for i, t := range ph.Tensors {
			at[t.Name] = place{p, i}
		}
	}
	done := make(map[string]bool, len(at))
	buf := make([]byte, 1<<20)
	zeros := make([]byte, gguf.DefaultAlignment)
	for {
		info, r, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		pl, ok := at[info.Name]
		if !ok || done[info.Name] {
			return nil, fmt.Errorf("tensor %q: not in the stream's tensor table (%d tensors), or twice in the stream", info.Name, len(at))
		}
		part := parts[pl.part]
		want, err := tensorInfo(info)
		if err != nil {
			return nil, err
		}
		ti := part.h.Tensors[pl.index]
		if want.Type != ti.Type || !slices.Equal(want.Dims, ti.Dims) {
			return nil, fmt.Errorf("tensor %q is %v %v, the stream's tensor table says otherwise (GGUF type %v dims %v)", info.Name, info.DType, info.Shape, ti.Type, ti.Dims)
		}
		size, _ := ti.Size()
		off := part.h.DataOffset + ti.Offset
		got, err := copyBuffer(io.NewOffsetWriter(part.f, off), r, buf)
		if err != nil {
			if strings.Contains(err.Error(), strconv.Quote(info.Name)) {
				return nil, err // the reader named the tensor already
			}
			if _, ok := err.(*os.PathError); ok {
				return nil, fmt.Errorf("%s: tensor %q: %w", part.path, info.Name, err)
			}
			return nil, tensor.Wrap(info.Name, err)
		}
		if got != size {
			return nil, fmt.Errorf("tensor %q: %d bytes, want %d", info.Name, got, size)
		}
		pad := (gguf.DefaultAlignment - size%gguf.DefaultAlignment) % gguf.DefaultAlignment
		if _, err := part.f.WriteAt(zeros[:pad], off+size); err != nil {
			return nil, fmt.Errorf("%s: %w", part.path, err)
		}
		done[info.Name] = true
	}
	for _, p := range parts {
		for _, t := range p.h.Tensors {
			if !done[t.Name] {
				return nil, fmt.Errorf("tensor %q: in the stream's tensor table but not in the stream", t.Name)
			}
		}
	}
	res := &SplitResult{}
	for _, p := range parts {
		if err := p.f.Commit(); err != nil {
			return nil, fmt.Errorf("%s: %w", p.path, err)
		}
		res.Parts = append(res.Parts, p.path)
	}
	stale, err := staleParts(prefix, len(parts))
	if err != nil {
		return res, err
	}
	for _, path := range stale {
		if err := os.Remove(path); err != nil {
			return res, fmt.Errorf("removing a part of an earlier split set: %w", err)
		}
		res.Removed = append(res.Removed, path)
	}
	return res, nil
}

// staleParts lists the files beside prefix named as the parts of a split set of
// prefix with another count than count, or as a part beyond count of count.
func staleParts(prefix string, count int) ([]string, error) {
	dir, base := filepath.Split(prefix)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `-([0-9]{5})-of-([0-9]{5})\.gguf$`)
	var stale []string
	for _, e := range ents {
		m := re.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			continue
		}
		no, _ := strconv.Atoi(m[1])
		if n, _ := strconv.Atoi(m[2]); n != count || no < 1 || no > count {
			stale = append(stale, filepath.Join(filepath.Dir(prefix), e.Name()))
		}
	}
	return stale, nil
}

// partGroups divides tensors into parts of the given tensor counts (--keep-split:
// the input's parts).
func partGroups(tensors []gguf.TensorInfo, parts []int) ([][]gguf.TensorInfo, error) {
	n := len(tensors)
	var groups [][]gguf.TensorInfo
	i := 0
	for p, k := range parts {
		if k <= 0 || k > n-i {
			return nil, fmt.Errorf("part %d of %d: %d tensors, and %d of the model's %d are left", p+1, len(parts), k, n-i, n)
		}
		groups = append(groups, tensors[i:i+k])
		i += k
	}
	if i != n {
		return nil, fmt.Errorf("the %d parts hold %d tensors, the model %d", len(parts), i, n)
	}
	return groups, nil
}

// boundedGroups divides tensors as llama-gguf-split does: a new part at each
// multiple of o.MaxTensors, or when a tensor's padded size would take the part's
// data over o.MaxSize.
func boundedGroups(tensors []gguf.TensorInfo, o SplitOptions) ([][]gguf.TensorInfo, error) {
	var groups [][]gguf.TensorInfo
	var cur int64
	for i, t := range tensors {
		size, _ := t.Size() // Layout checked it
		padded := (size + gguf.DefaultAlignment - 1) &^ (gguf.DefaultAlignment - 1)
		split := i == 0
		if o.MaxSize > 0 {
			if cur+padded > o.MaxSize {
				if i == 0 {
					return nil, fmt.Errorf("tensor %q: %d bytes (padded), more than the split size of %d bytes: the first part would hold no tensor", t.Name, padded, o.MaxSize)
				}
				split, cur = true, 0
			}
			cur += padded
		} else if i%o.MaxTensors == 0 {
			split = true
		}
		if split {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], t)
	}
	return groups, nil
}

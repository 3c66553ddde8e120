package ggufconv

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/internal/regfile"
	"github.com/apr-go/apr/lib/stream"
)

// The keys of a split GGUF set, as llama.cpp's gguf-split writes them into every part
// (LLM_KV_SPLIT_NO, LLM_KV_SPLIT_COUNT, LLM_KV_SPLIT_TENSORS_COUNT). The first part
// also holds every KV of the model; the others hold only these three.
const (
	KeySplitNo      = "split.no"            // u16: the part's index, 0-based
	KeySplitCount   = "split.count"         // u16: how many parts the set has
	KeySplitTensors = "split.tensors.count" // i32: the tensors of all parts together
	// ProvFiles is the provenance key of a split set's parts: a list of {"name",
	// "size"} (with "sha256" under ImportOptions.Digest), in part order, as
	// stconv records a sharded checkpoint's files.
	ProvFiles = "source_files"
)

// splitInfo is what a part's split keys say.
type splitInfo struct {
	no, count int   // split.no (-1 when absent), split.count
	tensors   int64 // split.tensors.count (-1 when absent)
}

// splitOf reads h's split keys. ok is false for a whole file: split.count absent, 0
// (what gguf-split --merge writes) or 1, as llama.cpp's loader reads it. A split key
// of another type than gguf-split writes is an error naming the key.
func splitOf(h *gguf.Header) (si splitInfo, ok bool, err error) {
	si = splitInfo{no: -1, tensors: -1}
	get := func(key string, want gguf.ValueType) (int64, bool, error) {
		v, ok := h.Get(key)
		if !ok {
			return 0, false, nil
		}
		if v.Type() != want {
			return 0, false, fmt.Errorf("key %s: must be a %s (as llama.cpp's gguf-split writes it), got %s", key, want, v.TypeName())
		}
		if u, ok := v.AsUint64(); ok {
			return int64(u), true, nil
		}
		n, _ := v.AsInt64()
		return n, true, nil
	}
	count, has, err := get(KeySplitCount, gguf.TypeUint16)
	if err != nil || !has || count < 2 {
		return si, false, err
	}
	si.count = int(count)
	no, has, err := get(KeySplitNo, gguf.TypeUint16)
	if err != nil {
		return si, false, err
	}
	if has {
		si.no = int(no)
	}
	t, has, err := get(KeySplitTensors, gguf.TypeInt32)
	if err != nil {
		return si, false, err
	}
	if has {
		si.tensors = t
	}
	return si, true, nil
}

// partSuffix is the end of part no (0-based) of a set of count parts' file name, as
// llama.cpp names them: "-00002-of-00003.gguf".
func partSuffix(no, count int) string { return fmt.Sprintf("-%05d-of-%05d.gguf", no+1, count) }

// SplitParts returns the paths of the count parts of the split set whose first part
// is first, found from its name as llama.cpp finds them: first must end in
// "-00001-of-NNNNN.gguf" (NNNNN = count), and part i is the same prefix with
// "-0000i-of-NNNNN.gguf".
func SplitParts(first string, count int) ([]string, error) {
	suffix := partSuffix(0, count)
	prefix, ok := strings.CutSuffix(first, suffix)
	if !ok || prefix == "" || strings.HasSuffix(prefix, string(filepath.Separator)) {
		return nil, fmt.Errorf("%s: the first part of a split GGUF set of %d parts (split.count), but its name does not end in %q after a prefix, so the other parts cannot be found (llama.cpp finds them by name too)", first, count, suffix)
	}
	paths := make([]string, count)
	for i := range paths {
		paths[i] = prefix + partSuffix(i, count)
	}
	return paths, nil
}

// partName matches the end of a part's file name after its prefix.
var partName = regexp.MustCompile(`^-([0-9]+)-of-([0-9]+)\.gguf$`)

// strayParts returns the files beside the set's parts that are named like parts of a
// set with the same prefix but are not among paths: an extra part ("-00004-of-00003"),
// or a part of another split of the same name ("-00001-of-00004").
func strayParts(paths []string) ([]string, error) {
	prefix := strings.TrimSuffix(paths[0], partSuffix(0, len(paths)))
	dir, base := filepath.Dir(prefix), filepath.Base(prefix)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range paths {
		want[filepath.Base(p)] = true
	}
	var stray []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), base)
		if ok && !want[e.Name()] && partName.MatchString(rest) {
			stray = append(stray, filepath.Join(dir, e.Name()))
		}
	}
	return stray, nil
}

// setHeaderBudget is the bytes of GGUF header all the parts of a split set may take
// together: the cap of one file's header (o.Limits.MaxHeaderBytes, 64 MiB by
// default). The parts' headers together are the merged file's header (the first
// part's KVs and every tensor info) and, per part, its first 24 bytes, the three
// split keys and the padding to the data (about 150 bytes), so a set within the
// budget is one whose merged file is within the same cap; without it, each part had
// the whole cap, and a set of many parts took that much memory per part.
func setHeaderBudget(l gguf.Limits) int64 {
	if l.MaxHeaderBytes > 0 {
		return l.MaxHeaderBytes
	}
	return gguf.DefaultLimits.MaxHeaderBytes
}

// openSet opens the split set whose first part's stream is first (opened from path,
// with split keys si) as one stream: the tensors of every part in part order, the
// first part's KVs without the three split keys, so the stream is the one of the
// merged file. The later parts are opened one at a time, each header read within
// what is left of the set's header budget (setHeaderBudget) and checked against the
// first part and the parts before it before the next is opened; their data is
// mapped only when the stream reaches them. Every part is checked before the stream
// is returned; on error first is closed too. placeholder, when not "", is the sha256
// given to every part in the provenance (to be patched); else the parts are hashed
// now when o.Digest.
func openSet(first *importStream, path string, si splitInfo, o ImportOptions, placeholder string) (_ *setStream, err error) {
	s := &setStream{parts: []*importStream{first}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if si.no != 0 {
		if si.no < 0 {
			return nil, fmt.Errorf("%s: split.count is %d but there is no %s: not a part of a split GGUF set as llama.cpp writes them", first.name, si.count, KeySplitNo)
		}
		hint := ""
		if prefix, ok := strings.CutSuffix(path, partSuffix(si.no, si.count)); ok && prefix != "" {
			hint = ", " + prefix + partSuffix(0, si.count)
		}
		return nil, fmt.Errorf("%s: part %d of a split GGUF set of %d parts (split.no %d): a set is read from its first part%s", first.name, si.no+1, si.count, si.no, hint)
	}
	if si.tensors < 0 {
		return nil, fmt.Errorf("%s: the first part of a split GGUF set has no %s (i32)", first.name, KeySplitTensors)
	}
	paths, err := SplitParts(path, si.count)
	if err != nil {
		return nil, err
	}
	s.paths = paths
	stray, err := strayParts(paths)
	if err != nil {
		return nil, fmt.Errorf("%s: listing the set's folder: %w", path, err)
	}
	if len(stray) > 0 {
		return nil, fmt.Errorf("%s: not a part of the set of %s, which has %d parts (split.count): an extra part, or one of another split of the same name; move it away", stray[0], path, si.count)
	}
	// The merged header: the first part's KVs without the split keys, every tensor.
	merged := *first.gh
	merged.KVs = nil
	for _, kv := range first.gh.KVs {
		switch kv.Key {
		case KeySplitNo, KeySplitCount, KeySplitTensors:
			continue
		}
		merged.KVs = append(merged.KVs, kv)
	}
	merged.Tensors = nil
	seen := map[string]string{}
	var sizes []int64
	budget, used := setHeaderBudget(o.Limits), int64(0)
	for i, name := range paths {
		if i > 0 {
			p, err := openPart(name, i, si.count, o, budget, used)
			if err != nil {
				return nil, err
			}
			s.parts = append(s.parts, p)
			if err := checkLaterPart(p, i, path, si, s.parts); err != nil {
				return nil, err
			}
		}
		p := s.parts[i]
		used += p.gh.DataOffset
		for _, t := range p.gh.Tensors {
			if other, dup := seen[t.Name]; dup {
				return nil, fmt.Errorf("%s: tensor %q is in %s too: a duplicated tensor (parts of different sets?)", p.name, t.Name, other)
			}
			seen[t.Name] = p.name
		}
		merged.Tensors = append(merged.Tensors, p.gh.Tensors...)
		// The size the header describes; the streaming reader would find a short or
		// long part only when it gets there, after earlier parts have gone out.
		st, err := p.file.Stat()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		want := p.gh.DataOffset + p.gh.DataSize()
		switch {
		case st.Size() < want:
			return nil, fmt.Errorf("%s: truncated: %d bytes, but its header describes %d (part %d of %d)", p.name, st.Size(), want, i+1, si.count)
		case st.Size() > want:
			return nil, fmt.Errorf("%s: %d unexpected bytes after the data section (offset %d; part %d of %d)", p.name, st.Size()-want, want, i+1, si.count)
		}
		sizes = append(sizes, st.Size())
	}
	if int64(len(merged.Tensors)) != si.tensors {
		return nil, fmt.Errorf("%s: the %d parts hold %d tensors, but split.tensors.count says %d", path, si.count, len(merged.Tensors), si.tensors)
	}
	files := make([]any, len(paths))
	for i, p := range paths {
		e := map[string]any{"name": filepath.Base(p), "size": sizes[i]}
		switch {
		case placeholder != "":
			e["sha256"] = placeholder
		case o.Digest:
			d, err := hashFile(s.parts[i].file, sizes[i], nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			e["sha256"] = d
		}
		files[i] = e
	}
	s.hdr, err = importHeader(&merged, map[string]any{ProvFiles: files})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The tensor table: every part's, in the order the parts' data comes.
	for _, p := range s.parts {
		s.hdr.Table = append(s.hdr.Table, p.hdr.Table...)
	}
	s.merged = &merged
	if o.Set != nil {
		o.Set(paths)
	}
	return s, nil
}

// openPart opens part i (0-based, i > 0) of a set of count parts and reads its
// header, which may take what is left of the set's header budget after the parts
// before it took used bytes. Its data is attached by startPart.
func openPart(path string, i, count int, o ImportOptions, budget, used int64) (*importStream, error) {
	left := budget - used
	before := fmt.Sprintf("parts 1 to %d take", i)
	if i == 1 {
		before = "part 1 takes"
	}
	budgetErr := func(what string) error {
		return fmt.Errorf("%s: part %d of %d: %s: the headers of all the parts of a split set together may take %d bytes "+
			"(the cap of one file's header, gguf.Limits.MaxHeaderBytes), and %s %d", path, i+1, count, what, budget, before, used)
	}
	if left <= 0 {
		return nil, budgetErr("no bytes are left of the split set's header budget for its header")
	}
	f, err := regfile.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: a part of the split set is missing: %w", path, err)
		}
		return nil, err
	}
	lim := o.Limits
	lim.MaxHeaderBytes = left
	gh, err := lim.ReadHeader(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		f.Close()
		var ge *gguf.Error
		if errors.As(err, &ge) && ge.Limit == "MaxHeaderBytes" {
			return nil, budgetErr(fmt.Sprintf("its header is longer than the %d bytes left of the split set's header budget (refused at offset %d)", left, ge.Offset))
		}
		return nil, named(path, err)
	}
	p, err := headerStream(path, gh, nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	p.closer, p.file = f, f
	return p, nil
}

// checkLaterPart checks the split keys and KVs of part i (0-based, i > 0) against
// the first part's (of path, split keys si); parts[:i] are the parts before it, each
// found to hold its own place.
func checkLaterPart(p *importStream, i int, path string, si splitInfo, parts []*importStream) error {
	psi, _, err := splitOf(p.gh)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	switch {
	case psi.no < 0:
		return fmt.Errorf("%s: no %s (u16): not a part of a split GGUF set (part %d of %s's set of %d expected)", p.name, KeySplitNo, i+1, path, si.count)
	case psi.count != si.count:
		return fmt.Errorf("%s: split.count is %d, but the first part %s says %d: a part of another set", p.name, psi.count, path, si.count)
	case psi.tensors != si.tensors:
		return fmt.Errorf("%s: split.tensors.count is %d, but the first part %s says %d: a part of another set", p.name, psi.tensors, path, si.tensors)
	case psi.no != i:
		what := "parts renamed out of order"
		switch {
		case psi.no == 0:
			what = "the first part of a set"
		case psi.no < i:
			what = fmt.Sprintf("a duplicate: %s holds that part too", parts[psi.no].name)
		}
		return fmt.Errorf("%s: holds part %d of the set (split.no %d), but its name makes it part %d of %d: %s", p.name, psi.no+1, psi.no, i+1, si.count, what)
	}
	for _, kv := range p.gh.KVs {
		switch kv.Key {
		case KeySplitNo, KeySplitCount, KeySplitTensors, gguf.AlignmentKey:
			continue
		}
		return fmt.Errorf("%s: holds the key %s: only the first part of a split set holds the model's key-values (%s's set has %d parts; is this the first part of another set?)", p.name, kv.Key, path, si.count)
	}
	return nil
}

// startPart gives a later part its data when the stream reaches it: from a mapping
// of its file where one can be made, else with read().
func startPart(p *importStream) error {
	if _, err := p.file.Seek(p.gh.DataOffset, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	if m, ok := mapFile(p.file); ok {
		p.mapped = m
		return p.attach(m, m)
	}
	return p.attach(sources(p.file))
}

// hashFile returns the hex SHA-256 of the size bytes of f, read from mapped windows
// (f's offset is not moved). A close of stop ends it early with an error.
func hashFile(f *os.File, size int64, stop <-chan struct{}) (string, error) {
	h := sha256.New()
	var buf []byte
	err := eachWindow(f, 0, size, &buf, func(b []byte) error {
		select {
		case <-stop:
			return errors.New("stopped")
		default:
		}
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// setStream is a split set read as the merged file: each part's tensors in turn.
type setStream struct {
	hdr    container.Header
	merged *gguf.Header
	paths  []string
	parts  []*importStream
	cur    int
}

func (s *setStream) Header() container.Header { return s.hdr }

// GGUF returns the merged header: the first part's KVs without the split keys, and
// the tensor infos of every part (their offsets are each part's own).
func (s *setStream) GGUF() *gguf.Header { return s.merged }

// Parts returns the paths of the set's parts, in order.
func (s *setStream) Parts() []string { return s.paths }

func (s *setStream) Next() (container.TensorInfo, io.Reader, error) {
	for s.cur < len(s.parts) {
		if p := s.parts[s.cur]; p.dr == nil {
			if err := startPart(p); err != nil {
				return container.TensorInfo{}, nil, err
			}
		}
		info, r, err := s.parts[s.cur].Next()
		if err == io.EOF {
			// Done with this part (its end checked): give its mapping back. The
			// file stays open until Close (ImportFile may still be hashing it).
			if p := s.parts[s.cur]; p.mapped != nil {
				err := p.mapped.unmap()
				p.mapped = nil
				if err != nil {
					return container.TensorInfo{}, nil, fmt.Errorf("%s: %w", p.name, err)
				}
			}
			s.cur++
			continue
		}
		return info, r, err
	}
	return container.TensorInfo{}, nil, io.EOF
}

func (s *setStream) Blocks() []container.Block { return nil }

func (s *setStream) Close() error {
	var err error
	for _, p := range s.parts {
		err = errors.Join(err, p.Close())
	}
	return err
}

// digestParts hashes every part for the provenance's source_files (sizes as opened).
func (s *setStream) digestParts(stop <-chan struct{}) (any, error) {
	files := s.hdr.Metadata.Provenance[ProvFiles].([]any)
	out := make([]any, len(files))
	for i, e := range files {
		m := e.(map[string]any)
		d, err := hashFile(s.parts[i].file, m["size"].(int64), stop)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.paths[i], err)
		}
		out[i] = map[string]any{"name": m["name"], "size": m["size"], "sha256": d}
	}
	return out, nil
}

// maybeSet reports whether the file stream s (of path) is a part of a split set, and
// then opens the whole set from it (or fails: a later part, a bad set). On error s
// is closed.
func maybeSet(s *importStream, path string, o ImportOptions, placeholder string) (stream.Stream, bool, error) {
	si, ok, err := splitOf(s.gh)
	if err != nil {
		s.Close()
		return nil, false, fmt.Errorf("%s: %w", s.name, err)
	}
	if !ok {
		return nil, false, nil
	}
	set, err := openSet(s, path, si, o, placeholder)
	if err != nil {
		return nil, true, err
	}
	return set, true, nil
}

// pipedPart is the error for a part of a split set read from stdin.
func pipedPart(name string, si splitInfo) error {
	return fmt.Errorf("%s: holds part %d of a split GGUF set of %d parts (split.no, split.count): the other parts are found from the first part's file name, which %s does not have; give the first part's path (NAME%s) instead",
		name, si.no+1, si.count, name, partSuffix(0, si.count))
}

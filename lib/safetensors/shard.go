package safetensors

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apr-go/apr/lib/atomicfile"
	"github.com/apr-go/apr/lib/internal/regfile"
)

// Hugging Face checkpoint file names.
const (
	IndexFileName  = "model.safetensors.index.json"
	SingleFileName = "model.safetensors"
)

// maxIndexSize caps the index file read by OpenCheckpoint.
const maxIndexSize = MaxHeaderSize

// IndexMeta is one entry of an index's "metadata" object; Value is the entry's JSON
// text as found (for HF's "total_size" and "total_parameters", an integer).
type IndexMeta struct {
	Key   string
	Value string
}

// WeightEntry maps one tensor to the shard file holding it.
type WeightEntry struct {
	Tensor string
	File   string
}

// Index is a model.safetensors.index.json: {"metadata": {...}, "weight_map": {tensor:
// file}}. WeightMap is sorted by tensor name.
type Index struct {
	Metadata  []IndexMeta
	WeightMap []WeightEntry
}

func indexErr(off int64, format string, args ...any) *Error {
	return errf(InvalidIndex, off, format, args...)
}

// ValidShardName reports whether name is a plain file name acceptable in a weight map:
// not empty, no path separator, no "..", no drive colon, no NUL or other control
// character, valid UTF-8.
func ValidShardName(name string) bool {
	return name != "" && name != "." && !strings.Contains(name, "..") &&
		!strings.ContainsAny(name, "/\\:\x00") && utf8.ValidString(name) &&
		strings.IndexFunc(name, unicode.IsControl) < 0 // no newline, escape or tab in a file name
}

// ParseIndex parses and checks an index file: a JSON object whose "weight_map" maps
// each tensor name once to a plain shard file name, and whose optional "metadata" is
// an object. Other top-level keys are ignored; repeated keys are refused. Offsets in
// errors count from the start of the index file.
func ParseIndex(b []byte) (*Index, error) {
	if !utf8.Valid(b) {
		return nil, indexErr(-1, "index is not valid UTF-8")
	}
	p := &jsonParser{b: b, kind: InvalidIndex}
	ix := &Index{}
	seen := map[string]bool{}
	haveMap := false
	err := p.object("the index", func(key string, keyOff int) error {
		if seen[key] {
			return p.errAt(keyOff, "duplicate key %q", key)
		}
		seen[key] = true
		switch key {
		case "metadata":
			if null, err := p.isNull(); null || err != nil {
				return err
			}
			mseen := map[string]bool{}
			return p.object("metadata", func(k string, kOff int) error {
				if mseen[k] {
					return p.errAt(kOff, "duplicate metadata key %q", k)
				}
				mseen[k] = true
				p.ws()
				start := p.i
				if err := p.skip(); err != nil {
					return err
				}
				ix.Metadata = append(ix.Metadata, IndexMeta{k, string(p.b[start:p.i])})
				return nil
			})
		case "weight_map":
			haveMap = true
			wseen := map[string]bool{}
			return p.object("weight_map", func(tensor string, tOff int) error {
				if wseen[tensor] {
					return p.errAt(tOff, "tensor %q listed twice in weight_map", tensor)
				}
				wseen[tensor] = true
				fOff := p.i
				file, err := p.str()
				if err != nil {
					return err
				}
				if !ValidShardName(file) {
					return &Error{Kind: InvalidIndex, Tensor: tensor, Offset: int64(fOff),
						Msg: fmt.Sprintf("shard file %q is not a plain file name (no path separators, no \"..\")", file)}
				}
				ix.WeightMap = append(ix.WeightMap, WeightEntry{tensor, file})
				return nil
			})
		default:
			return p.skip()
		}
	})
	if err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	if !haveMap {
		return nil, indexErr(-1, "no weight_map")
	}
	sort.Slice(ix.WeightMap, func(i, j int) bool { return ix.WeightMap[i].Tensor < ix.WeightMap[j].Tensor })
	sort.SliceStable(ix.Metadata, func(i, j int) bool { return ix.Metadata[i].Key < ix.Metadata[j].Key })
	return ix, nil
}

// TotalSize returns metadata.total_size when it is a non-negative integer.
func (ix *Index) TotalSize() (int64, bool) {
	for _, m := range ix.Metadata {
		if m.Key == "total_size" {
			v, err := strconv.ParseInt(m.Value, 10, 64)
			return v, err == nil && v >= 0
		}
	}
	return 0, false
}

// Files returns the distinct shard file names, sorted.
func (ix *Index) Files() []string {
	set := map[string]bool{}
	for _, w := range ix.WeightMap {
		set[w.File] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// FileOf returns the shard file of tensor.
func (ix *Index) FileOf(tensor string) (string, bool) {
	i := sort.Search(len(ix.WeightMap), func(i int) bool { return ix.WeightMap[i].Tensor >= tensor })
	if i < len(ix.WeightMap) && ix.WeightMap[i].Tensor == tensor {
		return ix.WeightMap[i].File, true
	}
	return "", false
}

// writePyObject writes an object of n entries, entry(i) giving each key and its
// value's JSON text, as json.dumps(indent=2) does one level down.
func writePyObject(b *bytes.Buffer, n int, entry func(i int) (key string, value []byte)) {
	if n == 0 {
		b.WriteString("{}")
		return
	}
	b.WriteString("{\n")
	for i := range n {
		key, value := entry(i)
		b.WriteString("    ")
		b.Write(appendPyString(nil, key))
		b.WriteString(": ")
		b.Write(value)
		if i < n-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  }")
}

// Marshal writes the index as transformers' save_pretrained does:
// json.dumps(index, indent=2, sort_keys=True) + "\n", with Python's default
// ensure_ascii escaping. Metadata values are written as their JSON text.
func (ix *Index) Marshal() []byte {
	var b bytes.Buffer
	meta := append([]IndexMeta{}, ix.Metadata...)
	sort.SliceStable(meta, func(i, j int) bool { return meta[i].Key < meta[j].Key })
	wm := append([]WeightEntry{}, ix.WeightMap...)
	sort.SliceStable(wm, func(i, j int) bool { return wm[i].Tensor < wm[j].Tensor })
	b.WriteString("{\n  \"metadata\": ")
	writePyObject(&b, len(meta), func(i int) (string, []byte) { return meta[i].Key, []byte(meta[i].Value) })
	b.WriteString(",\n  \"weight_map\": ")
	writePyObject(&b, len(wm), func(i int) (string, []byte) { return wm[i].Tensor, appendPyString(nil, wm[i].File) })
	b.WriteString("\n}\n")
	return b.Bytes()
}

// appendPyString quotes s as Python's json module does with ensure_ascii=True: '"'
// and '\\' escaped, \n \r \t \b \f by name, every other character outside printable
// ASCII (0x20-0x7E) as \uXXXX in lowercase hex, astral characters as surrogate pairs.
func appendPyString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	u4 := func(b []byte, r rune) []byte {
		return append(b, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
	}
	b = append(b, '"')
	for _, r := range s {
		switch k := strings.IndexRune(namedEscapes, r); {
		case k >= 0:
			b = append(b, '\\', escapedAs[k])
		case r >= 0x20 && r <= 0x7e:
			b = append(b, byte(r))
		case r >= 0x10000:
			r -= 0x10000
			b = u4(b, 0xD800+(r>>10))
			b = u4(b, 0xDC00+(r&0x3FF))
		default:
			b = u4(b, r)
		}
	}
	return append(b, '"')
}

// Checkpoint is an open Hugging Face checkpoint: one model.safetensors, or the shards
// of a model.safetensors.index.json, each fully checked, and every tensor of the
// weight map found in the shard it names (and no shard holding a tensor the map does
// not give it).
type Checkpoint struct {
	Dir    string
	Index  *Index  // nil for a single-file checkpoint
	Shards []*File // in file name order
	where  map[string]int
}

// OpenCheckpoint opens a checkpoint given its directory (holding
// model.safetensors.index.json or else model.safetensors), its index file, or a single
// .safetensors file.
func OpenCheckpoint(path string) (*Checkpoint, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	dir, indexPath := path, ""
	switch {
	case st.IsDir():
		indexPath = filepath.Join(path, IndexFileName)
		// Lstat: an index that is a dangling link is an error of its own, not a
		// checkpoint without an index.
		if _, err := os.Lstat(indexPath); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
			indexPath = ""
			single := filepath.Join(path, SingleFileName)
			if _, err := os.Lstat(single); errors.Is(err, os.ErrNotExist) {
				if pickle := pickleIn(path); pickle != "" {
					return nil, fmt.Errorf("%s: the checkpoint's weights are %s, a PyTorch pickle, which apr does not read (it reads SafeTensors only: %s or %s)",
						path, pickle, SingleFileName, IndexFileName)
				}
			}
			path = single
		}
	case strings.HasSuffix(path, ".json"):
		dir, indexPath = filepath.Dir(path), path
	default:
		dir = filepath.Dir(path)
	}
	c := &Checkpoint{Dir: dir, where: map[string]int{}}
	if indexPath == "" {
		f, err := Open(path)
		if err != nil {
			return nil, err
		}
		c.Shards = []*File{f}
		for _, t := range f.Header().Tensors {
			c.where[t.Name] = 0
		}
		return c, nil
	}
	ix, err := readIndex(indexPath)
	if err != nil {
		return nil, withFile(err, indexPath)
	}
	c.Index = ix
	for i, name := range ix.Files() {
		f, err := Open(filepath.Join(dir, name))
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: safetensors: shard %d (%s): %w", indexPath, i+1, name, err)
		}
		c.Shards = append(c.Shards, f)
		for _, t := range f.Header().Tensors {
			want, ok := ix.FileOf(t.Name)
			if !ok || want != name {
				c.Close()
				msg := "shard holds a tensor the weight_map does not list"
				if ok {
					msg = fmt.Sprintf("shard holds a tensor the weight_map puts in %s", want)
				}
				return nil, &Error{Kind: InvalidIndex, File: f.Path(), Tensor: t.Name, Offset: -1, Msg: msg}
			}
			c.where[t.Name] = i
		}
	}
	for _, w := range ix.WeightMap {
		if _, ok := c.where[w.Tensor]; !ok {
			c.Close()
			return nil, &Error{Kind: InvalidIndex, File: filepath.Join(dir, w.File), Tensor: w.Tensor, Offset: -1,
				Msg: "weight_map lists the tensor in this shard but the shard does not hold it"}
		}
	}
	return c, nil
}

func readIndex(path string) (*Index, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndexSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxIndexSize {
		return nil, indexErr(-1, "index larger than %d bytes", maxIndexSize)
	}
	return ParseIndex(b)
}

// Lookup returns the shard holding tensor name and the tensor's entry there.
func (c *Checkpoint) Lookup(name string) (*File, TensorInfo, bool) {
	i, ok := c.where[name]
	if !ok {
		return nil, TensorInfo{}, false
	}
	t, _ := c.Shards[i].Lookup(name)
	return c.Shards[i], t, true
}

// Data returns the bytes of tensor name (see File.Data).
func (c *Checkpoint) Data(name string) ([]byte, error) {
	f, t, ok := c.Lookup(name)
	if !ok {
		return nil, &Error{Kind: TensorNotFound, File: c.Dir, Tensor: name, Offset: -1, Msg: "no tensor of that name in the checkpoint"}
	}
	return f.TensorData(t)
}

// Close closes every shard.
func (c *Checkpoint) Close() error {
	var first error
	for _, f := range c.Shards {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.Shards = nil
	return first
}

// Shard is one planned file of a sharded checkpoint.
type Shard struct {
	File   string  // plain file name
	Header *Header // its layout (tensor order and offsets as the crate writes them)
}

// ShardPlan is a checkpoint split into shards.
type ShardPlan struct {
	Shards    []Shard
	Index     *Index // nil when there is a single shard (HF writes no index then)
	TotalSize int64  // sum of the tensors' byte sizes (HF's metadata.total_size)
}

// PlanShards splits tensors into shards as huggingface_hub's
// split_state_dict_into_shards_factory does: tensors are taken in the given order
// (the state dict's); one larger than maxShardSize gets a shard of its own, added at
// once; otherwise a tensor that would take the current shard over maxShardSize closes
// it first. One shard is named model.safetensors and has no index; n > 1 shards are
// model-00001-of-0000n.safetensors and an Index with metadata {"total_size": N} and
// the weight map. meta is written into every shard (transformers writes
// {"format": "pt"}). No tensors give one empty model.safetensors.
func PlanShards(tensors []TensorSpec, maxShardSize int64, meta Metadata) (*ShardPlan, error) {
	if maxShardSize <= 0 {
		return nil, errf(InvalidTensor, -1, "shard size limit %d must be positive", maxShardSize)
	}
	var groups [][]TensorSpec
	var cur []TensorSpec
	var curSize, total int64
	seen := map[string]bool{}
	for _, t := range tensors {
		if seen[t.Name] {
			return nil, tensorErr(InvalidTensor, t.Name, -1, "duplicate tensor name")
		}
		seen[t.Name] = true
		size, err := SpecSize(t)
		if err != nil {
			return nil, err
		}
		if total+size < total {
			return nil, tensorErr(InvalidTensor, t.Name, -1, "total size overflows")
		}
		total += size
		if size > maxShardSize {
			groups = append(groups, []TensorSpec{t})
			continue
		}
		if curSize+size > maxShardSize {
			groups = append(groups, cur)
			cur, curSize = nil, 0
		}
		cur = append(cur, t)
		curSize += size
	}
	if len(cur) > 0 || len(groups) == 0 {
		groups = append(groups, cur)
	}
	plan := &ShardPlan{TotalSize: total}
	n := len(groups)
	for i, g := range groups {
		name := SingleFileName
		if n > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n)
		}
		h, err := Layout(meta, g)
		if err != nil {
			return nil, err
		}
		plan.Shards = append(plan.Shards, Shard{File: name, Header: h})
	}
	if n > 1 {
		ix := &Index{Metadata: []IndexMeta{{"total_size", strconv.FormatInt(total, 10)}}}
		for _, s := range plan.Shards {
			for _, t := range s.Header.Tensors {
				ix.WeightMap = append(ix.WeightMap, WeightEntry{t.Name, s.File})
			}
		}
		sort.Slice(ix.WeightMap, func(i, j int) bool { return ix.WeightMap[i].Tensor < ix.WeightMap[j].Tensor })
		plan.Index = ix
	}
	return plan, nil
}

// WriteDir writes the planned shards and (when sharded) the index into dir. data is
// called for each tensor, in each shard's data order, and must return exactly its
// bytes. Each file is written to a temporary name and renamed when complete.
func (p *ShardPlan) WriteDir(dir string, data func(TensorInfo) (io.Reader, error)) error {
	for _, s := range p.Shards {
		err := writeAtomic(filepath.Join(dir, s.File), func(w io.Writer) error {
			sw, err := NewWriterHeader(w, s.Header)
			if err != nil {
				return err
			}
			for _, t := range s.Header.Tensors {
				r, err := data(t)
				if err != nil {
					return err
				}
				n, err := io.Copy(sw, io.LimitReader(r, t.Size()+1))
				if err != nil {
					return err
				}
				if n != t.Size() {
					return tensorErr(InvalidTensor, t.Name, s.Header.DataStart()+t.Begin, "%d bytes of data, expected %d", n, t.Size())
				}
			}
			return sw.Close()
		})
		if err != nil {
			return withFile(err, filepath.Join(dir, s.File))
		}
	}
	if p.Index != nil {
		return writeAtomic(filepath.Join(dir, IndexFileName), func(w io.Writer) error {
			_, err := w.Write(p.Index.Marshal())
			return err
		})
	}
	return nil
}

func writeAtomic(path string, fill func(io.Writer) error) error {
	f, err := atomicfile.Create(path, 0o666)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := fill(f); err != nil {
		return err
	}
	return f.Commit()
}

// pickleIn names the PyTorch weights a checkpoint directory holds in place of
// SafeTensors (the names transformers saves), or "".
func pickleIn(dir string) string {
	for _, name := range []string{"pytorch_model.bin", "pytorch_model.bin.index.json", "model.pt", "model.pth", "consolidated.00.pth"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return name
		}
	}
	return ""
}

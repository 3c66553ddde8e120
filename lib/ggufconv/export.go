package ggufconv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
)

// ExportOptions controls an export.
type ExportOptions struct {
	// TempDir is where Export spools tensor data ("" for os.TempDir()).
	TempDir string
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
		ver, kvs, err := DecodeKVs(x)
		if err != nil {
			return nil, err
		}
		gh.Version, gh.KVs = ver, kvs
		setFileType(gh, md.Provenance)
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
		return gguf.TensorInfo{}, fmt.Errorf("tensor %q: %w", t.Name, err)
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
}

// setFileType updates general.file_type after apr-quant changed the tensor types
// (provenance "quantization" of this APR file, which an import starts afresh), and adds
// general.quantization_version 2 for a GGML block type when it is absent, as
// llama-quantize does. A file that was not quantized after import is left alone.
func setFileType(gh *gguf.Header, prov map[string]any) {
	q, _ := prov["quantization"].(map[string]any)
	typ, _ := q["type"].(string)
	ft, ok := fileTypes[typ]
	if !ok {
		return
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
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Export writes the model of s as GGUF to w. GGUF puts every tensor's info before the
// data, so the tensors are first spooled to a temporary file in o.TempDir (removed
// before Export returns) while their infos are collected and checked; the header is
// then planned and checked in full and only then is anything written to w. Memory stays
// bounded (one copy buffer); disk use is the model's raw size.
func Export(w io.Writer, s apr.Stream, o ExportOptions) error {
	h := s.Header()
	spool, err := os.CreateTemp(o.TempDir, "apr-gguf-*.spool")
	if err != nil {
		return fmt.Errorf("spooling tensors: %w", err)
	}
	defer func() {
		spool.Close()
		os.Remove(spool.Name())
	}()
	bw := bufio.NewWriterSize(spool, 1<<20)
	var infos []container.TensorInfo
	for {
		info, r, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if _, err := tensorInfo(info); err != nil {
			return err
		}
		size, err := info.RawSize()
		if err != nil {
			return fmt.Errorf("tensor %q: %w", info.Name, err)
		}
		n, err := io.Copy(bw, r)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", info.Name, err)
		}
		if n != size {
			return fmt.Errorf("tensor %q: %d bytes, want %d", info.Name, n, size)
		}
		infos = append(infos, info)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("spooling tensors: %w", err)
	}
	gh, err := Plan(h, infos)
	if err != nil {
		return err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spooling tensors: %w", err)
	}
	return write(w, gh, func(gw *gguf.Writer) error {
		_, err := io.CopyBuffer(gw, spool, make([]byte, 1<<20))
		return err
	})
}

// write writes header gh to w and the data that fill provides, buffered.
func write(w io.Writer, gh *gguf.Header, fill func(*gguf.Writer) error) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	gw, err := gguf.NewWriter(bw, gh)
	if err != nil {
		return err
	}
	if err := fill(gw); err != nil {
		return err
	}
	if err := gw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// ExportFile writes the model in the file at path as GGUF to w. For an APR v2 file the
// tensor list comes from the index at the end of the file, so the GGUF header is
// planned and checked before any byte is written and the data then streams from the
// file in one verified pass, without a spool; other inputs (aprender files) go through
// Export.
func ExportFile(w io.Writer, path string, o ExportOptions) error {
	info, err := apr.Inspect(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := apr.OpenStream(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer s.Close()
	if info.Format != "APR v2" {
		return Export(w, s, o)
	}
	infos := make([]container.TensorInfo, len(info.Tensors))
	for i, e := range info.Tensors {
		if e.Encrypted {
			return fmt.Errorf("%s: tensor %q is sealed; unseal the file first", path, e.Name)
		}
		infos[i] = e.TensorInfo
	}
	gh, err := Plan(s.Header(), infos)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	buf := make([]byte, 1<<20)
	return write(w, gh, func(gw *gguf.Writer) error {
		for i := range infos {
			t, r, err := s.Next()
			if err == io.EOF {
				return fmt.Errorf("%s: stream ended after %d of %d tensors in the index", path, i, len(infos))
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if t.Name != infos[i].Name || t.DType != infos[i].DType || !slices.Equal(t.Shape, infos[i].Shape) {
				return fmt.Errorf("%s: tensor %d is %q %v %v, the index says %q %v %v", path, i, t.Name, t.DType, t.Shape, infos[i].Name, infos[i].DType, infos[i].Shape)
			}
			size, _ := t.RawSize()
			if n, err := io.CopyBuffer(gw, io.LimitReader(r, size), buf); err != nil {
				return fmt.Errorf("%s: tensor %q: %w", path, t.Name, err)
			} else if n != size {
				return fmt.Errorf("%s: tensor %q: %d bytes, want %d", path, t.Name, n, size)
			}
			// Read to the end so that the tensor's checksum is verified.
			if _, err := io.Copy(io.Discard, r); err != nil {
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
	})
}

package ggufconv

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/llm"
	"github.com/apr-go/apr/lib/quant"
)

// checkArchitecture refuses to export a Hugging Face language model that is not in
// llama.cpp's form (an architecture lib/llm does not convert, a config.json that names
// none, or one imported with HFLayout): its GGUF would carry Hugging Face tensor names
// and no hyperparameters, which llama.cpp cannot run. ExportOptions.Generic writes it
// anyway.
func checkArchitecture(md container.Metadata, o ExportOptions) error {
	if o.Generic {
		return nil
	}
	if _, ok := md.Extra[KeyGGUF]; ok {
		return nil
	}
	files, _ := md.Extra["hf_files"].(map[string]any)
	var raw []byte
	switch b := files["config.json"].(type) { // bytes as written, a string as read back
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	}
	arch := llm.Architecture(map[string][]byte{"config.json": raw})
	if arch == "" {
		if _, ok := files["config.json"]; ok {
			return fmt.Errorf(`config.json names no architecture ("architectures" is missing or not a list of names), ` +
				"so apr cannot tell which model this is (llama.cpp's converter refuses it too); --generic writes a generic " +
				"GGUF of the tensors under their own names, which llama.cpp cannot run")
		}
		return nil
	}
	if _, known := llm.LookupArch(arch); known {
		return fmt.Errorf("this %s checkpoint was imported in its Hugging Face layout; import it without --hf-layout "+
			"to get llama.cpp's form, or export a generic GGUF with --generic", arch)
	}
	return fmt.Errorf("architecture %q (config.json) is not one apr converts for llama.cpp (supported: %s); "+
		"--generic writes a generic GGUF of the tensors under their own names, which llama.cpp cannot run",
		arch, strings.Join(llm.Supported(), ", "))
}

// presetOf reports whether the model was quantized with a llama-quantize preset
// (apr-quant q4_k_m and the like): its GGUF is then laid out as llama-quantize writes
// one, so that the bytes are the same.
func presetOf(prov map[string]any) bool {
	q, _ := prov["quantization"].(map[string]any)
	rules, _ := q["rules"].(map[string]any)
	_, ok := rules["preset"].(string)
	return ok
}

// llamaQuantizeOrder sorts the tensors as llama.cpp's model loader lists them, which
// is the order llama-quantize writes: tensors outside the blocks first, then block by
// block (blk.N by N), each group by name.
func llamaQuantizeOrder(infos []container.TensorInfo, spans []span) ([]container.TensorInfo, []span) {
	idx := make([]int, len(infos))
	for i := range idx {
		idx[i] = i
	}
	key := func(name string) (int, string) {
		rest, ok := strings.CutPrefix(name, "blk.")
		if !ok {
			return -1, name
		}
		n, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '.'), 0)])
		if err != nil {
			return -1, name
		}
		return n, name
	}
	sort.SliceStable(idx, func(a, b int) bool {
		la, na := key(infos[idx[a]].Name)
		lb, nb := key(infos[idx[b]].Name)
		if la != lb {
			return la < lb
		}
		return na < nb
	})
	oi, os := make([]container.TensorInfo, len(infos)), make([]span, len(spans))
	for i, j := range idx {
		oi[i], os[i] = infos[j], spans[j]
	}
	return oi, os
}

// setKVOverrides sets the key-values of apr-quant --override-kv (provenance
// quantization.override_kv; the metadata's key-values already hold their values)
// once more after general.file_type, in the order given, as llama-quantize sets them
// after that key and before the quantize.imatrix.* keys.
func setKVOverrides(gh *gguf.Header, prov map[string]any) error {
	q, _ := prov["quantization"].(map[string]any)
	specs, _ := q["override_kv"].([]any)
	for _, x := range specs {
		spec, _ := x.(string)
		kv, err := quant.ParseKVOverride(spec)
		if err != nil {
			return fmt.Errorf("provenance quantization.override_kv: %w", err)
		}
		gh.KVs = quant.SetKV(gh.KVs, kv.Key, kv.Value)
	}
	return nil
}

// prunedBlockCount is ARCH.block_count as apr-quant --prune-layers set it in the
// key-values, and whether it did. The export sets it after the other keys, where
// llama-quantize sets it after pruning, and after the --override-kv keys: an
// override of block_count is replaced by the count pruning leaves, as there.
func prunedBlockCount(gh *gguf.Header, prov map[string]any) (gguf.KV, bool) {
	q, _ := prov["quantization"].(map[string]any)
	if _, ok := q["prune_layers"]; !ok {
		return gguf.KV{}, false
	}
	v, _ := gh.Get(KeyArchitecture)
	arch, _ := v.AsString()
	n, ok := gh.Get(arch + ".block_count")
	return gguf.KV{Key: arch + ".block_count", Value: n}, ok
}

// llama-quantize's keys for the importance matrix a file was quantized with.
const (
	KeyImatrixFile    = "quantize.imatrix.file"
	KeyImatrixDataset = "quantize.imatrix.dataset"
	KeyImatrixEntries = "quantize.imatrix.entries_count"
	KeyImatrixChunks  = "quantize.imatrix.chunks_count"
)

// setImatrix writes the quantize.imatrix.* keys of a model apr-quant quantized with
// an importance matrix (provenance quantization.imatrix), after the other keys and
// in llama-quantize's order and types: the file as given on the command line, the
// dataset when the matrix names one, the entry count, and the chunk count when
// positive (UINT32, as today's llama-quantize writes them; b4747 wrote INT32). llama-quantize passes both strings through 128-byte fields,
// which keep at most 127 bytes and stop at a NUL; so do these.
func setImatrix(gh *gguf.Header, prov map[string]any) {
	q, _ := prov["quantization"].(map[string]any)
	m, ok := q["imatrix"].(map[string]any)
	if !ok {
		return
	}
	file, _ := m["file"].(string)
	gh.KVs = quant.SetKV(gh.KVs, KeyImatrixFile, gguf.String(field127(file)))
	if ds, _ := m["dataset"].(string); ds != "" {
		gh.KVs = quant.SetKV(gh.KVs, KeyImatrixDataset, gguf.String(field127(ds)))
	}
	entries, _ := asInt64(m["entries_count"])
	gh.KVs = quant.SetKV(gh.KVs, KeyImatrixEntries, gguf.Uint32(uint32(entries)))
	if chunks, ok := asInt64(m["chunks_count"]); ok && chunks > 0 {
		gh.KVs = quant.SetKV(gh.KVs, KeyImatrixChunks, gguf.Uint32(uint32(chunks)))
	}
}

// field127 is what a C string copied into llama.cpp's char[128] override field keeps.
func field127(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if len(s) > 127 {
		s = s[:127]
	}
	return s
}

func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case uint64:
		return int64(n), true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case uint32:
		return int64(n), true
	}
	return 0, false
}

// ggmlDims drops the trailing dimensions of 1 (ggml's ne order) but the first, as
// llama-quantize writes every tensor (gguf_add_tensor counts ggml_n_dims): Qwen2-MoE's
// shared-expert gate, [hidden, 1] in the converter's file, is 1-D in its output.
func ggmlDims(dims []int64) []int64 {
	n := len(dims)
	for n > 1 && dims[n-1] == 1 {
		n--
	}
	return dims[:n]
}

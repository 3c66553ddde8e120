package quant

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
)

// A preset is one of llama-quantize's file types: a default type for the weights and
// rules that give some tensors more bits (llama_tensor_get_type in llama.cpp's
// src/llama-quant.cpp, as of b4747). The rules apply to language models, whose
// description (the metadata's GGUF key-values) names an architecture and its layers;
// for any other model a preset that is also a type name is that type.
type preset struct {
	name     string // apr-quant's name, lower case
	fileType uint32 // llama_ftype
	def      dtype.DType
}

var presets = []preset{
	{"q4_0", 2, dtype.Q4_0}, {"q4_1", 3, dtype.Q4_1}, {"q5_0", 8, dtype.Q5_0}, {"q5_1", 9, dtype.Q5_1},
	{"q2_k", 10, dtype.Q2_K}, {"q3_k_s", 11, dtype.Q3_K}, {"q3_k_m", 12, dtype.Q3_K}, {"q3_k_l", 13, dtype.Q3_K},
	{"q4_k_s", 14, dtype.Q4_K}, {"q4_k_m", 15, dtype.Q4_K}, {"q5_k_s", 16, dtype.Q5_K}, {"q5_k_m", 17, dtype.Q5_K},
	{"q6_k", 18, dtype.Q6_K},
	// the i-quant, ternary and MXFP4 file types, and Q2_K_S: rules in todayPresetType
	{"iq2_xxs", 19, dtype.IQ2_XXS}, {"iq2_xs", 20, dtype.IQ2_XS}, {"q2_k_s", 21, dtype.Q2_K}, {"iq3_xs", 22, dtype.IQ3_S},
	{"iq3_xxs", 23, dtype.IQ3_XXS}, {"iq1_s", 24, dtype.IQ1_S}, {"iq4_nl", 25, dtype.IQ4_NL}, {"iq3_s", 26, dtype.IQ3_S},
	{"iq3_m", 27, dtype.IQ3_S}, {"iq2_s", 28, dtype.IQ2_XS}, {"iq2_m", 29, dtype.IQ2_S}, {"iq4_xs", 30, dtype.IQ4_XS},
	{"iq1_m", 31, dtype.IQ1_M}, {"tq1_0", 36, dtype.TQ1_0}, {"tq2_0", 37, dtype.TQ2_0}, {"mxfp4_moe", 38, dtype.MXFP4},
	{"q1_0", 40, dtype.Q1_0}, {"q2_0", 41, dtype.Q2_0},
}

func presetNames() []string {
	var names []string
	for _, p := range presets {
		names = append(names, p.name)
	}
	return names
}

func lookupPreset(name string) (preset, bool) {
	l := strings.ToLower(name)
	for _, p := range presets {
		if p.name == l {
			return p, true
		}
	}
	return preset{}, false
}

// Preset returns the llama-quantize file type a target name stands for ("q4_k_m",
// also "q4_0", "q2_k", ...) and whether it is one. Options.Preset takes it.
func Preset(name string) (string, bool) {
	p, ok := lookupPreset(name)
	return p.name, ok
}

// PresetFileType is llama.cpp's general.file_type of a preset ("Q4_K_M": 15).
func PresetFileType(name string) (uint32, bool) {
	p, ok := lookupPreset(name)
	return p.fileType, ok
}

// llmModel is what the rules need to know of a language model.
type llmModel struct {
	arch                   string
	layers, heads, kvHeads int
	// vLayers is the layer count before an override of block_count: llama.cpp counts
	// the attn_v tensors for their rules (n_attention_wv), the hyperparameter for the rest.
	vLayers int
	experts int
	// hasOutput: the model has output.weight (llama.cpp's has_output), known from the
	// plan or the checkpoint's config; otherwise it is assumed when token_embd.weight
	// comes first (a pipe from a GGUF), and checked at the end (assumed).
	hasOutput, outputKnown, assumed bool
	sawOutput                       bool
	fromCheckpoint                  bool // imported from a Hugging Face checkpoint (hf_files)
	imatrix                         bool // quantized with an importance matrix (llama.cpp's has_imatrix)
	ffnDown                         int  // ffn_down tensors the iq1/iq2 rules have seen (llama.cpp's i_ffn_down)
}

// ggufArchitecture is the general.architecture of a stream in llama.cpp's form, "" for
// any other.
func ggufArchitecture(h container.Header) string {
	x, ok := h.Metadata.Extra[gguf.MetadataKey]
	if !ok {
		return ""
	}
	_, kvs, err := gguf.DecodeKVs(x)
	if err != nil {
		return ""
	}
	gh := gguf.Header{KVs: kvs}
	v, _ := gh.Get("general.architecture")
	s, _ := v.AsString()
	return s
}

// llmFromHeader reads the model's description from the metadata's GGUF key-values,
// with the int overrides of its hyperparameters (see KVOverride); nil when there is
// none or it names no architecture with layers.
func llmFromHeader(h container.Header, ovs []KVOverride) *llmModel {
	x, ok := h.Metadata.Extra[gguf.MetadataKey]
	if !ok {
		return nil
	}
	_, kvs, err := gguf.DecodeKVs(x)
	if err != nil {
		return nil
	}
	gh := gguf.Header{KVs: kvs}
	v, _ := gh.Get("general.architecture")
	arch, ok := v.AsString()
	if !ok {
		return nil
	}
	num := func(key string) int {
		v, ok := gh.Get(arch + "." + key)
		n, isInt := v.AsUint64()
		if !ok || !isInt || n > 1<<20 {
			return 0
		}
		return int(n)
	}
	m := &llmModel{arch: arch, layers: num("block_count"), heads: num("attention.head_count"),
		kvHeads: num("attention.head_count_kv"), experts: num("expert_count")}
	m.vLayers = m.layers
	m.overrideHparams(ovs)
	if m.layers == 0 {
		return nil
	}
	if m.kvHeads == 0 {
		m.kvHeads = m.heads
	}
	if files, ok := h.Metadata.Extra["hf_files"].(map[string]any); ok { // a checkpoint says whether it ties
		m.fromCheckpoint = true
		var raw []byte
		switch b := files["config.json"].(type) {
		case []byte:
			raw = b
		case string:
			raw = []byte(b)
		}
		var cfg struct {
			Tie *bool `json:"tie_word_embeddings"`
		}
		if json.Unmarshal(raw, &cfg) == nil && cfg.Tie != nil {
			m.hasOutput, m.outputKnown = !*cfg.Tie, true
		}
	}
	return m
}

// llamaQuantizeLayout reports whether a plain target (q8_0, f16, bf16, f32) of model h
// is what llama-quantize would make: for a language model imported from a GGUF, the
// export is then laid out as llama-quantize writes it (no per-tensor rules apply to
// these types). From a checkpoint these targets are the converter's --outtype, laid out
// as the converter writes.
func llamaQuantizeLayout(t dtype.DType, h container.Header) bool {
	switch t {
	case dtype.Q8_0, dtype.F16, dtype.BF16, dtype.F32:
		m := llmFromHeader(h, nil)
		return m != nil && !m.fromCheckpoint
	}
	return false
}

// checkEnd reports a wrong assumption about output.weight once the stream has ended.
func (m *llmModel) checkEnd() error {
	if m.assumed && !m.sawOutput {
		return fmt.Errorf("the model has no output.weight (tied embeddings), so llama-quantize would give token_embd.weight " +
			"the output's type; a stream that lists token_embd first cannot know that in time: quantize the file " +
			"(apr-quant PRESET MODEL.apr, whose index lists the tensors) instead of a pipe")
	}
	return nil
}

// attnVLayers is the layer count attn_v's rules use (vLayers, when set).
func (m *llmModel) attnVLayers() int {
	if m.vLayers > 0 {
		return m.vLayers
	}
	return m.layers
}

// gqa is n_head / n_head_kv, as llama.cpp's n_gqa().
func (m *llmModel) gqa() int {
	if m.kvHeads == 0 {
		return 0
	}
	return m.heads / m.kvHeads
}

// layerOf returns N of a "blk.N." tensor name, or -1.
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '.'), 0)])
	if err != nil {
		return -1
	}
	return n
}

// moreBits is llama.cpp's use_more_bits: the first and last eighth of the layers and
// every third one between.
func moreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// presetType is the type the preset gives tensor t (a weight the selection converts),
// before the fallback for rows that are not whole blocks. It follows llama.cpp's
// rules for the K-quant and legacy presets; the i-quant, ternary, MXFP4_MOE and
// Q2_K_S presets are todayPresetType's.
func (m *llmModel) presetType(p preset, name string, rowLen int64) dtype.DType {
	t := p.def
	ft := p.name
	i, n := layerOf(name), m.layers
	falcon := m.arch == "falcon"
	if tokenEmbd(name) && !m.outputKnown && !m.hasOutput {
		m.hasOutput, m.assumed = true, true // most models have one; checked at the end
	}
	switch {
	case name == "output.weight" || (!m.hasOutput && tokenEmbd(name)):
		if falcon || rowLen%int64(t.Info().BlockElems) != 0 {
			return dtype.Q8_0
		}
		if t != dtype.Q8_0 {
			return dtype.Q6_K
		}
	case tokenEmbd(name):
		// the presets apr offers keep the default type
	case strings.Contains(name, "attn_v.weight") || strings.Contains(name, "attn_qkv.weight") || strings.Contains(name, "attn_kv_b.weight"):
		// llama.cpp's category_is_attn_v: fused QKV (Phi-3) and MLA's kv_b take V's
		// rules since 2025 (b4747 had a rule of its own for attn_qkv)
		switch {
		case ft == "q2_k":
			t = dtype.Q3_K
			if m.gqa() >= 4 {
				t = dtype.Q4_K
			}
		case ft == "q3_k_m":
			t = dtype.Q4_K
			if i < 2 {
				t = dtype.Q5_K
			}
		case ft == "q3_k_l":
			t = dtype.Q5_K
		case (ft == "q4_k_m" || ft == "q5_k_m") && moreBits(i, m.attnVLayers()):
			t = dtype.Q6_K
		case ft == "q4_k_s" && i < 4:
			t = dtype.Q5_K
		}
		if m.arch == "llama" && n == 80 && (t == dtype.Q3_K || t == dtype.Q4_K) { // LLM_TYPE_70B
			t = dtype.Q5_K
		}
		if m.experts == 8 {
			t = dtype.Q8_0
		}
	case strings.Contains(name, "attn_k.weight"):
		if m.experts == 8 {
			t = dtype.Q8_0
		}
	case strings.Contains(name, "ffn_down"):
		switch {
		case ft == "q2_k":
			t = dtype.Q3_K
		case ft == "q3_k_m":
			switch {
			case i < n/16:
				t = dtype.Q5_K
			case !falcon || moreBits(i, n):
				t = dtype.Q4_K
			}
		case ft == "q3_k_l":
			t = dtype.Q5_K
			if falcon {
				t = dtype.Q4_K
			}
		case ft == "q4_k_m":
			if falcon {
				switch {
				case i < n/16:
					t = dtype.Q6_K
				case moreBits(i, n):
					t = dtype.Q5_K
				}
			} else if moreBits(i, n) {
				t = dtype.Q6_K
			}
		case ft == "q5_k_m" && moreBits(i, n):
			t = dtype.Q6_K
		case ft == "q4_k_s" && !falcon && i < n/8:
			t = dtype.Q5_K
		case (ft == "q4_0" || ft == "q5_0") && m.imatrix && i < n/8:
			// llama.cpp guards the first ffn_down layers of Q4_0/Q5_0, only with an
			// imatrix (so that the files made without one stay as they were)
			t = dtype.Q4_1
			if ft == "q5_0" {
				t = dtype.Q5_1
			}
		}
	case strings.Contains(name, "attn_output.weight"):
		switch {
		case falcon:
			if ft == "q3_k_l" {
				t = dtype.Q4_K
			}
		case m.experts == 8:
			switch ft {
			case "q2_k", "q3_k_s", "q3_k_m", "q4_k_s", "q4_k_m":
				t = dtype.Q5_K
			}
		case ft == "q2_k":
			t = dtype.Q3_K
		case ft == "q3_k_m":
			t = dtype.Q4_K
		case ft == "q3_k_l":
			t = dtype.Q5_K
		}
	}
	return t
}

// presetReason names the rule for reports.
func presetReason(p preset, got dtype.DType) string {
	if got == p.def {
		return fmt.Sprintf("%s default", strings.ToUpper(p.name))
	}
	return fmt.Sprintf("%s rule: %v", strings.ToUpper(p.name), got)
}

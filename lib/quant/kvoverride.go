package quant

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
)

// KVOverride is one llama-quantize --override-kv KEY=TYPE:VALUE: the output's
// key-value KEY is set to VALUE. As llama-quantize writes it (llama_model_quantize_impl
// in today's src/llama-quant.cpp), the key is removed from where it was and appended
// after general.quantization_version and general.file_type, the overrides in the order
// given; TYPE int becomes a UINT32, float a FLOAT32, bool a BOOL, str a STRING.
// Language-model hyperparameters the preset rules read (ARCH.block_count,
// ARCH.expert_count, ARCH.attention.head_count[_kv]) take an int override, as
// llama.cpp's model loader does.
type KVOverride struct {
	Spec  string // as given: KEY=TYPE:VALUE
	Key   string
	Value gguf.Value
}

// ErrKVOverride is wrapped by ParseKVOverride's errors.
var ErrKVOverride = errors.New("want KEY=TYPE:VALUE, TYPE one of int, float, bool, str")

// ParseKVOverride reads KEY=TYPE:VALUE as llama.cpp's string_parse_kv_override does
// (common/common.cpp: the key is everything before the first '=', at most 127 bytes;
// bool takes exactly true or false; str at most 127 bytes), but stricter where
// llama.cpp would write something other than what was asked: an empty key (llama.cpp
// then silently drops this and every later override), an int that is not a whole
// decimal number (atol reads "12abc" as 12 and "abc" as 0) or is outside 0..4294967295
// (llama-quantize writes the absolute value modulo 2^32 as a UINT32), a float with
// trailing characters or beyond the FLOAT32 range, and general.alignment (which
// llama-quantize accepts only as a power-of-two UINT32 and apr does not change) are
// errors naming the spec.
func ParseKVOverride(spec string) (KVOverride, error) {
	key, tv, ok := strings.Cut(spec, "=")
	bad := func(format string, a ...any) (KVOverride, error) {
		return KVOverride{}, fmt.Errorf("--override-kv %q: %s", spec, fmt.Sprintf(format, a...))
	}
	switch {
	case !ok:
		return KVOverride{}, fmt.Errorf("--override-kv %q: %w", spec, ErrKVOverride)
	case key == "":
		return bad("the key (before '=') is empty")
	case len(key) > 127:
		return bad("the key is %d bytes long; llama.cpp takes at most 127", len(key))
	case key == "general.alignment":
		return bad("apr lays out the GGUF file with its own alignment; general.alignment cannot be overridden")
	}
	typ, val, ok := strings.Cut(tv, ":")
	if !ok {
		return KVOverride{}, fmt.Errorf("--override-kv %q: %w", spec, ErrKVOverride)
	}
	o := KVOverride{Spec: spec, Key: key}
	switch typ {
	case "int":
		n, err := strconv.ParseUint(strings.TrimPrefix(val, "+"), 10, 64)
		if err != nil || n > math.MaxUint32 {
			return bad("int %q is not a whole number from 0 to 4294967295 (llama-quantize writes an int as a UINT32)", val)
		}
		o.Value = gguf.Uint32(uint32(n)) // only an int is a UINT32 (the one type the loader takes for a hyperparameter)
	case "float":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return bad("float %q is not a number", val)
		}
		f32 := float32(f) // atof's double, rounded as gguf_set_val_f32's argument is
		if err != nil || math.IsInf(float64(f32), 0) && !math.IsInf(f, 0) {
			return bad("float %q is beyond the FLOAT32 range (llama-quantize writes a float as a FLOAT32)", val)
		}
		o.Value = gguf.Float32(f32)
	case "bool":
		switch val {
		case "true", "false":
			o.Value = gguf.Bool(val == "true")
		default:
			return bad("bool %q: want true or false", val)
		}
	case "str":
		if len(val) > 127 {
			return bad("the string is %d bytes long; llama.cpp takes at most 127", len(val))
		}
		o.Value = gguf.String(val)
	default:
		return bad("type %q: %v", typ, ErrKVOverride)
	}
	return o, nil
}

// SetKV removes key from kvs and appends it with v, as ggml's gguf_set_val_* does
// (in place: the result reuses kvs's array).
func SetKV(kvs []gguf.KV, key string, v gguf.Value) []gguf.KV {
	out := kvs[:0]
	for _, kv := range kvs {
		if kv.Key != key {
			out = append(out, kv)
		}
	}
	return append(out, gguf.KV{Key: key, Value: v})
}

// applyKVOverrides writes o.KVOverrides into the GGUF key-values of h's metadata (the
// general.name, general.description and general.license the export takes from the
// metadata follow them). A model with no such key-values is refused: there is nothing
// in llama.cpp's form to override.
func (o *Options) applyKVOverrides(h *container.Header) error {
	if len(o.KVOverrides) == 0 {
		return nil
	}
	missing := fmt.Errorf("--override-kv %q: the model has no GGUF key-values to override (it is not a language model "+
		"imported from a GGUF file or a Hugging Face checkpoint)", o.KVOverrides[0].Spec)
	return editGGUFKVs(h, missing, func(md *container.Metadata, kvs []gguf.KV) []gguf.KV {
		for _, kv := range o.KVOverrides {
			kvs = SetKV(kvs, kv.Key, kv.Value)
			s, isStr := kv.Value.AsString()
			if !isStr {
				s = "" // the export would otherwise put the metadata's string back
			}
			switch kv.Key {
			case "general.name":
				md.Name = s
			case "general.description":
				md.Description = s
			case "general.license":
				md.License = s
			}
		}
		return kvs
	})
}

// overrideHparams gives the rules the int overrides of the hyperparameters they read,
// as llama.cpp's loader does (the first override of a key wins there; one of another
// type is ignored with a warning).
func (m *llmModel) overrideHparams(ovs []KVOverride) {
	for _, h := range []struct {
		key string
		n   *int
	}{
		{"block_count", &m.layers}, {"attention.head_count", &m.heads},
		{"attention.head_count_kv", &m.kvHeads}, {"expert_count", &m.experts},
	} {
		for _, o := range ovs {
			if o.Key != m.arch+"."+h.key {
				continue
			}
			if n, ok := o.Value.AsUint64(); ok && n <= 1<<20 {
				*h.n = int(n)
			}
			break
		}
	}
}

// copyFileType is general.file_type of llama-quantize's COPY: the input's, or the
// first int --override-kv of it (llama.cpp's loader reads it with the overrides).
func copyFileType(h container.Header, ovs []KVOverride) (uint32, error) {
	for _, o := range ovs {
		if o.Key == "general.file_type" {
			if n, ok := o.Value.AsUint64(); ok {
				return uint32(n), nil
			}
			break
		}
	}
	_, kvs, err := gguf.DecodeKVs(h.Metadata.Extra[gguf.MetadataKey])
	if err != nil {
		return 0, err
	}
	gh := gguf.Header{KVs: kvs}
	if v, ok := gh.Get("general.file_type"); ok {
		if n, isInt := v.AsUint64(); isInt && n <= math.MaxUint32 {
			return uint32(n), nil
		}
	}
	return 0, errors.New("COPY keeps the input's general.file_type, and it has none (llama.cpp would guess one from the tensor types)")
}

// editGGUFKVs decodes the GGUF key-values h's metadata carries, lets edit change
// them (and a copy of the metadata, which then replaces h's), and stores them
// back; missing is the error for a model that has none.
func editGGUFKVs(h *container.Header, missing error, edit func(md *container.Metadata, kvs []gguf.KV) []gguf.KV) error {
	x, ok := h.Metadata.Extra[gguf.MetadataKey]
	if !ok {
		return missing
	}
	ver, kvs, err := gguf.DecodeKVs(x)
	if err != nil {
		return err
	}
	md := h.Metadata
	md.Extra = maps.Clone(md.Extra)
	kvs = edit(&md, kvs)
	md.Extra[gguf.MetadataKey] = gguf.EncodeKVs(ver, kvs)
	h.Metadata = md
	return nil
}

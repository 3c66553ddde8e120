package quant

import (
	"math"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
)

// TestParseKVOverride: llama-quantize's KEY=TYPE:VALUE and the GGUF value it writes
// (int a UINT32, float a FLOAT32 rounded from the double atof reads, bool, str), and
// the specs apr refuses, each error naming the spec and what is wrong.
func TestParseKVOverride(t *testing.T) {
	for _, c := range []struct {
		spec, key string
		want      gguf.Value
	}{
		{"llama.context_length=int:4096", "llama.context_length", gguf.Uint32(4096)},
		{"a=int:+7", "a", gguf.Uint32(7)},
		{"a=int:4294967295", "a", gguf.Uint32(math.MaxUint32)},
		{"llama.rope.freq_base=float:50000.5", "llama.rope.freq_base", gguf.Float32(50000.5)},
		{"a=float:0.1", "a", gguf.Float32(float32(0.1))},
		{"a=float:-1e-50", "a", gguf.Float32(float32(-1e-50))}, // underflows to -0, as in C
		{"tokenizer.ggml.add_bos_token=bool:false", "tokenizer.ggml.add_bos_token", gguf.Bool(false)},
		{"a=bool:true", "a", gguf.Bool(true)},
		{"general.name=str:A name: with = and :", "general.name", gguf.String("A name: with = and :")},
		{"a=str:", "a", gguf.String("")},
		{"a=str:" + strings.Repeat("x", 127), "a", gguf.String(strings.Repeat("x", 127))},
	} {
		kv, err := ParseKVOverride(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		if kv.Key != c.key || kv.Spec != c.spec || kv.Value.Type() != c.want.Type() || kv.Value.Interface() != c.want.Interface() {
			t.Errorf("%q: key %q value %v (%v), want %q %v (%v)", c.spec, kv.Key, kv.Value.Interface(), kv.Value.Type(),
				c.key, c.want.Interface(), c.want.Type())
		}
	}
	for _, c := range []struct{ spec, why string }{
		{"noequals", "want KEY=TYPE:VALUE"},
		{"=int:1", "key (before '=') is empty"},
		{strings.Repeat("k", 128) + "=int:1", "at most 127"},
		{"a=1", "want KEY=TYPE:VALUE"},
		{"a=long:1", `type "long"`},
		{"a=int:", "not a whole number"},
		{"a=int:12abc", "not a whole number"},
		{"a=int:-1", "not a whole number from 0 to 4294967295"},
		{"a=int:4294967296", "4294967295"},
		{"a=float:1.5x", "not a number"},
		{"a=float:1e39", "beyond the FLOAT32 range"},
		{"a=float:1e999", "beyond the FLOAT32 range"},
		{"a=bool:yes", "want true or false"},
		{"a=bool:True", "want true or false"},
		{"a=str:" + strings.Repeat("x", 128), "at most 127"},
		{"general.alignment=int:64", "general.alignment cannot be overridden"},
	} {
		_, err := ParseKVOverride(c.spec)
		if err == nil {
			t.Errorf("%q: no error", c.spec)
			continue
		}
		if !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "--override-kv") {
			t.Errorf("%q: %v, want it to say %q", c.spec, err, c.why)
		}
	}
}

// TestKVOverridesInHeader: the overrides replace the keys in place of origin at the
// end, in order (a key given twice once, last), the metadata's name follows a string
// override of general.name and is dropped by another type's, and a model with no GGUF
// key-values is refused.
func TestKVOverridesInHeader(t *testing.T) {
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.String("llama")},
		{Key: "general.name", Value: gguf.String("tiny")},
		{Key: "llama.block_count", Value: gguf.Uint32(2)},
		{Key: "llama.context_length", Value: gguf.Uint32(2048)},
	}
	h := container.Header{Metadata: container.Metadata{Name: "tiny", Extra: map[string]any{gguf.MetadataKey: gguf.EncodeKVs(3, kvs)}}}
	var o Options
	for _, s := range []string{"llama.context_length=int:1", "general.name=str:Other", "x.y=bool:true", "llama.context_length=int:9"} {
		kv, err := ParseKVOverride(s)
		if err != nil {
			t.Fatal(err)
		}
		o.KVOverrides = append(o.KVOverrides, kv)
	}
	got := h
	if err := o.applyKVOverrides(&got); err != nil {
		t.Fatal(err)
	}
	_, out, err := gguf.DecodeKVs(got.Metadata.Extra[gguf.MetadataKey])
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range out {
		keys = append(keys, kv.Key)
	}
	if want := "general.architecture llama.block_count general.name x.y llama.context_length"; strings.Join(keys, " ") != want {
		t.Errorf("keys %v, want %s", keys, want)
	}
	if v, _ := out[len(out)-1].Value.AsUint64(); v != 9 {
		t.Errorf("llama.context_length %d, want 9 (the last override)", v)
	}
	if got.Metadata.Name != "Other" {
		t.Errorf("metadata name %q, want the override's", got.Metadata.Name)
	}
	if _, orig, _ := gguf.DecodeKVs(h.Metadata.Extra[gguf.MetadataKey]); len(orig) != 4 || h.Metadata.Name != "tiny" {
		t.Error("the input header changed")
	}
	kv, _ := ParseKVOverride("general.name=int:5")
	o.KVOverrides = []KVOverride{kv}
	got = h
	if err := o.applyKVOverrides(&got); err != nil || got.Metadata.Name != "" {
		t.Errorf("general.name=int:5: name %q, %v; want none (the export would put the string back)", got.Metadata.Name, err)
	}
	if err := o.applyKVOverrides(&container.Header{}); err == nil || !strings.Contains(err.Error(), "no GGUF key-values") {
		t.Errorf("a model without GGUF key-values: %v", err)
	}
}

// TestKVOverrideHparams: an int override of a hyperparameter reaches the rules (the
// first of that key, as llama.cpp's loader keeps it); one of another type does not;
// attn_v's rules keep the layer count of the file.
func TestKVOverrideHparams(t *testing.T) {
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.String("llama")},
		{Key: "llama.block_count", Value: gguf.Uint32(2)},
		{Key: "llama.attention.head_count", Value: gguf.Uint32(4)},
	}
	h := container.Header{Metadata: container.Metadata{Extra: map[string]any{gguf.MetadataKey: gguf.EncodeKVs(3, kvs)}}}
	parse := func(specs ...string) []KVOverride {
		var ovs []KVOverride
		for _, s := range specs {
			kv, err := ParseKVOverride(s)
			if err != nil {
				t.Fatal(err)
			}
			ovs = append(ovs, kv)
		}
		return ovs
	}
	m := llmFromHeader(h, parse("llama.block_count=int:16", "llama.block_count=int:3", "llama.attention.head_count_kv=int:1"))
	if m.layers != 16 || m.vLayers != 2 || m.kvHeads != 1 || m.gqa() != 4 {
		t.Errorf("layers %d (attn_v %d), kv heads %d: want 16 (2), 1", m.layers, m.vLayers, m.kvHeads)
	}
	m = llmFromHeader(h, parse("llama.block_count=float:16", "llama.block_count=int:3", "llama.expert_count=str:8"))
	if m.layers != 2 || m.experts != 0 || m.kvHeads != 4 {
		t.Errorf("layers %d, experts %d, kv heads %d: want the file's 2, 0, 4", m.layers, m.experts, m.kvHeads)
	}
}

func FuzzParseKVOverride(f *testing.F) {
	for _, s := range []string{"a=int:1", "a=float:1e39", "a=bool:true", "general.name=str:x", "=x", "a=str:=:", "a=float:nan"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kv, err := ParseKVOverride(s)
		if err != nil {
			if !strings.Contains(err.Error(), "--override-kv") {
				t.Errorf("%q: error without the flag: %v", s, err)
			}
			return
		}
		if kv.Key == "" || len(kv.Key) > 127 || !kv.Value.IsValid() || !strings.HasPrefix(s, kv.Key+"=") {
			t.Errorf("%q: key %q value %v", s, kv.Key, kv.Value)
		}
	})
}

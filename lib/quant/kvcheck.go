package quant

import (
	"fmt"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
)

// checkOverriddenHparams refuses --override-kv values of the layer and expert counts
// that make a file today's llama.cpp aborts on when it loads it (its load_hparams
// asserts, llama-model.cpp:1260 and 1293-1305; llama-quantize itself aborts there,
// as it loads the model it quantizes) or refuses (an expert count on a model whose
// layers have no router, or 0 on one whose layers have: its tensor loading then
// misses or leaves over tensors, llama-model-loader.cpp:1398). A block_count other
// than the layers the file holds is written as llama-quantize writes it (its presets
// read the count; byte-compared references use it), though llama.cpp will not load it.
// It reads the final key-values (after the overrides and --prune-layers) and runs
// only when an override set one of these keys, so an input is judged as before.
func (o *Options) checkOverriddenHparams(h container.Header) error {
	x, ok := h.Metadata.Extra[gguf.MetadataKey]
	if !ok || len(o.KVOverrides) == 0 {
		return nil
	}
	_, kvs, err := gguf.DecodeKVs(x)
	if err != nil {
		return err
	}
	g := gguf.Header{KVs: kvs}
	arch, _ := g.Get("general.architecture")
	a, _ := arch.AsString()
	keys := []string{"block_count", "expert_count", "expert_used_count", "expert_group_count", "expert_group_used_count"}
	spec := map[string]string{}
	for _, ov := range o.KVOverrides {
		for _, k := range keys {
			if ov.Key == a+"."+k && spec[k] == "" {
				spec[k] = ov.Spec
			}
		}
	}
	if len(o.PruneLayers) > 0 {
		delete(spec, "block_count") // --prune-layers sets it last, to the layers it keeps
	}
	if len(spec) == 0 {
		return nil
	}
	// n is the key's value as llama.cpp reads it (the largest of an array: its
	// n_expert_used_max), 0 when missing.
	n := func(k string) uint64 {
		v, _ := g.Get(a + "." + k)
		if m, ok := v.AsUint64(); ok {
			return m
		}
		var most uint64
		for i := range v.Len() {
			m, _ := v.Index(i).AsUint64()
			most = max(most, m)
		}
		return most
	}
	blame := func(ks ...string) string { // the override to name: the first of ks given
		for _, k := range ks {
			if s := spec[k]; s != "" {
				return s
			}
		}
		return ""
	}
	refuse := func(why string, ks ...string) error {
		s := blame(ks...)
		if s == "" {
			return nil // the input's own values: not this check's business
		}
		return fmt.Errorf("--override-kv %q: %s; llama.cpp would refuse or abort on the file", s, why)
	}
	routed := tableRouted(h.Table)
	blocks, experts, used := n("block_count"), n("expert_count"), n("expert_used_count")
	groups, gused := n("expert_group_count"), n("expert_group_used_count")
	switch {
	case blocks == 0 || blocks > 512:
		return refuse(fmt.Sprintf("%s.block_count is %d; llama.cpp loads 1 to 512 layers", a, blocks), "block_count")
	case experts > 1024:
		return refuse(fmt.Sprintf("%s.expert_count is %d; llama.cpp loads at most 1024 experts", a, experts), "expert_count")
	case used > experts:
		return refuse(fmt.Sprintf("%s.expert_used_count %d is more than the %d experts (expert_count)", a, used, experts), "expert_used_count", "expert_count")
	case experts == 0 && groups != 0:
		return refuse(fmt.Sprintf("%s.expert_group_count is %d without experts", a, groups), "expert_group_count", "expert_count")
	case experts > 0 && used == 0:
		return refuse(fmt.Sprintf("%s.expert_count is %d, but expert_used_count is 0 or missing (a model with experts routes each token to at least one)", a, experts), "expert_count", "expert_used_count")
	case h.Table != nil && (experts > 0) != routed:
		return refuse(fmt.Sprintf("%s.expert_count is %d, but the model's layers have %s", a, experts, map[bool]string{true: "a router (ffn_gate_inp)", false: "no router (ffn_gate_inp): it has no experts"}[routed]), "expert_count")
	case experts > 0 && groups >= experts:
		return refuse(fmt.Sprintf("%s.expert_group_count %d is not below the %d experts", a, groups, experts), "expert_group_count", "expert_count")
	case experts > 0 && groups > 1 && experts%groups != 0:
		return refuse(fmt.Sprintf("%s.expert_group_count %d does not divide the %d experts", a, groups, experts), "expert_group_count", "expert_count")
	case experts > 0 && groups > 1 && (gused == 0 || gused >= groups):
		return refuse(fmt.Sprintf("%s.expert_group_used_count is %d; llama.cpp uses 1 to %d of the %d expert groups", a, gused, groups-1, groups), "expert_group_used_count", "expert_group_count")
	}
	return nil
}

// tableRouted reports whether some layer of the tensors has a router (ffn_gate_inp).
func tableRouted(table []container.TensorInfo) bool {
	for _, t := range table {
		if rest, ok := strings.CutPrefix(t.Name, "blk."); ok {
			if _, suffix, _ := strings.Cut(rest, "."); strings.HasPrefix(suffix, "ffn_gate_inp.") {
				return true
			}
		}
	}
	return false
}

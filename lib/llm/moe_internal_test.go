package llm

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/safetensors"
)

// ckptOf reads a test checkpoint's kept files and tensor list.
func ckptOf(t testing.TB, name string) (map[string][]byte, []TensorShape) {
	t.Helper()
	dir := "../../testdata/hf/" + name
	files := map[string][]byte{}
	for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json", "tokenizer.model"} {
		if b, err := os.ReadFile(dir + "/" + f); err == nil {
			files[f] = b
		}
	}
	c, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var shapes []TensorShape
	for _, f := range c.Shards {
		for _, ti := range f.Header().Tensors {
			shapes = append(shapes, TensorShape{Name: ti.Name, DType: ti.DType, Shape: ti.Shape})
		}
	}
	return files, shapes
}

// TestExpertErrors: a mixture of experts whose experts do not add up is refused as it
// is described (before anything is written), the error naming the tensor and what was
// expected.
func TestExpertErrors(t *testing.T) {
	edit := func(shapes []TensorShape, f func([]TensorShape) []TensorShape) []TensorShape {
		return f(slices.Clone(shapes))
	}
	drop := func(name string) func([]TensorShape) []TensorShape {
		return func(s []TensorShape) []TensorShape {
			return slices.DeleteFunc(s, func(t TensorShape) bool { return t.Name == name })
		}
	}
	reshape := func(name string, shape ...int64) func([]TensorShape) []TensorShape {
		return func(s []TensorShape) []TensorShape {
			for i := range s {
				if s[i].Name == name {
					s[i].Shape = shape
				}
			}
			return s
		}
	}
	for _, c := range []struct {
		name, ckpt string
		change     func([]TensorShape) []TensorShape
		config     [2]string
		want       string
	}{
		{"missing expert", "tiny-qwen3moe", drop("model.layers.1.mlp.experts.3.up_proj.weight"), [2]string{},
			`the checkpoint has no "model.layers.1.mlp.experts.3.up_proj.weight": expert 3 of the 6 that config.json gives`},
		{"a projection missing", "tiny-qwen3moe", func(s []TensorShape) []TensorShape {
			return slices.DeleteFunc(s, func(t TensorShape) bool { return strings.HasSuffix(t.Name, "up_proj.weight") })
		}, [2]string{}, `the checkpoint has no "model.layers.0.mlp.experts.0.up_proj.weight" (nor any expert's up_proj.weight)`},
		{"experts unlike", "tiny-mixtral", reshape("model.layers.0.block_sparse_moe.experts.5.w2.weight", 256, 64), [2]string{},
			`tensor "model.layers.0.block_sparse_moe.experts.5.w2.weight" is BF16 [256 64], but "model.layers.0.block_sparse_moe.experts.0.w2.weight" is BF16 [256 128]`},
		{"more experts than config", "tiny-qwen3moe", nil, [2]string{`"num_experts": 6`, `"num_experts": 5`},
			`config.json gives 5 experts, but the checkpoint has tensor "model.layers.0.mlp.experts.5.down_proj.weight"`},
		{"fewer experts than config", "tiny-qwen3moe", nil, [2]string{`"num_experts": 6`, `"num_experts": 7`},
			`the checkpoint has no "model.layers.0.mlp.experts.6.down_proj.weight": expert 6 of the 7`},
		{"no expert count", "tiny-qwen2moe", nil, [2]string{`"num_experts": 4`, `"num_expert": 4`},
			`config.json gives no expert count`},
		{"expert size", "tiny-qwen3moe", nil, [2]string{`"moe_intermediate_size": 128`, `"moe_intermediate_size": 64`},
			`moe_intermediate_size/hidden_size give tensor "model.layers.0.mlp.experts.0.down_proj.weight" the shape [256 64], but it has [256 128]`},
		{"kv_b_proj", "tiny-deepseek3", nil, [2]string{`"v_head_dim": 64`, `"v_head_dim": 32`},
			`give tensor "model.layers.0.self_attn.kv_b_proj.weight" the shape [192 256], but it has [256 256]`},
		{"dense layer missing", "tiny-deepseek3", drop("model.layers.0.mlp.up_proj.weight"), [2]string{},
			`the checkpoint has no "model.layers.0.mlp.up_proj.weight", which layer 0`},
		{"router missing", "tiny-deepseek2", drop("model.layers.1.mlp.gate.weight"), [2]string{},
			`the checkpoint has no "model.layers.1.mlp.gate.weight", which layer 1`},
		{"fused experts", "tiny-granitemoe", reshape("model.layers.1.block_sparse_moe.input_linear.weight", 4, 255, 256), [2]string{},
			`num_local_experts/intermediate_size/hidden_size give tensor "model.layers.1.block_sparse_moe.input_linear.weight" the shape [4 256 256], but it has [4 255 256]`},
		{"gating function", "tiny-deepseek3", nil, [2]string{`"scoring_func": "sigmoid"`, `"scoring_func": "tanh"`},
			`scoring_func tanh is not a gating function llama.cpp knows`},
	} {
		t.Run(c.name, func(t *testing.T) {
			files, shapes := ckptOf(t, c.ckpt)
			if c.change != nil {
				shapes = edit(shapes, c.change)
			}
			if c.config[0] != "" {
				cfg := string(files["config.json"])
				if !strings.Contains(cfg, c.config[0]) {
					t.Fatalf("config.json has no %s", c.config[0])
				}
				files["config.json"] = []byte(strings.Replace(cfg, c.config[0], c.config[1], 1))
			}
			_, _, err := FromCheckpointWith(files, c.ckpt, shapes, Options{TokenizerPre: "qwen2"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %s", err, c.want)
			}
		})
	}
}

// TestWalkOrder: the stacked tensors come out where the converter writes them, after
// the last of a layer's expert tensors in the stream, expert 0 first, whatever order
// the experts arrive in (here the reverse of the checkpoint's, and with more than ten
// experts, whose names do not sort by number).
func TestWalkOrder(t *testing.T) {
	files, shapes := ckptOf(t, "tiny-qwen3moe")
	cp, ok, err := FromCheckpointWith(files, "x", shapes, Options{TokenizerPre: "qwen2"})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	w := cp.Walk()
	var experts []string
	for _, s := range shapes {
		if strings.Contains(s.Name, "layers.0.mlp.experts.") {
			experts = append(experts, s.Name)
		}
	}
	slices.Reverse(experts)
	for i, name := range experts {
		parts, handled, err := w.Place(name)
		if err != nil || !handled {
			t.Fatalf("%s: handled %v, %v", name, handled, err)
		}
		if i < len(experts)-1 && len(parts) != 0 {
			t.Fatalf("%s: %d parts out before the last expert", name, len(parts))
		}
		if i == len(experts)-1 {
			var names []string
			for _, p := range parts {
				names = append(names, p.Info.Name)
				if len(p.Sources) != 6 || !strings.Contains(p.Sources[0], ".experts.0.") || !strings.Contains(p.Sources[5], ".experts.5.") {
					t.Errorf("%s: sources %v, want experts 0 to 5 in order", p.Info.Name, p.Sources)
				}
				if !slices.Equal(p.Info.Shape, []int64{6, p.Info.Shape[1], p.Info.Shape[2]}) {
					t.Errorf("%s: shape %v", p.Info.Name, p.Info.Shape)
				}
			}
			if want := []string{"blk.0.ffn_down_exps.weight", "blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight"}; !slices.Equal(names, want) {
				t.Errorf("parts %v, want %v (the converter's order)", names, want)
			}
		}
	}
	if err := w.Done(); err != nil {
		t.Error(err)
	}
	if _, handled, _ := w.Place("model.layers.1.mlp.experts.0.up_proj.weight"); !handled {
		t.Fatal("an expert tensor was not held")
	}
	if err := w.Done(); err == nil {
		t.Error("a walk that ended with experts held reports no error")
	}
	// expert numbers past 9: canonical decimal, parsed as numbers
	if e, g, ok := qwenExperts.expertOf("mlp.experts.117.gate_proj.weight"); !ok || e != 117 || g != "ffn_gate_exps.weight" {
		t.Errorf("expert 117: %d %q %v", e, g, ok)
	}
	if _, _, ok := qwenExperts.expertOf("mlp.experts.07.gate_proj.weight"); ok {
		t.Error("expert \"07\" parsed")
	}
}

// FuzzMoECheckpoint: a mixture of experts' config.json and tensor list, changed
// (config bytes, a tensor dropped, a dimension changed), is described or refused with
// an error, never a panic; described, every tensor walks to its place and every part
// reads to exactly its size.
func FuzzMoECheckpoint(f *testing.F) {
	type ckpt struct {
		files  map[string][]byte
		shapes []TensorShape
	}
	var ckpts []ckpt
	for i, name := range []string{"tiny-qwen3moe", "tiny-qwen2moe", "tiny-mixtral", "tiny-deepseek3", "tiny-deepseek2", "tiny-olmoe", "tiny-granitemoe"} {
		files, shapes := ckptOf(f, name)
		ckpts = append(ckpts, ckpt{files, shapes})
		f.Add(uint8(i), files["config.json"], uint16(0xffff), uint16(0xffff), int64(0))
		f.Add(uint8(i), files["config.json"], uint16(7), uint16(0xffff), int64(0))
		f.Add(uint8(i), files["config.json"], uint16(0xffff), uint16(9), int64(64))
	}
	f.Fuzz(func(t *testing.T, which uint8, cfg []byte, drop, reshape uint16, dim int64) {
		c := ckpts[int(which)%len(ckpts)]
		files := maps.Clone(c.files)
		files["config.json"] = cfg
		shapes := slices.Clone(c.shapes)
		if int(reshape) < len(shapes) && dim > 0 && dim < 1<<12 {
			shapes[reshape].Shape = append([]int64{dim}, shapes[reshape].Shape[1:]...)
		}
		if int(drop) < len(shapes) {
			shapes = slices.Delete(shapes, int(drop), int(drop)+1)
		}
		cp, ok, err := FromCheckpointWith(files, "x", shapes, Options{TokenizerPre: "qwen2"})
		if err != nil || !ok {
			return
		}
		w := cp.Walk()
		open := func(name string) (io.Reader, error) {
			s, ok := cp.shapes[name]
			if !ok {
				return nil, fmt.Errorf("no %s", name)
			}
			n, err := dtype.Size(s.DType, s.Shape)
			if err != nil {
				return nil, err
			}
			return io.LimitReader(zeros{}, n), nil
		}
		for _, s := range shapes {
			parts, _, err := w.Place(s.Name)
			if err != nil {
				return
			}
			for _, p := range parts {
				r, err := p.Open(open)
				if err != nil {
					t.Fatalf("%s: %v", p.Info.Name, err)
				}
				n, err := io.Copy(io.Discard, r)
				want, _ := dtype.Size(p.Info.DType, p.Info.Shape)
				if err != nil || n != want {
					t.Fatalf("%s: read %d bytes (%v), its shape %v holds %d", p.Info.Name, n, err, p.Info.Shape, want)
				}
			}
		}
		if err := w.Done(); err != nil {
			t.Fatalf("a described checkpoint left experts held: %v", err)
		}
	})
}

// zeros reads zeros without end.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestKVBJoinChecks: the halves of kv_b_proj join only when they fit together.
func TestKVBJoinChecks(t *testing.T) {
	k := container.TensorInfo{Name: "blk.3.attn_k_b.weight", DType: dtype.BF16, Shape: []int64{2, 256, 64}}
	v := container.TensorInfo{Name: "blk.3.attn_v_b.weight", DType: dtype.BF16, Shape: []int64{2, 64, 256}}
	if got, err := kvbInfo(k, v); err != nil || got.Name != "blk.3.attn_kv_b.weight" || !slices.Equal(got.Shape, []int64{256, 256}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []container.TensorInfo{
		{Name: "blk.4.attn_v_b.weight", DType: dtype.BF16, Shape: []int64{2, 64, 256}},
		{Name: "blk.3.attn_v_b.weight", DType: dtype.F16, Shape: []int64{2, 64, 256}},
		{Name: "blk.3.attn_v_b.weight", DType: dtype.BF16, Shape: []int64{2, 64, 128}},
		{Name: "blk.3.attn_v_b.weight", DType: dtype.BF16, Shape: []int64{4, 64, 256}},
		{Name: "blk.3.attn_v_b.weight", DType: dtype.BF16, Shape: []int64{128, 256}},
	} {
		if _, err := kvbInfo(k, bad); err == nil || !strings.Contains(err.Error(), "are not the two halves of one kv_b_proj") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

package llm

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/tensor"
)

// gptoss is OpenAI's gpt-oss (GptOssModel in the converter, conversion/gpt_oss.py):
// biased attention with one learned sink per head, a biased router, and experts stored
// fused, [experts, in, out] with the gate and up projections interleaved by column,
// either in BF16 or (as OpenAI ships them) in MXFP4: a U8 table of 16-byte blocks of
// E2M1 codes ("_blocks", [experts, out, in/32, 16]) and one of E8M0 exponents
// ("_scales", [experts, out, in/32]). The MXFP4 experts are repacked, bits moved only,
// into ggml's MXFP4 blocks and written first, before every other tensor, as the
// converter's generate_extra_tensors writes them; BF16 experts are transposed to
// [experts, out, in]. Either way gate_up becomes ffn_gate_exps (even outputs) and
// ffn_up_exps (odd outputs), its bias likewise.
type gptoss struct{ plain }

const gptossExperts = "mlp.experts."

var gptossLayer = withLayer(attnLayer, map[string]string{
	"input_layernorm.weight":          "attn_norm.weight",
	"post_attention_layernorm.weight": "post_attention_norm.weight",
	"self_attn.o_proj.bias":           "attn_output.bias",
	"self_attn.sinks":                 "attn_sinks.weight",
	"mlp.router.weight":               "ffn_gate_inp.weight",
	"mlp.router.bias":                 "ffn_gate_inp.bias",
	// The experts: planned (gptoss.plan), named here for the checks.
	gptossExperts + "gate_up_proj":        "ffn_gate_up_exps.weight",
	gptossExperts + "gate_up_proj_bias":   "ffn_gate_up_exps.bias",
	gptossExperts + "gate_up_proj_blocks": "ffn_gate_up_exps.blocks",
	gptossExperts + "gate_up_proj_scales": "ffn_gate_up_exps.scales",
	gptossExperts + "down_proj":           "ffn_down_exps.weight",
	gptossExperts + "down_proj_bias":      "ffn_down_exps.bias",
	gptossExperts + "down_proj_blocks":    "ffn_down_exps.blocks",
	gptossExperts + "down_proj_scales":    "ffn_down_exps.scales",
})

// gptossOptional are the expert tensors of one of the two forms (BF16 or MXFP4): a
// layer needs one form whole (gptoss.plan checks it), not every name.
var gptossOptional = []string{"ffn_gate_up_exps.weight", "ffn_down_exps.weight",
	"ffn_gate_up_exps.blocks", "ffn_gate_up_exps.scales", "ffn_down_exps.blocks", "ffn_down_exps.scales"}

// KVs adds what GptOssModel.set_gguf_parameters writes after the base keys.
func (gptoss) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	a := cp.Arch.GGUF
	sw, ok, err := cp.config.int("sliding_window", true)
	if err != nil || !ok {
		return nil, err
	}
	return append(base,
		gguf.KV{Key: a + ".attention.sliding_window", Value: gguf.Uint32(uint32(sw))},
		gguf.KV{Key: a + ".expert_feed_forward_length", Value: gguf.Uint32(uint32(cp.Hparams.FFN))}), nil
}

// mxfp4 reports a checkpoint whose experts are MXFP4 (quantization_config.quant_method).
func (cp *Checkpoint) mxfp4() bool {
	q, _ := cp.config["quantization_config"].(map[string]any)
	m, _ := q["quant_method"].(string)
	return m == "mxfp4"
}

// gptossMXFP4FileType is llama.cpp's LLAMA_FTYPE_MOSTLY_MXFP4_MOE, the general.file_type
// the converter writes for an MXFP4 checkpoint with --outtype f32, f16 or bf16.
const gptossMXFP4FileType = 38

func (gptoss) plan(cp *Checkpoint, tensors []TensorShape) ([]Planned, error) {
	h := cp.Hparams
	if !h.HasFFN || h.Experts <= 0 {
		return nil, fmt.Errorf("config.json: a gpt-oss model needs intermediate_size and num_local_experts")
	}
	byName := map[string]TensorShape{}
	for _, t := range tensors {
		byName[t.Name] = t
	}
	E, H, F := int64(h.Experts), int64(h.Hidden), int64(h.FFN)
	var plan []Planned
	// The MXFP4 experts first, at each layer's scales, as generate_extra_tensors meets them.
	for _, t := range tensors {
		prefix, part, ok := strings.Cut(t.Name, gptossExperts)
		if !ok || !strings.HasSuffix(part, "_scales") {
			continue
		}
		blocks, ok := byName[prefix+gptossExperts+strings.TrimSuffix(part, "_scales")+"_blocks"]
		if !ok {
			return nil, fmt.Errorf("tensor %q has no %q beside it (an MXFP4 tensor is blocks and scales)", t.Name, strings.TrimSuffix(t.Name, "_scales")+"_blocks")
		}
		_, layer, _, err := cp.Arch.GGUFName(prefix + gptossExperts + strings.TrimSuffix(part, "_scales"))
		if err != nil {
			return nil, err
		}
		base := fmt.Sprintf("blk.%d.", layer)
		switch part {
		case "down_proj_scales":
			if err := mxfp4Shapes(blocks, t, E, H, F); err != nil {
				return nil, err
			}
			plan = append(plan, mxfp4Planned(base+"ffn_down_exps.weight", blocks, t, E, H, 0, 1))
		case "gate_up_proj_scales":
			if err := mxfp4Shapes(blocks, t, E, 2*F, H); err != nil {
				return nil, err
			}
			plan = append(plan, mxfp4Planned(base+"ffn_gate_exps.weight", blocks, t, E, F, 0, 2),
				mxfp4Planned(base+"ffn_up_exps.weight", blocks, t, E, F, 1, 2))
		default:
			return nil, fmt.Errorf("tensor %q is not part of a gpt-oss model as apr knows it", t.Name)
		}
	}
	for _, t := range tensors {
		prefix, part, experts := strings.Cut(t.Name, gptossExperts)
		if strings.HasSuffix(t.Name, ".mlp.router.weight") {
			if err := wantShape(t, E, H); err != nil {
				return nil, err
			}
		}
		if !experts {
			p, skip, err := cp.planOne(t)
			if err != nil {
				return nil, err
			}
			if !skip {
				plan = append(plan, p)
			}
			continue
		}
		_, layer, _, err := cp.Arch.GGUFName(t.Name)
		if err != nil {
			return nil, err
		}
		base := fmt.Sprintf("blk.%d.", layer)
		switch part {
		case "gate_up_proj_blocks":
			if _, ok := byName[prefix+gptossExperts+"gate_up_proj_scales"]; !ok {
				return nil, fmt.Errorf("tensor %q has no %q beside it (an MXFP4 tensor is blocks and scales)", t.Name, prefix+gptossExperts+"gate_up_proj_scales")
			}
		case "down_proj_blocks":
			if _, ok := byName[prefix+gptossExperts+"down_proj_scales"]; !ok {
				return nil, fmt.Errorf("tensor %q has no %q beside it (an MXFP4 tensor is blocks and scales)", t.Name, prefix+gptossExperts+"down_proj_scales")
			}
		case "gate_up_proj_scales", "down_proj_scales":
		case "gate_up_proj": // [E, H, 2F]: gate is the even columns, up the odd, each transposed
			if err := wantShape(t, E, H, 2*F); err != nil {
				return nil, err
			}
			plan = append(plan, columnsPlanned(base+"ffn_gate_exps.weight", t, 0, 2, F),
				columnsPlanned(base+"ffn_up_exps.weight", t, 1, 2, F))
		case "down_proj": // [E, F, H], transposed
			if err := wantShape(t, E, F, H); err != nil {
				return nil, err
			}
			plan = append(plan, columnsPlanned(base+"ffn_down_exps.weight", t, 0, 1, H))
		case "gate_up_proj_bias": // [E, 2F]: gate's the even entries, up's the odd
			if err := wantShape(t, E, 2*F); err != nil {
				return nil, err
			}
			plan = append(plan, biasPlanned(base+"ffn_gate_exps.bias", t, 0), biasPlanned(base+"ffn_up_exps.bias", t, 1))
		case "down_proj_bias":
			if err := wantShape(t, E, H); err != nil {
				return nil, err
			}
			p, _, err := cp.planOne(t)
			if err != nil {
				return nil, err
			}
			plan = append(plan, p)
		default:
			return nil, fmt.Errorf("tensor %q is not part of a gpt-oss model as apr knows it", t.Name)
		}
	}
	// Every layer has its experts in one form or the other.
	for l := range h.Layers {
		p := fmt.Sprintf("model.layers.%d.%s", l, gptossExperts)
		for _, w := range []string{"gate_up_proj", "down_proj"} {
			_, dense := byName[p+w]
			_, packed := byName[p+w+"_blocks"]
			if !dense && !packed {
				return nil, fmt.Errorf("the checkpoint has no %q (nor %q and %q), which every layer of a gpt-oss model has", p+w, p+w+"_blocks", p+w+"_scales")
			}
			if dense && packed {
				return nil, fmt.Errorf("the checkpoint has both %q and %q: one form of the experts, not two", p+w, p+w+"_blocks")
			}
			if _, ok := byName[p+w+"_bias"]; !ok {
				return nil, fmt.Errorf("the checkpoint has no %q, which every layer of a gpt-oss model has", p+w+"_bias")
			}
		}
	}
	return plan, nil
}

func wantShape(t TensorShape, shape ...int64) error {
	if !slices.Equal(t.Shape, shape) {
		return fmt.Errorf("tensor %q has the shape %v; config.json (num_local_experts, hidden_size, intermediate_size) gives %v", t.Name, t.Shape, shape)
	}
	return nil
}

// mxfp4Shapes checks an MXFP4 pair of rows rows of in values per expert: blocks
// [E, rows, in/32, 16] and scales [E, rows, in/32], both U8.
func mxfp4Shapes(blocks, scales TensorShape, E, rows, in int64) error {
	if in%32 != 0 {
		return fmt.Errorf("tensor %q: rows of %d values are not whole 32-value MXFP4 blocks", blocks.Name, in)
	}
	for _, c := range []struct {
		t     TensorShape
		shape []int64
	}{{blocks, []int64{E, rows, in / 32, 16}}, {scales, []int64{E, rows, in / 32}}} {
		if c.t.DType != dtype.U8 {
			return fmt.Errorf("tensor %q is %v; MXFP4 blocks and scales are U8", c.t.Name, c.t.DType)
		}
		if !slices.Equal(c.t.Shape, c.shape) {
			return fmt.Errorf("tensor %q has the shape %v; MXFP4 experts of config.json's sizes need %v (%d blocks of 32 values a row)", c.t.Name, c.t.Shape, c.shape, in/32)
		}
	}
	return nil
}

// mxfp4Planned is ggml's MXFP4 tensor [E, outRows, in] of the rows start, start+step,
// ... of each expert's blocks and scales: a block is its E8M0 exponent, then its
// codes with value j in the low nibble of byte j and value j+16 in the high nibble
// (the checkpoint's byte i holds values 2i, low, and 2i+1, high).
func mxfp4Planned(name string, blocks, scales TensorShape, E, outRows, start, step int64) Planned {
	nb := blocks.Shape[2]
	srcRows := blocks.Shape[1]
	info := container.TensorInfo{Name: name, DType: dtype.MXFP4, Shape: []int64{E, outRows, nb * 32}}
	return Planned{Info: info, Make: func(src Source) (io.Reader, error) {
		b, err := src.Open(blocks.Name)
		if err != nil {
			return nil, err
		}
		s, err := src.Open(scales.Name)
		if err != nil {
			return nil, err
		}
		in := make([]byte, nb*16)
		exps := make([]byte, nb)
		return newRowReader(E*outRows, make([]byte, nb*17), func(i int64, dst []byte) error {
			e, r := i/outRows, start+step*(i%outRows)
			if i > 0 && i%outRows == 0 { // the previous expert is done
				release(b, (e-1)*srcRows*nb*16, srcRows*nb*16)
				release(s, (e-1)*srcRows*nb, srcRows*nb)
			}
			row := e*srcRows + r
			if _, err := s.ReadAt(exps, row*nb); err != nil {
				return tensor.Wrap(scales.Name, err)
			}
			if _, err := b.ReadAt(in, row*nb*16); err != nil {
				return tensor.Wrap(blocks.Name, err)
			}
			for k := range nb {
				q, d := in[16*k:16*k+16], dst[17*k:17*k+17]
				d[0] = exps[k]
				for j := range 16 {
					lo := q[j/2] >> (4 * (j % 2)) & 0xf
					hi := q[(j+16)/2] >> (4 * (j % 2)) & 0xf
					d[1+j] = lo | hi<<4
				}
			}
			if i == E*outRows-1 {
				release(b, e*srcRows*nb*16, srcRows*nb*16)
				release(s, e*srcRows*nb, srcRows*nb)
			}
			return nil
		}), nil
	}}
}

// columnsPlanned is the tensor [E, outRows, rows] whose row j of expert e is column
// start+step·j of the checkpoint tensor t [E, rows, cols], in t's dtype: gpt-oss's
// [experts, in, out] experts transposed to ggml's [experts, out, in], gate_up's gate
// and up de-interleaved. It reads strips of columns, a bounded buffer per strip.
func columnsPlanned(name string, t TensorShape, start, step, outRows int64) Planned {
	E, rows, cols := t.Shape[0], t.Shape[1], t.Shape[2]
	es := int64(t.DType.Info().BlockBytes)
	info := container.TensorInfo{Name: name, DType: t.DType, Shape: []int64{E, outRows, rows}}
	const group = 64 // output rows per strip
	return Planned{Info: info, Make: func(src Source) (io.Reader, error) {
		ra, err := src.Open(t.Name)
		if err != nil {
			return nil, err
		}
		span := step*(group-1) + 1
		strip := make([]byte, rows*span*es)
		var e, j0, g int64 = -1, 0, 0 // the strip holds output rows j0..j0+g of expert e
		return newRowReader(E*outRows, make([]byte, rows*es), func(i int64, dst []byte) error {
			ie, j := i/outRows, i%outRows
			if ie != e || j >= j0+g {
				if ie != e && e >= 0 { // the previous expert is done
					release(ra, e*rows*cols*es, rows*cols*es)
				}
				e, j0, g = ie, j, min(group, outRows-j)
				n := (step*(g-1) + 1) * es
				for r := range rows {
					off := ((e*rows+r)*cols + start + step*j0) * es
					if _, err := ra.ReadAt(strip[r*span*es:r*span*es+n], off); err != nil {
						return tensor.Wrap(t.Name, err)
					}
				}
			}
			c := step * (j - j0) * es
			for r := range rows {
				copy(dst[r*es:(r+1)*es], strip[r*span*es+c:])
			}
			if i == E*outRows-1 {
				release(ra, e*rows*cols*es, rows*cols*es)
			}
			return nil
		}), nil
	}}
}

// biasPlanned is the F32 bias [E, n/2] of the entries start, start+2, ... of each
// expert's row of t [E, n] (small: read whole).
func biasPlanned(name string, t TensorShape, start int64) Planned {
	E, n := t.Shape[0], t.Shape[1]
	info := container.TensorInfo{Name: name, DType: dtype.F32, Shape: []int64{E, n / 2}}
	return Planned{Info: info, Make: func(src Source) (io.Reader, error) {
		ra, err := src.Open(t.Name)
		if err != nil {
			return nil, err
		}
		size, err := dtype.Size(t.DType, t.Shape)
		if err != nil {
			return nil, tensor.Wrap(t.Name, err)
		}
		raw := make([]byte, size)
		if _, err := ra.ReadAt(raw, 0); err != nil {
			return nil, tensor.Wrap(t.Name, err)
		}
		all := make([]float32, E*n)
		if err := kernels.Dequantize(t.DType, all, raw); err != nil {
			return nil, tensor.Wrap(t.Name, err)
		}
		half := make([]float32, 0, E*n/2)
		for i := start; i < E*n; i += 2 {
			half = append(half, all[i])
		}
		out := make([]byte, 4*len(half))
		if err := kernels.Quantize(dtype.F32, out, half); err != nil {
			return nil, err
		}
		return bytes.NewReader(out), nil
	}}
}

// rowReader reads rows rows of len(out) bytes, each made by fill.
type rowReader struct {
	rows, next int64
	out        []byte
	pos        int
	fill       func(i int64, dst []byte) error
}

func newRowReader(rows int64, out []byte, fill func(i int64, dst []byte) error) *rowReader {
	return &rowReader{rows: rows, out: out, pos: len(out), fill: fill}
}

func (r *rowReader) Read(p []byte) (int, error) {
	if r.pos == len(r.out) {
		if r.next == r.rows {
			return 0, io.EOF
		}
		if err := r.fill(r.next, r.out); err != nil {
			return 0, err
		}
		r.next++
		r.pos = 0
	}
	n := copy(p, r.out[r.pos:])
	r.pos += n
	return n, nil
}

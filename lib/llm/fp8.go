package llm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/tensor"
)

// FP8 checkpoints (quantization_config.quant_method "fp8": DeepSeek-V3, the Qwen3 FP8
// releases) store their linear weights in F8_E4M3 (or F8_E5M2) with a scale tensor
// beside each, "<name>_scale_inv": one float per weight_block_size block ([128, 128]
// for these), or without weight_block_size one per tensor or per row. The converter
// (ModelBase.dequant_model, dequant_simple) decodes the weight to float32 and multiplies
// it by its block's scale in float32; apr does the same on the fly, a row at a time, in
// the tensor reading layer (any family: planned tensors, plan.go), so the weight enters
// the stream as F32 and is cast or quantized to what the pipe asks. The scales are
// consumed, never exported; activation scales are dropped as the converter drops them.

// maxScaleBytes caps one scale tensor read whole (a block scale of a 2^20 x 2^20
// weight in [128, 128] blocks is 256 KiB).
const maxScaleBytes = 64 << 20

// fp8Weight is an FP8 weight and the scale that multiplies it.
type fp8Weight struct {
	weight, scale TensorShape
	block         []int64 // rows and columns of a scale's block; nil: per tensor or per row
}

// fp8Plan finds the FP8 weights of an "fp8" checkpoint and their scales. It returns
// the weights by name, and the tensors as the rest of the conversion sees them: the
// weights F32, the scales and activation scales left out.
func fp8Plan(c config, tensors []TensorShape) (map[string]fp8Weight, []TensorShape, error) {
	q, _ := c["quantization_config"].(map[string]any)
	if m, _ := q["quant_method"].(string); m != "fp8" {
		for _, t := range tensors {
			if t.DType == dtype.F8E4M3 || t.DType == dtype.F8E5M2 {
				if strings.HasSuffix(t.Name, "_scale_inv") {
					continue
				}
				// Without the method the converter would only widen the values; a
				// checkpoint of FP8 weights always has scales: refuse rather than guess.
				return nil, nil, fmt.Errorf("tensor %q is %v, but config.json's quantization_config.quant_method is not \"fp8\" (no scales to apply)", t.Name, t.DType)
			}
		}
		return nil, tensors, nil
	}
	var block []int64
	if raw, ok := q["weight_block_size"]; ok && raw != nil {
		list, ok := raw.([]any)
		if !ok || len(list) != 2 {
			return nil, nil, fmt.Errorf("config.json: quantization_config.weight_block_size %v is not two block sizes", raw)
		}
		for _, v := range list {
			n, ok := v.(json.Number)
			i, err := n.Int64()
			if !ok || err != nil || i < 1 || i > 1<<20 {
				return nil, nil, fmt.Errorf("config.json: quantization_config.weight_block_size %v is not two positive integers", raw)
			}
			block = append(block, i)
		}
	}
	byName := map[string]TensorShape{}
	for _, t := range tensors {
		byName[t.Name] = t
	}
	weights := map[string]fp8Weight{}
	var rest []TensorShape
	for _, t := range tensors {
		switch {
		case strings.HasSuffix(t.Name, "_scale_inv"):
			w, ok := byName[strings.TrimSuffix(t.Name, "_scale_inv")]
			if !ok {
				return nil, nil, fmt.Errorf("tensor %q scales %q, which the checkpoint does not have", t.Name, strings.TrimSuffix(t.Name, "_scale_inv"))
			}
			if w.DType != dtype.F8E4M3 && w.DType != dtype.F8E5M2 {
				return nil, nil, fmt.Errorf("tensor %q scales %q, which is %v, not FP8", t.Name, w.Name, w.DType)
			}
			continue
		case strings.HasSuffix(t.Name, ".activation_scale"), strings.HasSuffix(t.Name, "_activation_scale"):
			continue // unused, as the converter drops them
		case t.DType == dtype.F8E4M3 || t.DType == dtype.F8E5M2:
			s, ok := byName[t.Name+"_scale_inv"]
			if !ok {
				return nil, nil, fmt.Errorf("tensor %q is %v with no %q beside it: FP8 weights need their scale", t.Name, t.DType, t.Name+"_scale_inv")
			}
			w := fp8Weight{weight: t, scale: s, block: block}
			if err := w.check(); err != nil {
				return nil, nil, err
			}
			weights[t.Name] = w
			t.DType = dtype.F32
		}
		rest = append(rest, t)
	}
	return weights, rest, nil
}

// check compares the scale's shape with the weight's: with blocks, one scale per
// block, the last partial block included; without, one per tensor or one per row.
func (w fp8Weight) check() error {
	ws, ss := w.weight.Shape, w.scale.Shape
	if !w.scale.DType.Info().Float || w.scale.DType.Info().Quantized() || w.scale.DType == dtype.F8E4M3 || w.scale.DType == dtype.F8E5M2 {
		return fmt.Errorf("tensor %q is %v; an FP8 scale is F32, BF16 or F16", w.scale.Name, w.scale.DType)
	}
	n, err := dtype.Elems(ss)
	if err != nil {
		return tensor.Wrap(w.scale.Name, err)
	}
	if w.block != nil {
		if len(ws) != 2 {
			return fmt.Errorf("tensor %q has the shape %v; block-scaled FP8 weights are 2-D", w.weight.Name, ws)
		}
		want := []int64{(ws[0] + w.block[0] - 1) / w.block[0], (ws[1] + w.block[1] - 1) / w.block[1]}
		if len(ss) != 2 || ss[0] != want[0] || ss[1] != want[1] {
			return fmt.Errorf("tensor %q has the shape %v; its weight %v in %v blocks (quantization_config.weight_block_size) needs %v",
				w.scale.Name, ss, ws, w.block, want)
		}
		return nil
	}
	if len(ws) >= 1 && n == 1 || len(ws) == 2 && n == ws[0] && (len(ss) == 1 || len(ss) == 2 && ss[1] == 1) {
		return nil
	}
	return fmt.Errorf("tensor %q has the shape %v; without weight_block_size an FP8 scale is one value, or one a row of its 2-D weight %v", w.scale.Name, ss, ws)
}

// reader is the F32 tensor of an FP8 weight times its scale, made a row at a time.
func (w fp8Weight) reader(src Source) (io.Reader, error) {
	ra, err := src.Open(w.weight.Name)
	if err != nil {
		return nil, err
	}
	sa, err := src.Open(w.scale.Name)
	if err != nil {
		return nil, err
	}
	n, _ := dtype.Elems(w.scale.Shape)
	size, err := dtype.Size(w.scale.DType, w.scale.Shape)
	if err != nil || size > maxScaleBytes {
		return nil, fmt.Errorf("tensor %q: %d bytes of scales, over the cap of %d", w.scale.Name, size, maxScaleBytes)
	}
	raw := make([]byte, size)
	if _, err := sa.ReadAt(raw, 0); err != nil {
		return nil, tensor.Wrap(w.scale.Name, err)
	}
	scales := make([]float32, n)
	if err := kernels.Dequantize(w.scale.DType, scales, raw); err != nil {
		return nil, tensor.Wrap(w.scale.Name, err)
	}
	ws := w.weight.Shape
	cols := ws[len(ws)-1]
	rows := int64(1)
	for _, d := range ws[:len(ws)-1] {
		rows *= d
	}
	decode := kernels.F8E4M3ToF32
	if w.weight.DType == dtype.F8E5M2 {
		decode = kernels.F8E5M2ToF32
	}
	in := make([]byte, cols)
	vals := make([]float32, cols)
	released := int64(0)
	return newRowReader(rows, make([]byte, 4*cols), func(r int64, dst []byte) error {
		if _, err := ra.ReadAt(in, r*cols); err != nil {
			return tensor.Wrap(w.weight.Name, err)
		}
		decode(vals, in)
		switch {
		case w.block != nil:
			srow := scales[r/w.block[0]*w.scale.Shape[1]:]
			for c := range vals {
				vals[c] *= srow[int64(c)/w.block[1]]
			}
		case n == 1:
			for c := range vals {
				vals[c] *= scales[0]
			}
		default:
			for c := range vals {
				vals[c] *= scales[r]
			}
		}
		for c, v := range vals {
			binary.LittleEndian.PutUint32(dst[4*c:], math.Float32bits(v))
		}
		if done := (r + 1) * cols; done-released >= 8<<20 || r == rows-1 {
			release(ra, released, done-released)
			released = done
		}
		return nil
	}), nil
}

// fp8Planned is the Planned form of an FP8 weight: dequantized to F32, then converted
// as Convert converts any tensor (renamed, permuted, the family's transform).
func (cp *Checkpoint) fp8Planned(w fp8Weight) (Planned, bool, error) {
	info := container.TensorInfo{Name: w.weight.Name, DType: dtype.F32, Shape: w.weight.Shape}
	out, skip, err := cp.Info(info)
	if err != nil || skip {
		return Planned{}, skip, err
	}
	return Planned{Info: out, Make: func(src Source) (io.Reader, error) {
		r, err := w.reader(src)
		if err != nil {
			return nil, err
		}
		_, r, _, err = cp.Convert(info, r)
		return r, err
	}}, false, nil
}

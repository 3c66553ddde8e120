package main

import (
	"fmt"
	"io"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/quant"
)

// knobFlags are llama-quantize's per-tensor flags, spelled as it spells them, and
// --dry-run.
type knobFlags struct {
	OutputTensorType   string   `placeholder:"TYPE" help:"Quantize output.weight to TYPE (a ggml type name: q8_0, q6_k, iq4_xs, f16, ...), as llama-quantize --output-tensor-type."`
	TokenEmbeddingType string   `placeholder:"TYPE" help:"Quantize the token embeddings to TYPE, as llama-quantize --token-embedding-type."`
	TensorType         []string `sep:"none" placeholder:"PATTERN=TYPE" help:"Quantize the tensors whose name PATTERN (a regular expression, searched anywhere in the name) matches to TYPE, also under --pure (repeatable; the first match wins), as llama-quantize --tensor-type."`
	LeaveOutputTensor  bool     `help:"Keep output.weight as it is, as llama-quantize --leave-output-tensor."`
	DryRun             bool     `help:"Print each tensor's type, size and reason and the total sizes, and write nothing (as llama-quantize --dry-run; --json for JSON)."`
}

// knobs puts the per-tensor flags into o.
func (c *quantCmd) knobs(o *quant.Options) error {
	var err error
	if c.OutputTensorType != "" {
		if o.OutputTensorType, err = quant.ParseGGMLType(c.OutputTensorType); err != nil {
			return cli.Usagef("--output-tensor-type %v", err)
		}
	}
	if c.TokenEmbeddingType != "" {
		if o.TokenEmbeddingType, err = quant.ParseGGMLType(c.TokenEmbeddingType); err != nil {
			return cli.Usagef("--token-embedding-type %v", err)
		}
	}
	for _, s := range c.TensorType {
		tt, err := quant.ParseTensorType(s)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		o.TensorTypes = append(o.TensorTypes, tt)
	}
	o.LeaveOutput = c.LeaveOutputTensor
	if c.DryRun && (c.Stats || c.StatsFile != "") {
		return cli.Usagef("--dry-run quantizes nothing, so there are no --stats to report")
	}
	return nil
}

// dryRun decides every tensor from the input's tensor list (a file's index, the
// stream's table, or else the stream read through without converting) and prints
// the plan on stdout; nothing is written.
func (c *quantCmd) dryRun(env *cli.Env, o quant.Options) error {
	src, name, closeIn, err := c.open(env, &o)
	if err != nil {
		return err
	}
	defer closeIn()
	tensors := o.Plan
	if tensors == nil {
		tensors = src.Header().Table
	}
	if tensors == nil {
		for {
			t, r, err := src.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				return fmt.Errorf("%s: tensor %q: %w", name, t.Name, err)
			}
			tensors = append(tensors, container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape})
		}
	}
	rep, err := quant.DryRun(src.Header(), tensors, o)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if c.JSON {
		return rep.WriteJSON(env.Stdout)
	}
	return rep.WriteTable(env.Stdout)
}

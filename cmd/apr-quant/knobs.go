package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/quant"
)

// knobFlags are llama-quantize's per-tensor flags, spelled as it spells them, and
// --dry-run.
type knobFlags struct {
	OutputTensorType   string   `placeholder:"TYPE" nonempty:"" help:"Quantize output.weight to TYPE (a ggml type name: q8_0, q6_k, iq4_xs, f16, ...), as llama-quantize --output-tensor-type."`
	TokenEmbeddingType string   `placeholder:"TYPE" nonempty:"" help:"Quantize the token embeddings to TYPE, as llama-quantize --token-embedding-type."`
	TensorType         []string `sep:"none" placeholder:"PATTERN=TYPE" help:"Quantize the tensors whose name PATTERN (a regular expression, searched anywhere in the name) matches to TYPE, also under --pure (repeatable; the first match wins), as llama-quantize --tensor-type."`
	TensorTypeFile     string   `placeholder:"FILE" reads:"" help:"Read more PATTERN=TYPE from FILE (separated by spaces or newlines), after the --tensor-type flags, as llama-quantize --tensor-type-file."`
	LeaveOutputTensor  bool     `help:"Keep output.weight as it is, as llama-quantize --leave-output-tensor."`
	IncludeWeights     []string `sep:"none" placeholder:"NAME" help:"Use the importance matrix only for the tensors whose name contains NAME (repeatable), as llama-quantize --include-weights."`
	ExcludeWeights     []string `sep:"none" placeholder:"NAME" help:"Do not use the importance matrix for the tensors whose name contains NAME (repeatable), as llama-quantize --exclude-weights."`
	OverrideKV         []string `name:"override-kv" sep:"none" placeholder:"KEY=TYPE:VALUE" help:"Set the GGUF key-value KEY of the output (TYPE int, float, bool or str: a UINT32, FLOAT32, BOOL or STRING; repeatable; after general.file_type, in order), as llama-quantize --override-kv."`
	PruneLayers        string   `placeholder:"L0,L1,..." nonempty:"" help:"Drop these layers (blk.N) and renumber the others, setting block_count, as llama-quantize --prune-layers."`
	DryRun             bool     `help:"Print each tensor's type, size and reason and the total sizes, and write nothing (as llama-quantize --dry-run; --json for JSON)."`
}

// knobs puts the per-tensor flags into o.
func (c *quantCmd) knobs(env *cli.Env, o *quant.Options) error {
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
	if c.TensorTypeFile != "" {
		tts, err := readTensorTypeFile(c.TensorTypeFile)
		if err != nil {
			return err
		}
		o.TensorTypes = append(o.TensorTypes, tts...)
	}
	o.LeaveOutput = c.LeaveOutputTensor
	if c.PruneLayers != "" {
		if o.PruneLayers, err = quant.ParsePruneLayers(c.PruneLayers); err != nil {
			return cli.Usagef("%v", err)
		}
	}
	for _, s := range c.OverrideKV {
		kv, err := quant.ParseKVOverride(s)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		o.KVOverrides = append(o.KVOverrides, kv)
	}
	switch {
	case len(c.IncludeWeights) > 0 && len(c.ExcludeWeights) > 0:
		return cli.Usagef("--include-weights and --exclude-weights cannot be used together (as in llama-quantize)")
	case (len(c.IncludeWeights) > 0 || len(c.ExcludeWeights) > 0) && o.Imatrix == nil:
		return cli.Usagef("--include-weights and --exclude-weights choose entries of the --imatrix FILE, which is missing")
	case o.Imatrix != nil:
		file := o.Imatrix.File
		if o.Imatrix = o.Imatrix.Filter(c.IncludeWeights, c.ExcludeWeights); o.Imatrix == nil {
			env.Warnf("%s: --include-weights/--exclude-weights leave no entry: quantizing without an importance matrix, as llama-quantize does", file)
		}
	}
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

// readTensorTypeFile reads llama-quantize's --tensor-type-file: PATTERN=TYPE entries
// separated by white space (at most 1 MiB).
func readTensorTypeFile(path string) ([]quant.TensorType, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > 1<<20 {
		return nil, fmt.Errorf("%s: more than 1 MiB of tensor types", path)
	}
	var tts []quant.TensorType
	for _, s := range strings.Fields(string(b)) {
		tt, err := quant.ParseTensorType(s)
		if err != nil {
			return nil, cli.Usagef("%s: %v", path, err)
		}
		tts = append(tts, tt)
	}
	return tts, nil
}

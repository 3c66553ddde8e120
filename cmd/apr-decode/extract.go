package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apr-go/apr/lib/printable"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modelfile"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/npy"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

type extractCmd struct {
	cli.InputFlag
	Tensor []string `sep:"none" placeholder:"NAME" help:"Tensor to extract (repeatable; default: all)."`
	Expert *int     `placeholder:"I" help:"Write expert I (from 0) of a MixtureOfExperts as a standalone model file (.apr, uncompressed) instead of NumPy."`
	cli.OutputFlag
	Format string `enum:"auto,npy,npz" default:"auto" help:"npy (exactly one tensor), npz, or auto: npy for one tensor, else npz."`
	F32    bool   `name:"f32" help:"Convert float tensors NumPy cannot hold (BF16, F8, GGML quantized) to F32."`
	OldF32 bool   `name:"f-32" hidden:"" deprecated:"--f-32" use:"f32"`

	OldT []string `name:"deprecated-t" short:"t" sep:"none" hidden:"" deprecated:"-t for a tensor name" use:"tensor"`
}

func (c *extractCmd) Run(env *cli.Env) error {
	if c.Expert != nil {
		return c.extractExpert(env)
	}
	format := c.Format
	if format == "auto" {
		format = "npz"
		if len(c.Tensor) == 1 {
			format = "npy"
		}
	}
	if format == "npy" && len(c.Tensor) != 1 {
		return cli.Usagef("--format npy writes exactly one tensor: name it with --tensor")
	}
	s, closeIn, err := openStream(env, c.Input)
	if err != nil {
		return err
	}
	defer closeIn()
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	var zw *npy.NPZWriter
	if format == "npz" {
		zw = npy.NewNPZWriter(out, npy.Store)
	}
	var names []string
	err = stream.Each(s, func(info container.TensorInfo, r io.Reader) error {
		names = append(names, info.Name)
		if len(c.Tensor) > 0 && !slices.Contains(c.Tensor, info.Name) {
			return nil
		}
		return tensor.Wrap(info.Name, c.writeTensor(out, zw, info, r))
	})
	if err != nil {
		return err
	}
	var missing []string
	for _, t := range slices.Compact(slices.Sorted(slices.Values(c.Tensor))) {
		if !slices.Contains(names, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no tensor named %s (the model has: %s)", strings.Join(quoted(missing), ", "), strings.Join(quoted(names), ", "))
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	return out.Commit()
}

// writeTensor streams one tensor into .npy (or an .npz entry), converting to F32 first
// when asked and needed.
func (c *extractCmd) writeTensor(out io.Writer, zw *npy.NPZWriter, info container.TensorInfo, r io.Reader) error {
	if info.DType.Info().NumPy == "" {
		if !c.F32 || !info.DType.Info().Float {
			return fmt.Errorf("NumPy has no %v dtype (use --f32 to convert float tensors)", info.DType)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		t, err := stream.ToF32(tensor.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: data})
		if err != nil {
			return err
		}
		info.DType, r = t.DType, bytes.NewReader(t.Data)
	}
	var w io.Writer
	var err error
	if zw != nil {
		w, err = zw.Create(info.Name, info.DType, info.Shape)
	} else {
		w, err = npy.NewWriter(out, info.DType, info.Shape)
	}
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		return err
	}
	if cl, ok := w.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// quoted makes names from the file (or typed by the user) safe to print.
func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = printable.String(n)
	}
	return out
}

// extractExpert writes one expert of a mixture as a model of its own: the same
// tensors (without the "expert.<i>." prefix) and config, so it can be inspected,
// predicted with and signed alone.
func (c *extractCmd) extractExpert(env *cli.Env) error {
	if len(c.Tensor) > 0 || c.Format != "auto" || c.F32 {
		return cli.Usagef("--expert writes a model file: --tensor, --format and --f32 are for NumPy output")
	}
	r, name, err := env.Input(c.Input)
	if err != nil {
		return err
	}
	defer r.Close()
	m, err := modelfile.Read(r, modeltype.MixtureOfExperts)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	mix := m.(*model.MixtureOfExpertsModel)
	e, err := mix.Expert(*c.Expert)
	if err != nil {
		return cli.Usagef("--expert %d: %s has %d experts (0 to %d)", *c.Expert, name, len(mix.Experts), len(mix.Experts)-1)
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	so := modelfile.EncodeOptions{Name: fmt.Sprintf("expert %d of %s", *c.Expert, name),
		Custom: map[string]any{"extracted_from": name, "expert": int64(*c.Expert), "n_experts": int64(len(mix.Experts))}}
	if err := modelfile.Encode(out, e, so); err != nil {
		return fmt.Errorf("%s: %w", out.Name, err)
	}
	return out.Commit()
}

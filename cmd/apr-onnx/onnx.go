package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/onnx"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/version"
)

// readAll reads a whole input of at most limit bytes.
func readAll(env *cli.Env, path string, limit int64) ([]byte, string, error) {
	in, name, err := env.Input(path)
	if err != nil {
		return nil, name, err
	}
	defer in.Close()
	b, err := io.ReadAll(io.LimitReader(in, limit+1))
	if err != nil {
		return nil, name, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, name, fmt.Errorf("%s: over %d bytes, the most apr-onnx reads", name, limit)
	}
	return b, name, nil
}

func (c *exportCmd) Run(env *cli.Env) error {
	u, err := cli.Unsealer(&c.IdentityFlag, &c.PassphraseFlags)
	if err != nil {
		return err
	}
	b, name, err := readAll(env, c.InputFlag.Input, onnx.MaxSize)
	if err != nil {
		return err
	}
	m, _, err := apr.ReadModel(bytes.NewReader(b), apr.ReadOptions{Accept: onnx.Supported, Policy: apr.Policy{Unsealer: u}})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	info, err := apr.InspectReader(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var md container.Metadata
	if info.Metadata != nil {
		md = *info.Metadata
	}
	data, err := onnx.Marshal(m, md)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := out.Write(data); err != nil {
		return fmt.Errorf("%s: %w", out.Name, err)
	}
	return out.Commit()
}

func (c *importCmd) Run(env *cli.Env) error {
	comp, err := c.Compression()
	if err != nil {
		return err
	}
	b, name, err := readAll(env, c.Input, onnx.MaxSize)
	if err != nil {
		return err
	}
	m, md, err := onnx.Import(b)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if c.Name != "" {
		md.Name = c.Name
	}
	if md.CreatedAt, err = container.CreatedAt(); err != nil {
		return err
	}
	md.Producer, md.ModelConfig = version.Producer, m.Config()
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	s := stream.FromTensors(m.Type(), md, m.Tensors())
	if err := stream.Reencode(out, s, nil, false, container.WithCompression(comp)); err != nil {
		return fmt.Errorf("%s: %w", out.Name, err)
	}
	env.Infof("%s: NeuralSequential %v (%s), %d parameters", name, m.Widths(), activationsText(m), m.ParamCount())
	return out.Commit()
}

// activationsText lists the layers' activations: "relu, relu, softmax".
func activationsText(m *model.NeuralSequentialModel) string {
	a := make([]string, len(m.Layers))
	for i, l := range m.Layers {
		a[i] = string(l.Activation)
	}
	return strings.Join(a, ", ")
}

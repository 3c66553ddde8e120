// apr-encode builds an APR model file from NumPy arrays, or re-encodes an APR stream
// (compression, shuffle, metadata edits).
//
//	apr-encode --type LinearRegression --name house coefficients.npy intercept.npy -o model.apr
//	apr-encode --compress zstd-max --shuffle < model.apr > small.apr
package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
)

func main() { cli.Main(run) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &cli.Env{Name: "apr-encode", Stdin: stdin, Stdout: stdout, Stderr: stderr}
	return cli.Run(env, "Build an APR model from NumPy .npy/.npz files, or re-encode an APR stream.", &encodeCmd{}, args)
}

type encodeCmd struct {
	cli.VersionFlag
	Inputs      []string `arg:"" optional:"" help:"NumPy .npy/.npz files to build a model from, or one APR (or aprender) file to re-encode; none or '-' re-encodes stdin."`
	Output      string   `short:"o" placeholder:"FILE" help:"Write to FILE (atomically) instead of stdout."`
	Type        string   `short:"t" placeholder:"TYPE" help:"Model type of a new model: a name such as LinearRegression, or a code such as 0x0002 (default Custom); on re-encode, must match the input."`
	Name        *string  `help:"Set the model name."`
	Description *string  `help:"Set the description."`
	Meta        []string `sep:"none" placeholder:"KEY=VALUE" help:"Set a custom metadata value (repeatable)."`
	Hyper       []string `sep:"none" placeholder:"KEY=VALUE" help:"Set a hyperparameter (repeatable)."`
	Metric      []string `sep:"none" placeholder:"KEY=VALUE" help:"Set a metric (repeatable)."`
	Unset       []string `sep:"none" placeholder:"KEY" help:"Remove a custom, hyperparameter or metric key (repeatable)."`
	Compress    string   `short:"c" default:"zstd" enum:"none,zstd,zstd-max,lz4" help:"Compression of tensor data: none (memory-mappable), zstd (level 3), zstd-max or lz4 (default: zstd)."`
	Shuffle     bool     `help:"Byte-shuffle float and integer tensors before compression (helps float weights)."`
	ChunkSize   int      `default:"1048576" placeholder:"BYTES" help:"Raw bytes per compressed chunk."`
	Workers     int      `short:"j" default:"0" help:"Chunks compressed at once (default: number of CPUs); the output does not depend on it."`
}

func (c *encodeCmd) Run(env *cli.Env) error {
	comp, err := container.ParseCompression(c.Compress)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if c.Shuffle && comp == container.CompressNone {
		return cli.Usagef("--shuffle needs a codec (--compress zstd, zstd-max or lz4)")
	}
	opts := []container.Option{container.WithCompression(comp), container.WithShuffle(c.Shuffle), container.WithChunkSize(c.ChunkSize)}
	if c.Workers > 0 {
		opts = append(opts, container.WithWorkers(c.Workers))
	}
	src, err := c.source(env)
	if err != nil {
		return err
	}
	defer src.Close()
	edited := c.Name != nil || c.Description != nil || len(c.Meta)+len(c.Hyper)+len(c.Metric)+len(c.Unset) > 0
	if edited && src.Header().Flags&(container.FlagSigned|container.FlagLicensed) != 0 {
		env.Errorf("warning: metadata edits invalidate the input's signatures and license; they are dropped")
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if err := stream.Reencode(out, env.Progress(src), c.edit, !edited, opts...); err != nil {
		return err
	}
	return out.Commit()
}

// source is the input stream: NumPy files make a new model; otherwise an APR file or stdin.
func (c *encodeCmd) source(env *cli.Env) (apr.Stream, error) {
	numpy := 0
	for _, in := range c.Inputs {
		switch strings.ToLower(filepath.Ext(in)) {
		case ".npy", ".npz":
			numpy++
		}
	}
	if numpy > 0 {
		if numpy != len(c.Inputs) {
			return nil, cli.Usagef("mix of NumPy files and other inputs; give only .npy/.npz files, or one APR file")
		}
		t := modeltype.Custom
		if c.Type != "" {
			var err error
			if t, err = modeltype.ParseType(c.Type); err != nil {
				return nil, cli.Usagef("%v", err)
			}
		}
		created, err := container.CreatedAt()
		if err != nil {
			return nil, err
		}
		md := container.Metadata{CreatedAt: created, Producer: apr.Producer,
			Provenance: map[string]any{"source_format": "numpy"}}
		return apr.NumPyStream(container.Header{Type: t, Metadata: md}, c.Inputs)
	}
	if len(c.Inputs) > 1 {
		return nil, cli.Usagef("re-encoding takes one APR file, got %d inputs", len(c.Inputs))
	}
	in := "-"
	if len(c.Inputs) == 1 {
		in = c.Inputs[0]
	}
	r, name, err := env.Input(in)
	if err != nil {
		return nil, err
	}
	s, err := apr.OpenStream(r)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if c.Type != "" {
		t, err := modeltype.ParseType(c.Type)
		if err != nil {
			return nil, cli.Usagef("%v", err)
		}
		if got := s.Header().Type; got != t {
			return nil, fmt.Errorf("%s: model type is %v, --type says %v (re-encoding never changes the type)", name, got, t)
		}
	}
	return &closing{Stream: s, c: r}, nil
}

type closing struct {
	apr.Stream
	c io.Closer
}

func (c *closing) Close() error { c.Stream.Close(); return c.c.Close() }

// edit applies the metadata options to the header.
func (c *encodeCmd) edit(h *container.Header) {
	md := &h.Metadata
	if c.Name != nil {
		md.Name = *c.Name
	}
	if c.Description != nil {
		md.Description = *c.Description
	}
	set := func(m *map[string]any, kvs []string) {
		for _, kv := range kvs {
			k, v, _ := strings.Cut(kv, "=")
			if *m == nil {
				*m = map[string]any{}
			}
			(*m)[k] = parseValue(v)
		}
	}
	set(&md.Custom, c.Meta)
	set(&md.Hyperparameters, c.Hyper)
	set(&md.Metrics, c.Metric)
	for _, k := range c.Unset {
		delete(md.Custom, k)
		delete(md.Hyperparameters, k)
		delete(md.Metrics, k)
	}
}

// parseValue types a command-line value: integer, float, bool, else string.
func parseValue(s string) any {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	if b, err := strconv.ParseBool(s); err == nil && (s == "true" || s == "false") {
		return b
	}
	return s
}

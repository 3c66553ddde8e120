// apr-encode builds an APR model file from NumPy arrays, or re-encodes an APR stream
// (compression, shuffle, metadata edits).
//
//	apr-encode --type LinearRegression --name house coefficients.npy intercept.npy -o model.apr
//	apr-encode --compress zstd-max --shuffle < model.apr > small.apr
package main

import (
	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/stream"
)

func main() { cli.Main(run) }

var run = cli.Program{Name: "apr-encode", Help: "Build an APR model from NumPy .npy/.npz files, or re-encode an APR stream.",
	Grammar: func() any { return &encodeCmd{} }}.Run

type encodeCmd struct {
	cli.Globals
	Inputs []string `arg:"" optional:"" reads:"" help:"NumPy .npy/.npz files to build a model from, or one APR (or aprender) file to re-encode; none or '-' re-encodes stdin."`
	cli.OutputFlag
	Type               string   `short:"t" placeholder:"TYPE" help:"Model type of a new model: a name such as LinearRegression, or a code such as 0x0002 (default Custom); on re-encode, must match the input."`
	Name               *string  `help:"Set the model name."`
	Description        *string  `help:"Set the description."`
	Meta               []string `sep:"none" placeholder:"KEY=VALUE" help:"Set a custom metadata value (repeatable)."`
	Hyper              []string `sep:"none" placeholder:"KEY=VALUE" help:"Set a hyperparameter (repeatable)."`
	Metric             []string `sep:"none" placeholder:"KEY=VALUE" help:"Set a metric (repeatable)."`
	Unset              []string `sep:"none" placeholder:"KEY" help:"Remove a custom, hyperparameter or metric key (repeatable)."`
	InferenceRecipient *string  `placeholder:"RECIPIENT" help:"Publish the X25519 key (age1..., or a file holding one) that private requests are sealed to (metadata inference_recipient, covered by signatures; apr-predict --request); an empty value removes it."`
	cli.CompressFlag   `set:"compress=zstd"`
	Shuffle            bool `help:"Byte-shuffle float and integer tensors before compression (helps float weights)."`
	ChunkSize          int  `default:"1048576" placeholder:"BYTES" help:"Raw bytes per compressed chunk."`
	cli.WorkersFlag
}

func (c *encodeCmd) Run(env *cli.Env) error {
	comp, err := c.Compression()
	if err != nil {
		return err
	}
	if c.Shuffle && comp == container.CompressNone {
		return cli.Usagef("--shuffle needs a codec (--compress zstd, zstd-max or lz4)")
	}
	if err := c.checkPairs(); err != nil {
		return err
	}
	if err := c.checkRecipient(); err != nil {
		return err
	}
	jopts, err := c.Options()
	if err != nil {
		return err
	}
	opts := append([]container.Option{container.WithCompression(comp), container.WithShuffle(c.Shuffle), container.WithChunkSize(c.ChunkSize)}, jopts...)
	src, err := c.source(env)
	if err != nil {
		return err
	}
	defer src.Close()
	edited := c.Name != nil || c.Description != nil || c.InferenceRecipient != nil || len(c.Meta)+len(c.Hyper)+len(c.Metric)+len(c.Unset) > 0
	if edited && src.Header().Flags&(container.FlagSigned|container.FlagLicensed) != 0 {
		env.Warnf("metadata edits invalidate the input's signatures and license; they are dropped")
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

// apr-decode reads APR files (and aprender's): inspect, verify, extract tensors to
// NumPy, or decompress to a plain, memory-mappable APR file.
//
//	apr-decode inspect model.apr
//	apr-decode verify < model.apr
//	apr-decode extract model.apr --tensor coefficients -o coefficients.npy
//	apr-decode plain < small.apr > plain.apr
package main

import (
	"fmt"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/stream"
)

func main() { cli.Main(run) }

var run = cli.Program{Name: "apr-decode", Help: "Inspect, verify, extract and decompress APR model files (and aprender's).",
	Grammar: func() any { return &decodeCLI{} }}.Run

type decodeCLI struct {
	cli.Globals
	Inspect inspectCmd `cmd:"" help:"Show type, version, flags, metadata and tensors without reading tensor data."`
	Verify  verifyCmd  `cmd:"" help:"Check every checksum, record and chunk; the exit status says it all."`
	Extract extractCmd `cmd:"" help:"Write tensors as NumPy: one to .npy, several to .npz."`
	Plain   plainCmd   `cmd:"" help:"Decompress to a plain APR file whose tensors can be memory-mapped."`
}

type verifyCmd struct {
	cli.InputFlag
}

// Run streams the input through the verifying reader: reading (rather than
// memory-mapping) keeps memory bounded whatever the file size.
func (c *verifyCmd) Run(env *cli.Env) error {
	r, name, err := env.Input(c.Input)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer r.Close()
	n, size, err := apr.Check(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !env.Quiet {
		fmt.Fprintf(env.Stdout, "%s: OK, %d tensors, %d bytes verified\n", name, n, size)
	}
	return nil
}

type plainCmd struct {
	cli.InputFlag
	cli.OutputFlag
}

func (c *plainCmd) Run(env *cli.Env) error {
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
	if err := stream.Reencode(out, env.Progress(s), nil, true, container.WithCompression(container.CompressNone)); err != nil {
		return err
	}
	return out.Commit()
}

// openStream opens a file or stdin as a verified tensor stream.
func openStream(env *cli.Env, path string) (apr.Stream, func(), error) {
	r, name, err := env.Input(path)
	if err != nil {
		return nil, nil, err
	}
	s, err := apr.OpenStream(r)
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, func() { s.Close(); r.Close() }, nil
}

// Package ggufcmd is the command line of apr-gguf, shared by apr-gguf (subcommands
// import and export) and its aliases apr-gguf-import and apr-gguf-export.
package ggufcmd

import (
	"fmt"
	"io"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/ggufconv"
)

// Modes of Run: the program's name selects its grammar.
const (
	Both   = "apr-gguf"
	Import = "apr-gguf-import"
	Export = "apr-gguf-export"
)

// Run is the whole program named name (Both, Import or Export); it returns the exit
// code.
func Run(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &cli.Env{Name: name, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	switch name {
	case Import:
		return cli.Run(env, importHelp, &struct {
			cli.VersionFlag
			ImportCmd
		}{}, args)
	case Export:
		return cli.Run(env, exportHelp, &struct {
			cli.VersionFlag
			ExportCmd
		}{}, args)
	}
	return cli.Run(env, "Convert between GGUF (llama.cpp) and APR model files, byte for byte.", &struct {
		cli.VersionFlag
		Import ImportCmd `cmd:"" help:"GGUF to APR: every tensor, type and KV kept exactly."`
		Export ExportCmd `cmd:"" help:"APR to GGUF: restores an imported file byte for byte; apr models get documented keys."`
	}{}, args)
}

const (
	importHelp = "Import a GGUF file as an APR model: tensors pass through unchanged (every ggml type), " +
		"every KV is kept with its exact type and order (metadata key \"gguf\"), " +
		"general.name/description/license become the model's name, description and license. " +
		"A file argument records its size in the provenance (and with --digest its SHA-256); stdin streams."
	exportHelp = "Export an APR model as GGUF. A file imported from GGUF comes back byte for byte; " +
		"apr's own models (LinearRegression, ...) get general.architecture \"apr_<type>\" and their config as typed keys. " +
		"Everything llama.cpp would refuse is an error before any byte is written. " +
		"From an APR file the tensor list comes from its index; from stdin the tensors are spooled to a temporary file first."
)

// ImportCmd is `apr-gguf import`.
type ImportCmd struct {
	Input     string `arg:"" optional:"" default:"-" help:"GGUF file ('-': stdin, streamed)."`
	Output    string `short:"o" placeholder:"FILE" help:"Write to FILE (atomically) instead of stdout."`
	Compress  string `short:"c" default:"none" enum:"none,zstd,zstd-max,lz4" help:"Compression of tensor data: none (memory-mappable; the default), zstd, zstd-max or lz4."`
	Digest    bool   `help:"Record the file's SHA-256 in the provenance (one more read of the file, hashed beside the conversion; SHA-256 runs at about 1.3 GB/s per core, slower than the import). Not for stdin."`
	ChunkSize int    `default:"1048576" placeholder:"BYTES" help:"Raw bytes per compressed chunk."`
	Workers   int    `short:"j" default:"0" help:"Chunks compressed at once (default: number of CPUs)."`
}

// Run implements the command.
func (c *ImportCmd) Run(env *cli.Env) error {
	comp, err := container.ParseCompression(c.Compress)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	opts := []container.Option{container.WithCompression(comp), container.WithChunkSize(c.ChunkSize)}
	if c.Workers > 0 {
		opts = append(opts, container.WithWorkers(c.Workers))
	}
	if c.Input != "-" && c.Input != "" {
		out, err := env.Create(c.Output, true)
		if err != nil {
			return err
		}
		defer out.Abort()
		// out.Writer: the file itself (or stdout), so that the digest can be computed
		// beside the conversion and patched in (see ggufconv.ImportFile).
		if err := ggufconv.ImportFile(out.Writer, c.Input, ggufconv.ImportOptions{Digest: c.Digest}, opts...); err != nil {
			return err
		}
		return out.Commit()
	}
	if c.Digest {
		return cli.Usagef("--digest needs a file input (stdin's digest is known only after the metadata has gone out)")
	}
	s, err := ggufconv.NewStream(env.Stdin, ggufconv.ImportOptions{Name: "stdin"})
	if err != nil {
		return err
	}
	defer s.Close()
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if err := ggufconv.Import(out, s, opts...); err != nil {
		return err
	}
	return out.Commit()
}

// ExportCmd is `apr-gguf export`.
type ExportCmd struct {
	Input   string `arg:"" optional:"" default:"-" help:"APR (or aprender) file ('-': stdin, spooled to a temporary file)."`
	Output  string `short:"o" placeholder:"FILE" help:"Write to FILE (atomically) instead of stdout."`
	TempDir string `placeholder:"DIR" help:"Where to spool tensors read from stdin (default: $TMPDIR or /tmp)."`
	Generic bool   `help:"Write a Hugging Face language model that is not in llama.cpp's form (an architecture apr does not convert, or imported with --hf-layout) as a generic GGUF of its tensors, which llama.cpp cannot run, instead of refusing it."`
}

// Run implements the command.
func (c *ExportCmd) Run(env *cli.Env) error {
	o := ggufconv.ExportOptions{TempDir: c.TempDir, Generic: c.Generic}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if c.Input != "-" && c.Input != "" {
		// out.Writer: the file itself (or stdout), so that a regular file gets the
		// tensor data by copy_file_range.
		if err := ggufconv.ExportFile(out.Writer, c.Input, o); err != nil {
			return err
		}
		return out.Commit()
	}
	s, err := apr.OpenStream(env.Stdin)
	if err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	defer s.Close()
	if err := ggufconv.Export(out.Writer, s, o); err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	return out.Commit()
}

package main

import (
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/cmd/internal/ggufcmd"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/source"
)

// outputFlags choose the output's format: GGUF written by this process, as
// apr-gguf export would write the APR stream apr-quant writes, or that APR stream.
type outputFlags struct {
	To              string `enum:",apr,gguf" default:"" placeholder:"FORMAT" help:"Output format: apr or gguf (default: gguf when -o FILE ends in .gguf or a --split flag is given, else apr). For stdout, or a name that does not say."`
	SplitMaxTensors int    `placeholder:"N" nonempty:"" help:"Write a GGUF split set (-o PREFIX: PREFIX-00001-of-0000K.gguf, ...) of at most N tensors a part, as apr-gguf export and llama-gguf-split --split-max-tensors N do."`
	SplitMaxSize    string `placeholder:"SIZE" nonempty:"" help:"Write a GGUF split set (-o PREFIX) of at most SIZE bytes of tensor data a part (a whole number of M or G), as apr-gguf export and llama-gguf-split --split-max-size SIZE do."`
	KeepSplit       bool   `help:"Write the parts of a GGUF split set input as the parts of the output, with the same tensors each (-o OUT.gguf: OUT-00001-of-0000K.gguf, ...; a whole GGUF gives OUT-00001-of-00001.gguf), as llama-quantize --keep-split."`
	Generic         bool   `help:"GGUF output: write a Hugging Face model that is not in llama.cpp's form as a generic GGUF of its tensors instead of refusing it, as apr-gguf export --generic."`
	cli.TempDirFlag `set:"temp_dir_help=GGUF output to stdout of a preset that llama-quantize orders otherwise: where to spool the tensors (default: $TMPDIR or /tmp)."`
}

// The output formats.
const (
	toAPR   = "apr"
	toGGUF  = "gguf"
	toSplit = "split" // a GGUF split set
)

// format is the output's format, from the flags and the name of -o.
func (c *quantCmd) format(comp container.Compression) (string, error) {
	split := c.SplitMaxTensors != 0 || c.SplitMaxSize != "" || c.KeepSplit
	f := c.To
	if f == "" {
		f = toAPR
		if split || strings.HasSuffix(strings.ToLower(c.Output), ".gguf") {
			f = toGGUF
		}
	}
	switch {
	case c.KeepSplit && (c.SplitMaxTensors != 0 || c.SplitMaxSize != ""):
		return "", cli.Usagef("--keep-split keeps the input's parts; --split-max-tensors and --split-max-size make other ones: give one or the other")
	case split && f != toGGUF:
		return "", cli.Usagef("--split-max-tensors, --split-max-size and --keep-split write GGUF, not --to %s", f)
	case f == toGGUF && comp != container.CompressNone:
		return "", cli.Usagef("--compress sets the codec of an APR output; GGUF has none")
	case split:
		return toSplit, nil
	}
	return f, nil
}

// write converts src as o says to the output: an APR stream (as apr-quant always
// wrote), a GGUF file or a GGUF split set. The GGUF is apr-gguf export's of the APR
// stream, byte for byte: the converting stream's header is given the form the export
// would read from a pipe (source.Piped), and the export writes the converted tensors
// as they come, in place, with no APR encoding, checksum or pipe between.
func (c *quantCmd) write(env *cli.Env, src apr.Stream, name string, o quant.Options, comp container.Compression, jopts []container.Option, stats bool) error {
	f, err := c.format(comp)
	if err != nil {
		return err
	}
	var rep *quant.Report
	if f == toAPR {
		wopts := append([]container.Option{container.WithCompression(comp)}, jopts...)
		out, err := env.Create(c.Output, true)
		if err != nil {
			return err
		}
		defer out.Abort()
		m := env.Meter("quantizing", false, 0)
		rep, err = quant.Quantize(m.Writer(out), src, o, wopts...)
		m.Done()
		if err != nil {
			return named(name, err)
		}
		if err := out.Commit(); err != nil {
			return err
		}
	} else if rep, err = c.writeGGUF(env, src, name, o, f == toSplit); err != nil {
		return err
	}
	if stats {
		return c.report(env, rep)
	}
	return nil
}

// writeGGUF writes the GGUF file or split set of src converted as o says.
func (c *quantCmd) writeGGUF(env *cli.Env, src apr.Stream, name string, o quant.Options, split bool) (*quant.Report, error) {
	var so ggufconv.SplitOptions
	prefix := c.Output
	switch {
	case c.KeepSplit:
		var err error
		if so.Parts, err = c.inputParts(o); err != nil {
			return nil, err
		}
		prefix = strings.TrimSuffix(prefix, ".gguf") // as llama-quantize names the parts
	case split:
		var err error
		if so, err = ggufcmd.SplitOptions(c.SplitMaxTensors, c.SplitMaxSize, c.Output); err != nil {
			return nil, err
		}
	}
	qs, err := quant.New(src, o)
	if err != nil {
		return nil, named(name, err)
	}
	defer qs.Close()
	ps, err := source.Piped(qs)
	if err != nil {
		return nil, named(name, err)
	}
	eo := ggufconv.ExportOptions{TempDir: c.TempDir, Generic: c.Generic, Spooling: func(why string) { env.Notef("%s", why) }}
	if split {
		if err := env.NotInputSet(prefix); err != nil {
			return nil, err
		}
		res, err := ggufconv.ExportSplit(prefix, ps, eo, so)
		ggufcmd.NoteSplit(env, res)
		if err != nil {
			return nil, named(name, err)
		}
		return qs.Report(), nil
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return nil, err
	}
	defer out.Abort()
	m := env.Meter("quantizing", false, 0)
	m.Probe(out.Size)
	// out.Writer: the file itself (or stdout), which the export writes in place.
	err = ggufconv.Export(out.Writer, ps, eo)
	m.Done()
	if err != nil {
		return nil, named(name, err)
	}
	if err := out.Commit(); err != nil {
		return nil, err
	}
	return qs.Report(), nil
}

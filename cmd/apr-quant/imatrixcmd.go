package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/imatrix"
)

// withImatrixCommand runs `apr-quant imatrix ...` (importance-matrix files) with a
// grammar of its own; any other arguments are the quantizer's (TYPE is never
// "imatrix").
func withImatrixCommand(quant func([]string, io.Reader, io.Writer, io.Writer) int) func([]string, io.Reader, io.Writer, io.Writer) int {
	return func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		if len(args) > 0 && args[0] == "imatrix" {
			return imatrixProgram.Run(args[1:], stdin, stdout, stderr)
		}
		return quant(args, stdin, stdout, stderr)
	}
}

var imatrixProgram = cli.Program{Name: "apr-quant imatrix", Help: imatrixHelp, Grammar: func() any { return &imatrixCmd{} }}

const imatrixHelp = `Importance matrices (llama-imatrix's files).

convert IN OUT rewrites llama-imatrix's matrix IN in its other format, as
llama-imatrix --in-file IN [-c CHUNK] [--output-format dat] -o OUT does, byte for byte:
a GGUF (today's default form: raw sums and token counts per expert) becomes a .dat
(per-call means), a .dat becomes a GGUF. IN's format is told by its content. The chunk
size (llama-imatrix's -c, default 512) is the number of tokens a call stands for: it
converts a .dat's call counts into token counts and back.`

type imatrixCmd struct {
	cli.Globals
	Convert imatrixConvertCmd `cmd:"" help:"Rewrite an importance matrix in llama-imatrix's other format (GGUF <-> .dat)."`
}

type imatrixConvertCmd struct {
	In        string `arg:"" name:"in" reads:"" help:"llama-imatrix's matrix, GGUF or .dat ('-': stdin)."`
	Out       string `arg:"" name:"out" help:"The converted matrix ('-': stdout); written only when whole."`
	To        string `enum:"gguf,dat,other" default:"other" help:"The output format: gguf, dat, or other (the one IN is not in)."`
	ChunkSize int32  `default:"512" placeholder:"N" help:"Tokens a chunk, as llama-imatrix's -c (default: its 512)."`
}

func (c *imatrixConvertCmd) Run(env *cli.Env) error {
	if c.ChunkSize < 1 {
		return cli.Usagef("--chunk-size %d: want 1 or more", c.ChunkSize)
	}
	var m *imatrix.Matrix
	var err error
	if c.In == "-" {
		m, err = imatrix.Read("stdin", env.Stdin, -1)
	} else {
		m, err = imatrix.Load(c.In)
	}
	if err != nil {
		return err
	}
	toGGUF := c.To == "gguf" || (c.To == "other" && !m.GGUF)
	var buf bytes.Buffer // a matrix is small (a few MB for the largest models); written whole
	if toGGUF {
		err = m.WriteGGUF(&buf, c.ChunkSize)
	} else {
		err = m.WriteDat(&buf, c.ChunkSize)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", c.In, err)
	}
	out, err := env.Create(c.Out, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := out.Write(buf.Bytes()); err != nil {
		return err
	}
	return out.Commit()
}

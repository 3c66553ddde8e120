// apr-gguf converts between GGUF (llama.cpp's model format) and APR, byte for byte.
//
//	apr-gguf import model.gguf -o model.apr
//	apr-gguf export model.apr -o model.gguf
//	apr-gguf import < model.gguf | apr-quant q8_0 | apr-gguf export > model.Q8_0.gguf
package main

import (
	"io"

	"github.com/apr-go/apr/cmd/apr-gguf/ggufcmd"
	"github.com/apr-go/apr/cmd/internal/cli"
)

func main() { cli.Main(run) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return ggufcmd.Run(ggufcmd.Both, args, stdin, stdout, stderr)
}

// apr-gguf-export is `apr-gguf export`: an APR model to a GGUF file.
//
//	apr-gguf-export model.apr -o model.gguf
package main

import (
	"io"

	"github.com/apr-go/apr/cmd/apr-gguf/ggufcmd"
	"github.com/apr-go/apr/cmd/internal/cli"
)

func main() { cli.Main(run) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return ggufcmd.Run(ggufcmd.Export, args, stdin, stdout, stderr)
}

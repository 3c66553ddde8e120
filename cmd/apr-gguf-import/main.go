// apr-gguf-import is `apr-gguf import`: a GGUF file to an APR model.
//
//	apr-gguf-import model.gguf -o model.apr
package main

import (
	"io"

	"github.com/apr-go/apr/cmd/apr-gguf/ggufcmd"
	"github.com/apr-go/apr/cmd/internal/cli"
)

func main() { cli.Main(run) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return ggufcmd.Run(ggufcmd.Import, args, stdin, stdout, stderr)
}

// apr-st-import is `apr-st import`: SafeTensors in, APR model stream out.
//
//	apr-st-import < model.safetensors | apr-quant q4_0 | apr-sign -k ci.key > model.apr
package main

import (
	"io"

	"github.com/apr-go/apr/cmd/apr-st/stcli"
	"github.com/apr-go/apr/cmd/internal/cli"
)

func main() { cli.Main(run) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return stcli.Run("apr-st-import", stcli.ImportHelp, &stcli.ImportMain{}, args, stdin, stdout, stderr)
}

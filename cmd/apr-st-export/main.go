// apr-st-export is `apr-st export`: APR model in, SafeTensors out.
//
//	apr-st-export model.apr -o model.safetensors
//	apr-decode plain < model.apr | apr-st-export > model.safetensors
package main

import (
	"io"

	"github.com/apr-go/apr/cmd/apr-st/stcli"
	"github.com/apr-go/apr/cmd/internal/cli"
)

func main() { cli.Main(run) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return stcli.Run("apr-st-export", stcli.ExportHelp, &stcli.ExportMain{}, args, stdin, stdout, stderr)
}

// apr-gguf-import is `apr-gguf import`: a GGUF file to an APR model.
//
//	apr-gguf-import model.gguf -o model.apr
package main

import (
	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/cmd/internal/ggufcmd"
)

func main() { cli.Main(run) }

var run = ggufcmd.Import.Run

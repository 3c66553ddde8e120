// apr-gguf-export is `apr-gguf export`: an APR model to a GGUF file.
//
//	apr-gguf-export model.apr -o model.gguf
package main

import (
	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/cmd/internal/ggufcmd"
)

func main() { cli.Main(run) }

var run = ggufcmd.Export.Run

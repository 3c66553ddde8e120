// apr-st-export is `apr-st export`: APR model in, SafeTensors out.
//
//	apr-st-export model.apr -o model.safetensors
//	apr-decode plain < model.apr | apr-st-export > model.safetensors
package main

import (
	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/cmd/internal/stcmd"
)

func main() { cli.Main(run) }

var run = stcmd.Export.Run

// apr-st-import is `apr-st import`: SafeTensors in, APR model stream out.
//
//	apr-st-import < model.safetensors | apr-quant q4_0 | apr-sign -k ci.key > model.apr
package main

import (
	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/cmd/internal/stcmd"
)

func main() { cli.Main(run) }

var run = stcmd.Import.Run

// apr-gguf converts between GGUF (llama.cpp's model format) and APR, byte for byte.
//
//	apr-gguf import model.gguf -o model.apr
//	apr-gguf export model.apr -o model.gguf
//	apr-gguf import < model.gguf | apr-quant q8_0 | apr-gguf export > model.Q8_0.gguf
package main

import (
	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/cmd/internal/ggufcmd"
)

func main() { cli.Main(run) }

var run = ggufcmd.Program.Run

// apr-st imports SafeTensors as APR model streams and exports them back, byte for byte
// as Hugging Face's safetensors crate writes them.
//
//	apr-st import model.safetensors -o model.apr
//	apr-st import < model.safetensors | apr-decode verify
//	apr-st import ./Llama-checkpoint/ | apr-encode -c zstd > llama.apr
//	apr-st export model.apr -o model.safetensors
//	apr-st export llama.apr --shard-size 5GB -o ./out/
package main

import (
	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/cmd/internal/stcmd"
)

func main() { cli.Main(run) }

var run = stcmd.Program.Run

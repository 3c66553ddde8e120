// apr-onnx converts models between APR and ONNX (docs/ONNX.md).
//
//	apr-onnx export < model.apr > model.onnx
//	apr-onnx export model.apr -o model.onnx
//	apr-onnx import < mlp.onnx > model.apr
//	apr-onnx import mlp.onnx -o model.apr
package main

import (
	"github.com/apr-go/apr/cmd/internal/cli"
)

func main() { cli.Main(run) }

var run = cli.Program{Name: "apr-onnx", Help: description, Grammar: func() any { return &onnxCLI{} }}.Run

const description = `Convert models between APR and ONNX.

export writes a LinearRegression, LogisticRegression (binary or multinomial) or
NeuralSequential model as ONNX (IR version 8, opset 13, standard operators), with
the input and outputs named as skl2onnx names them: float_input (float32 [N,
features]); variable for a regression; label (int64 [N]) and probabilities (float32
[N, classes]) for a classifier. The APR metadata goes into metadata_props.

import reads a multilayer perceptron as torch.onnx.export writes it (Gemm, or MatMul
and Add, with Relu, Tanh, Sigmoid or a final Softmax) into a NeuralSequential model;
any other operator is an error naming it.`

type onnxCLI struct {
	cli.Globals
	Export exportCmd `cmd:"" help:"Write an APR model as ONNX."`
	Import importCmd `cmd:"" help:"Read an ONNX multilayer perceptron (as torch.onnx.export writes it) into a NeuralSequential APR model."`
}

type exportCmd struct {
	cli.InputFlag `set:"input_help=The model: APR v2 file or aprender ('-': stdin)."`
	cli.OutputFlag
	cli.IdentityFlag    `set:"identity_help=For a sealed model: an X25519 identity file (apr-seal keygen, age-keygen) that opens it."`
	cli.PassphraseFlags `set:"passphrase_help=For a passphrase-sealed model: ask for its passphrase on the terminal (/dev/tty)."`
}

type importCmd struct {
	Input string `arg:"" optional:"" default:"-" reads:"" help:"The ONNX file ('-': stdin)."`
	cli.OutputFlag
	cli.CompressFlag `set:"compress=zstd"`
	Name             string `help:"Model name in the metadata (default: the ONNX file's own, if it has one)."`
}

// Package layers holds the test that keeps apr's packages in their layers
// (docs/DESIGN.md): a package imports only packages of lower layers, so the file
// format never depends on the models, and nothing under lib/ depends on the façade.
package layers

// Layer of each package of the module, from the bottom. A package may import only
// packages of a strictly lower layer. A new package must be added here (the test
// fails for a package it does not know).
var Layer = map[string]int{
	// 0: leaves, importing nothing of ours.
	"lib/dtype": 0, "lib/modeltype": 0, "lib/version": 0,
	"lib/seal": 0, "lib/sign": 0, "lib/internal/crcjoin": 0, "lib/internal/mmap": 0,
	"lib/internal/splice":   0,
	"lib/internal/peertest": 0, "lib/internal/argon2ref": 0, "lib/internal/layers": 0,
	"lib/internal/ordered": 0, "lib/internal/mpwalk": 0, "lib/printable": 0, "lib/cleanup": 0,
	"lib/internal/iocount": 0, "lib/internal/jsonobj": 0, "lib/onnx/internal/onnxpb": 0,
	"lib/internal/regfile": 0,
	// 1: the kernels and the in-memory tensor, on the dtype table; atomic output files.
	"kernels": 1, "lib/tensor": 1, "lib/atomicfile": 1,
	// OpenSSF Model Signing: a model folder's digests, statements and Sigstore bundles.
	"lib/oms": 1,
	// 2: the file formats and the models; neither knows the other.
	"lib/container": 2, "lib/aprender": 2, "lib/npy": 2, "lib/safetensors": 2, "lib/gguf": 2,
	"lib/model": 2,
	// 3: the one tensor stream (open, inspect, check, re-encode, dequantize).
	"lib/stream": 3, "lib/ggufconv/internal/gengguf": 3,
	// A GGUF without one tensor (tests and the mtmd peer: the converter's projector).
	"lib/internal/ggufdrop": 3, "lib/internal/ggufdrop/strip": 4,
	// llama-imatrix's matrices, in its .dat form and in GGUF (on lib/gguf).
	"lib/imatrix": 3,
	// 4: transforms of a stream, and models to and from files.
	"lib/quant": 4, "lib/manifest": 4, "lib/modelfile": 4, "lib/llm": 4, "lib/sealed": 4,
	"lib/onnx": 4,
	// 5: converters and trainers, and signatures (on manifest's digests).
	"lib/stconv": 5, "lib/ggufconv": 5, "lib/distill": 5, "lib/signed": 5, "lib/predict": 5,
	// 6: the façade for library users; any model input as a stream (on both converters).
	"lib/apr": 6, "lib/source": 6,
	// 7: the programs' shared kit; 8: the programs' own packages; 9: the programs.
	"cmd/internal/cli":     7,
	"cmd/internal/ggufcmd": 8, "cmd/internal/stcmd": 8,
	"cmd/apr-decode": 9, "cmd/apr-distill": 9, "cmd/apr-encode": 9, "cmd/apr-gguf": 9,
	"cmd/apr-gguf-export": 9, "cmd/apr-gguf-import": 9, "cmd/apr-quant": 9, "cmd/apr-seal": 9,
	"cmd/apr-predict": 9, "cmd/apr-onnx": 9, "cmd/apr-sign": 9, "cmd/apr-st": 9, "cmd/apr-st-export": 9, "cmd/apr-st-import": 9,
	// Programs of the example pipelines (data generation, training, the browser
	// page's server and its WebAssembly half).
	"pipelines/gen": 9, "pipelines/train": 9, "pipelines/embedded": 9,
	"pipelines/browser": 9, "pipelines/browser/wasm": 9,
	// The whole-pipeline tests' kit (the programs under test, built once).
	"pipelines/internal/progbin": 9,
}

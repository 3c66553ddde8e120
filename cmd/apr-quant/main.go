// apr-quant quantizes the tensors of an APR model (or casts them to f16, bf16, or back
// to f32), as a filter: stdin to stdout, or files; from GGUF, SafeTensors or a
// checkpoint directory to GGUF too, in one command (output.go, lib/source).
//
//	apr-quant q4_k_m model.f32.gguf -o model.Q4_K_M.gguf   # as llama-quantize
//	apr-quant f16 checkpoint/ -o model.f16.gguf            # as convert_hf_to_gguf.py
//	apr-quant q8_0 model.apr -o model-q8_0.apr
//	apr-st import < model.safetensors | apr-quant q4_k --stats | apr-sign -k ci.key > model.apr
//	apr-quant q8_0 --include coefficients linear.apr -o linear-q8.apr
//	apr-quant f32 model-q4_0.apr -o back.apr     # dequantize
//	apr-quant iq4_xs --tensor-type 'attn_v=q8_0' --dry-run model.apr
//	apr-quant imatrix convert imatrix.gguf imatrix.dat
package main

import (
	"fmt"
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/cmd/internal/stcmd"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/imatrix"
	"github.com/apr-go/apr/lib/quant"
)

func main() { cli.Main(run) }

var run = withImatrixCommand(cli.Program{Name: "apr-quant", Help: description, Grammar: func() any { return &quantCmd{} }}.Run)

const description = `Quantize an APR model's tensors to a GGML block type, or cast them to f16, bf16 or f32.

apr-quant TYPE INPUT -o OUTPUT is the one-step job in one command, as llama-quantize IN
OUT TYPE is. INPUT is an APR file or stream, a GGUF file (the first part of a split set
reads the set), a SafeTensors file or a Hugging Face checkpoint directory, told apart by
content (stdin too); OUTPUT is GGUF when its name ends in .gguf, a GGUF split set with
--split-max-tensors or --split-max-size (-o PREFIX) or with --keep-split (the input's
parts, as llama-quantize --keep-split: -o OUT.gguf writes OUT-00001-of-0000K.gguf, ...),
else APR; --to gguf|apr says it for stdout. The bytes are those of the pipe apr-st import (or apr-gguf import) | apr-quant
TYPE | apr-gguf export, made in one process: apr-quant f16 DIR -o model.f16.gguf is
convert_hf_to_gguf.py's job, apr-quant q4_k_m DIR -o model.Q4_K_M.gguf llama-quantize's
on top of it. apr-st import's flags that decide what is read from a SafeTensors file or
checkpoint directory (--name, --no-files, --hf-layout, --tokenizer-pre, --digest, --mmproj) apply
to such an input as they do in the pipe, and are a usage error with any other input.

TYPE is one of q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, nvfp4, q1_0,
q2_0, iq4_nl, iq4_xs, iq3_xxs, iq3_s, iq2_xxs, iq2_xs, iq2_s, iq1_s, iq1_m, tq1_0, tq2_0,
mxfp4, f16, bf16, or f32 (dequantize every float tensor); copy is llama-quantize's COPY
(no tensor changes; the file in its layout with the input's general.file_type, for
--override-kv and --prune-layers edits). The bytes are those of ggml's
quantizers (llama-quantize's). iq3_xxs, iq2_xxs, iq2_xs, iq2_s, iq1_s and iq1_m need
--imatrix, as in llama-quantize: a tensor without an entry in the matrix is an error
(token_embd.weight and output.weight excepted; iq2_s and iq1_m quantize those without
weights, iq2_xxs, iq2_xs and iq1_s refuse them: keep them with --exclude).

For a language model (one imported from a llama.cpp GGUF or a Hugging Face checkpoint),
llama-quantize's file types are presets with its per-tensor rules (today's llama.cpp):
q2_k, q2_k_s, q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, q4_0, q4_1,
q5_0, q5_1, iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq2_m, iq3_xxs, iq3_xs, iq3_s, iq3_m,
iq4_nl, iq4_xs, tq1_0, tq2_0, mxfp4_moe, q1_0 and q2_0: more bits for output.weight, attn_v,
ffn_down and attn_output as llama.cpp's rules say, and apr-gguf export writes
llama-quantize's file. (As in llama-quantize, iq2_s and iq3_xs are mixtures: mostly
IQ2_XS and IQ3_S.) IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS (and Q2_K in q2_k_s)
need an importance matrix: without --imatrix such a tensor is refused, as llama-quantize
refuses it.

Per tensor, as llama-quantize spells it: --output-tensor-type TYPE, --token-embedding-type
TYPE (neither falls back: the rows must be whole blocks), --tensor-type PATTERN=TYPE
(a regular expression searched in the tensor's name, lower-cased; the first match wins;
honoured under --pure; ignored when TYPE is f16, bf16 or f32, as llama-quantize ignores
it) and --tensor-type-file FILE, --leave-output-tensor; --include-weights and
--exclude-weights NAME pick the importance matrix's entries. --dry-run prints each
tensor's type, size and reason and the total sizes, and writes nothing.
--override-kv KEY=TYPE:VALUE (repeatable; TYPE int, float, bool or str) sets a GGUF
key-value of the output as llama-quantize does: a UINT32, FLOAT32, BOOL or STRING
moved after general.file_type, in order; an int override of block_count, expert_count
or the head counts reaches the preset's rules, as in llama.cpp. --prune-layers L0,L1,...
drops those layers (blk.N) and renumbers the others, setting block_count, as
llama-quantize does.

--imatrix FILE takes llama-imatrix's importance matrix (its GGUF, today's default, or its
.dat: told by the content) and quantizes as llama-quantize --imatrix does: each weight
with an entry in the matrix gets ggml's importance-weighted quantizer (q8_0, f16, bf16,
mxfp4, nvfp4, q1_0, q2_0, tq1_0 and tq2_0 take no weights), and the GGUF export carries the quantize.imatrix.* keys, FILE as
given here. An entry whose size does not fit its tensor, an entry all zero for a tensor
(or one expert), and a matrix with no entry for any converted tensor are errors.
'apr-quant imatrix convert IN OUT' rewrites a matrix in the other format, as llama-imatrix
does (see 'apr-quant imatrix --help').

Which tensors change follows llama.cpp's quantizer: 2-D (and larger) float tensors
whose name ends in "weight"; norms, biases, 1-D tensors and the few small 2-D tensors
llama.cpp keeps stay as they are. --pure converts every float tensor of 2+ dimensions;
--include converts the named tensors whatever the rules (1-D ones too: that is how a
LinearRegression's "coefficients" is quantized); --exclude keeps them, and wins.

Rows must be whole blocks (32 values; 64 for nvfp4 and q2_0, 128 for q1_0, 256 for the
K-quants, the i-quants but iq4_nl, and the ternary types). Those types fall back with a
warning (-q silences it), as llama.cpp does (i-quants->iq4_nl, q4_k->q5_0, q5_k->q5_1,
q6_k->q8_0, q2_k/q3_k/q2_0/tq1_0/tq2_0->q4_0, then f16; in a language model a
32-value type, q8_0 too, goes to f16); for the other types such a tensor is an error. NaN,
infinite values, values whose block scale would overflow f16, and nvfp4 values beyond
2688 (which ggml would clamp) are errors naming the tensor and position. On any error
nothing is written (-o FILE is created atomically) and the exit status is 1.

The output is uncompressed by default, so its tensors can be memory-mapped in place;
--compress picks a codec. The output bytes do not depend on --workers.`

type quantCmd struct {
	cli.Globals
	Type          string `arg:"" name:"type" help:"Target type (see above)."`
	cli.InputFlag `set:"input_help=APR, GGUF (a split set's first part) or SafeTensors file, or a checkpoint directory ('-': stdin)."`
	cli.OutputFlag
	Pure            bool     `help:"Convert every float tensor of 2+ dimensions, whatever its name."`
	Include         []string `sep:"none" placeholder:"GLOB" help:"Convert tensors whose name matches GLOB, whatever the rules (repeatable)."`
	Exclude         []string `sep:"none" placeholder:"GLOB" help:"Keep tensors whose name matches GLOB as they are (repeatable; wins over --include)."`
	AllowRequantize bool     `help:"Allow converting already quantized tensors to another type (f16 and bf16 too; f32 always dequantizes), as llama-quantize --allow-requantize."`
	Stats           bool     `help:"Report per tensor: type, bits per weight, size before and after, RMS and max error (on stderr)."`
	JSON            bool     `help:"Write the --stats report as JSON (implies --stats)."`
	StatsFile       string   `placeholder:"FILE" help:"Write the --stats report to FILE instead of stderr ('-': stdout, with -o)."`
	Imatrix         string   `placeholder:"FILE" reads:"" help:"Weight the quantizers by llama-imatrix's importance matrix FILE (GGUF or .dat), as llama-quantize --imatrix."`
	knobFlags
	stcmd.ImportFlags
	cli.WorkersFlag
	cli.CompressFlag
	outputFlags

	parts []string // the input's GGUF files (a split set's parts), for --keep-split
}

func (c *quantCmd) Run(env *cli.Env) error {
	copyOnly := strings.EqualFold(c.Type, "copy") // llama-quantize's COPY
	t, err := quant.ParseType(c.Type)
	if copyOnly {
		t, err = dtype.F32, nil
	}
	if err != nil {
		return cli.Usagef("%v", err)
	}
	comp, err := c.Compression()
	if err != nil {
		return err
	}
	jopts, err := c.Options()
	if err != nil {
		return err
	}
	stats := c.Stats || c.JSON || c.StatsFile != ""
	if c.StatsFile == "-" && (c.Output == "" || c.Output == "-") {
		return cli.Usagef("--stats-file - and the model would both go to stdout; use -o FILE")
	}
	if err := env.NotInput(c.Output, c.StatsFile); err != nil { // the report is written after the model
		return err
	}
	preset, _ := quant.Preset(c.Type)
	o := quant.Options{Type: t, Preset: preset, Pure: c.Pure, Include: c.Include, Exclude: c.Exclude, AllowRequantize: c.AllowRequantize,
		Workers: c.Workers, Stats: stats, Producer: "apr-quant " + apr.Version,
		Warn: func(msg string) { env.Warnf("%s", msg) }, Copy: copyOnly}
	if c.Imatrix != "" {
		m, err := imatrix.Load(c.Imatrix)
		if err != nil {
			return fmt.Errorf("--imatrix: %w", err)
		}
		o.Imatrix = m
	}
	if err := c.knobs(env, &o); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return cli.Usagef("%v", err)
	}
	if c.DryRun {
		return c.dryRun(env, o)
	}

	widenPipes(env.Stdin, env.Stdout)
	src, name, closeIn, err := c.open(env, &o)
	if err != nil {
		return err
	}
	defer closeIn()
	if src.Header().Flags&(container.FlagSigned|container.FlagLicensed) != 0 {
		env.Warnf("%s: its signatures and license cover the original values; they are dropped", name)
	}
	return c.write(env, src, name, o, comp, jopts, stats)
}

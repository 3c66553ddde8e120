// apr-quant quantizes the tensors of an APR model (or casts them to f16, bf16, or back
// to f32), as a filter: stdin to stdout, or files.
//
//	apr-quant q8_0 model.apr -o model-q8_0.apr
//	apr-st import < model.safetensors | apr-quant q4_k --stats | apr-sign -k ci.key > model.apr
//	apr-quant q8_0 --include coefficients linear.apr -o linear-q8.apr
//	apr-quant f32 model-q4_0.apr -o back.apr     # dequantize
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/quant"
)

func main() { cli.Main(run) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &cli.Env{Name: "apr-quant", Stdin: stdin, Stdout: stdout, Stderr: stderr}
	return cli.Run(env, description, &quantCmd{}, args)
}

const description = `Quantize an APR model's tensors to a GGML block type, or cast them to f16, bf16 or f32.

TYPE is one of q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, nvfp4, q1_0,
q2_0, f16, bf16, or f32 (dequantize every float tensor). The bytes are those of ggml's
reference quantizers.

Which tensors change follows llama.cpp's quantizer: 2-D (and larger) float tensors
whose name ends in "weight"; norms, biases, 1-D tensors and the few small 2-D tensors
llama.cpp keeps stay as they are. --pure converts every float tensor of 2+ dimensions;
--include converts the named tensors whatever the rules (1-D ones too: that is how a
LinearRegression's "coefficients" is quantized); --exclude keeps them, and wins.

Rows must be whole blocks (32 values; 64 for nvfp4 and q2_0, 128 for q1_0, 256 for the
K-quants). A K-quant or q2_0 falls back with a warning, as llama.cpp does (q4_k->q5_0,
q5_k->q5_1, q6_k->q8_0, q2_k/q3_k/q2_0->q4_0, then f16); for the other types such a
tensor is an error. NaN, infinite values, values whose block scale would overflow f16,
and nvfp4 values beyond 2688 (which ggml would clamp) are errors naming the tensor and
position. On any error nothing is written (-o FILE is created atomically) and the exit
status is 1.

The output is uncompressed by default, so its tensors can be memory-mapped in place;
--compress picks a codec. The output bytes do not depend on --workers.`

type quantCmd struct {
	cli.VersionFlag
	Type            string   `arg:"" name:"type" help:"Target type (see above)."`
	Input           string   `arg:"" optional:"" default:"-" help:"APR or aprender file ('-': stdin)."`
	Output          string   `short:"o" placeholder:"FILE" help:"Write to FILE (atomically) instead of stdout."`
	Pure            bool     `help:"Convert every float tensor of 2+ dimensions, whatever its name."`
	Include         []string `sep:"none" placeholder:"GLOB" help:"Convert tensors whose name matches GLOB, whatever the rules (repeatable)."`
	Exclude         []string `sep:"none" placeholder:"GLOB" help:"Keep tensors whose name matches GLOB as they are (repeatable; wins over --include)."`
	AllowRequantize bool     `help:"Allow converting already quantized tensors to another quantized type."`
	Stats           bool     `help:"Report per tensor: type, bits per weight, size before and after, RMS and max error (on stderr)."`
	JSON            bool     `help:"Write the --stats report as JSON (implies --stats)."`
	StatsFile       string   `placeholder:"FILE" help:"Write the --stats report to FILE instead of stderr ('-': stdout, with -o)."`
	Workers         int      `short:"j" default:"0" help:"Chunks converted at once (default: number of CPUs)."`
	Compress        string   `short:"c" default:"none" enum:"none,zstd,zstd-max,lz4" help:"Compression of the output: none (memory-mappable; the default), zstd, zstd-max or lz4."`
}

func (c *quantCmd) Run(env *cli.Env) error {
	t, err := quant.ParseType(c.Type)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	comp, err := container.ParseCompression(c.Compress)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if c.Workers < 0 {
		return cli.Usagef("--workers %d: must be 0 (all CPUs) or more", c.Workers)
	}
	stats := c.Stats || c.JSON || c.StatsFile != ""
	if c.StatsFile == "-" && (c.Output == "" || c.Output == "-") {
		return cli.Usagef("--stats-file - and the model would both go to stdout; use -o FILE")
	}
	o := quant.Options{Type: t, Pure: c.Pure, Include: c.Include, Exclude: c.Exclude, AllowRequantize: c.AllowRequantize,
		Workers: c.Workers, Stats: stats, Producer: "apr-quant " + apr.Version,
		Warn: func(msg string) { env.Errorf("warning: %s", msg) }}
	if err := o.Validate(); err != nil {
		return cli.Usagef("%v", err)
	}

	widenPipes(env.Stdin, env.Stdout)
	src, name, closeIn, err := c.open(env, &o)
	if err != nil {
		return err
	}
	defer closeIn()
	if src.Header().Flags&(container.FlagSigned|container.FlagLicensed) != 0 {
		env.Errorf("warning: %s: its signatures and license cover the original values; they are dropped", name)
	}
	wopts := []container.Option{container.WithCompression(comp)}
	if c.Workers > 0 {
		wopts = append(wopts, container.WithWorkers(c.Workers))
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	rep, err := quant.Quantize(out, src, o, wopts...)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := out.Commit(); err != nil {
		return err
	}
	if stats {
		return c.report(env, rep)
	}
	return nil
}

// open returns the input stream. A regular file's index is read first (a few reads,
// whatever its size), so every tensor is decided, and every rule error reported,
// before any output exists, and the provenance gets per-type counts. A plain APR v2
// file is memory-mapped (quant.MapFile); other files and pipes are streamed.
func (c *quantCmd) open(env *cli.Env, o *quant.Options) (apr.Stream, string, func(), error) {
	if c.Input != "-" && c.Input != "" {
		if s := quant.MapFile(c.Input); s != nil { // a plain APR v2 file: quantized in place
			o.Plan = s.Plan()
			return s, c.Input, func() { s.Close() }, nil
		}
		if st, err := os.Stat(c.Input); err == nil && st.Mode().IsRegular() {
			info, err := apr.Inspect(c.Input)
			if err != nil {
				return nil, c.Input, nil, fmt.Errorf("%s: %w", c.Input, err)
			}
			o.Plan = make([]container.TensorInfo, 0, len(info.Tensors))
			for _, e := range info.Tensors {
				o.Plan = append(o.Plan, e.TensorInfo)
			}
		}
	}
	r, name, err := env.Input(c.Input)
	if err != nil {
		return nil, name, nil, err
	}
	s, err := apr.OpenStream(r)
	if err != nil {
		r.Close()
		return nil, name, nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, name, func() { s.Close(); r.Close() }, nil
}

func (c *quantCmd) report(env *cli.Env, rep *quant.Report) error {
	w := env.Stderr
	var out *cli.Output
	if c.StatsFile != "" {
		var err error
		if out, err = env.Create(c.StatsFile, false); err != nil {
			return err
		}
		defer out.Abort()
		w = out
	}
	var err error
	if c.JSON {
		err = rep.WriteJSON(w)
	} else {
		err = rep.WriteTable(w)
	}
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if out != nil {
		return out.Commit()
	}
	return nil
}

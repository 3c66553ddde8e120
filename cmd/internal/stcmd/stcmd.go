// Package stcmd is the command line of apr-st: the import and export commands, shared
// by apr-st and its aliases apr-st-import and apr-st-export (cli.Alias).
package stcmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stconv"
	"github.com/apr-go/apr/lib/stream"
)

// The programs: apr-st, and its commands as programs of their own.
var (
	Program = cli.Program{Name: "apr-st", Help: "Import and export SafeTensors (Hugging Face) models as APR streams.",
		Grammar: func() any { return &grammar{} }}
	Import = cli.Alias[ImportCmd]("apr-st-import", importHelp)
	Export = cli.Alias[ExportCmd]("apr-st-export", exportHelp)
)

const (
	importHelp = "Import SafeTensors (a file, a Hugging Face checkpoint directory, or stdin) as an APR model stream."
	exportHelp = "Export an APR model as SafeTensors: one file, or a Hugging Face checkpoint directory (sharded with --shard-size)."
)

type grammar struct {
	cli.Globals
	Import ImportCmd `cmd:"" help:"Import SafeTensors as an APR model (stdout or -o FILE)."`
	Export ExportCmd `cmd:"" help:"Export an APR model as SafeTensors (stdout, -o FILE, or -o DIR/ for a checkpoint)."`
}

// ImportCmd imports SafeTensors.
type ImportCmd struct {
	cli.InputFlag `set:"input_help=A .safetensors file, a checkpoint directory (model.safetensors.index.json and shards, or model.safetensors), an index file, or '-' for stdin (a pipe streams through)."`
	cli.OutputFlag
	Type string `short:"t" placeholder:"TYPE" help:"Model type of the APR (a name such as LinearRegression, or a code); default: __metadata__'s apr.model_type, else Custom."`
	ImportFlags
	cli.CompressFlag
	Shuffle bool `help:"Byte-shuffle float and integer tensors before compression."`
	cli.WorkersFlag
}

// ImportFlags are the import flags that decide what is read from a SafeTensors file or
// checkpoint directory (the output's codec, workers and model type are each program's
// own). apr-quant embeds them too, so its one command converts a checkpoint as the pipe
// apr-st import | apr-quant does.
type ImportFlags struct {
	Name         string `help:"Model name to record in the metadata."`
	NoFiles      bool   `help:"Do not keep a checkpoint directory's config and tokenizer files in the metadata."`
	HFLayout     bool   `name:"hf-layout" help:"Keep a language model's tensors as the checkpoint names and lays them out. By default a checkpoint whose config.json names an architecture apr converts (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, ...) is imported in llama.cpp's form, ready for apr-gguf export."`
	TokenizerPre string `name:"tokenizer-pre" placeholder:"NAME" help:"llama.cpp's pre-tokenizer (tokenizer.ggml.pre) of a BPE tokenizer.json whose pre-tokenizer apr does not recognize (docs/SAFETENSORS.md lists those it does)."`
	MMProj       bool   `name:"mmproj" help:"Import a multimodal checkpoint's vision projector (the mmproj file llama.cpp's mtmd loads, as convert_hf_to_gguf.py --mmproj writes it, with the [IMG_BREAK] row llama.cpp needs: docs/GGUF.md) instead of its text model. Pixtral (Mistral3ForConditionalGeneration) only."`
	Digest       bool   `help:"Record the SHA-256 of each source file in the provenance (one more read of the input, hashed beside the conversion into a file; SHA-256 runs at about 1.3 GB/s per core, slower than the import). Not for a pipe."`
}

// ImportOptions returns the importer's options of the flags.
func (f ImportFlags) ImportOptions() stconv.ImportOptions {
	return stconv.ImportOptions{Name: f.Name, SkipFiles: f.NoFiles, Digest: f.Digest, HFLayout: f.HFLayout, TokenizerPre: f.TokenizerPre, MMProj: f.MMProj}
}

// Given lists the flags set, as spelled on the command line.
func (f ImportFlags) Given() []string {
	var given []string
	for _, g := range []struct {
		set  bool
		flag string
	}{{f.Name != "", "--name"}, {f.NoFiles, "--no-files"}, {f.HFLayout, "--hf-layout"}, {f.TokenizerPre != "", "--tokenizer-pre"}, {f.Digest, "--digest"}, {f.MMProj, "--mmproj"}} {
		if g.set {
			given = append(given, g.flag)
		}
	}
	return given
}

// Run imports.
func (c *ImportCmd) Run(env *cli.Env) error {
	comp, err := c.Compression()
	if err != nil {
		return err
	}
	if c.Shuffle && comp == container.CompressNone {
		return cli.Usagef("--shuffle needs a codec (--compress zstd, zstd-max or lz4)")
	}
	opts := c.ImportOptions()
	if c.Type != "" {
		if opts.Type, err = modeltype.ParseType(c.Type); err != nil {
			return cli.Usagef("%v", err)
		}
	}
	jopts, err := c.Options()
	if err != nil {
		return err
	}
	wopts := append([]container.Option{container.WithCompression(comp), container.WithShuffle(c.Shuffle)}, jopts...)
	name := c.Input
	var stdinFile *os.File
	if c.Input == "-" || c.Input == "" {
		name = "stdin"
		if f, ok := regularFile(env.Stdin); ok {
			stdinFile = f
		} else {
			// A pipe streams through: no digest (it would be known only at the end).
			if c.Digest {
				return cli.Usagef("--digest needs a file input (a pipe's digest is known only after the metadata has gone out)")
			}
			s, err := stconv.NewStream(env.Stdin, opts)
			if err != nil {
				return prefix(name, err)
			}
			defer s.Close()
			out, err := env.Create(c.Output, true)
			if err != nil {
				return err
			}
			defer out.Abort()
			if err := stream.Reencode(out, env.Progress(s), nil, false, wopts...); err != nil {
				return prefix(name, err)
			}
			return out.Commit()
		}
	} else if _, err := os.Stat(c.Input); err != nil {
		return err
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		if stdinFile != nil {
			stdinFile.Close()
		}
		return err
	}
	defer out.Abort()
	m := env.Meter("importing", false, 0)
	m.Probe(out.Size)
	defer m.Done()
	// With --digest into a regular file, the source digests are computed beside the
	// conversion and patched into the metadata afterwards (see stconv.ImportFile).
	if stdinFile != nil {
		err = stconv.ImportOpenFile(out.Writer, stdinFile, name, opts, wopts...)
	} else {
		err = stconv.ImportFile(out.Writer, c.Input, opts, wopts...)
	}
	if err != nil {
		return prefix(name, err)
	}
	return out.Commit()
}

// prefix names the input in an error unless the error already does.
func prefix(name string, err error) error {
	if strings.Contains(err.Error(), name) {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// regularFile returns r as an *os.File when it is a regular file (a redirection).
func regularFile(r io.Reader) (*os.File, bool) {
	f, ok := r.(*os.File)
	if !ok {
		return nil, false
	}
	st, err := f.Stat()
	return f, err == nil && st.Mode().IsRegular()
}

// ExportCmd exports SafeTensors.
type ExportCmd struct {
	cli.InputFlag   `set:"input_help=APR (or aprender) model file, or '-' for stdin (streamed when its tensor table lists the tensors in the output's order, else spooled to a temporary file: SafeTensors needs every tensor's shape before the data)."`
	Output          string `short:"o" placeholder:"PATH" help:"Write to FILE (atomically) instead of stdout. A directory (existing, ending in '/', or with --shard-size) gets a Hugging Face checkpoint: model.safetensors or shards and index, plus the config and tokenizer files kept at import."`
	ShardSize       string `placeholder:"SIZE" aliases:"max-shard-size" help:"Write a sharded checkpoint to -o DIR with shards of at most SIZE (5GB = 5*10^9 bytes, 500MB, 2GiB = 2*2^30, or bytes), split as save_pretrained(max_shard_size=SIZE) splits them (huggingface_hub's rule); --max-shard-size is the same flag, in transformers' spelling."`
	DType           string `name:"dtype" default:"auto" enum:"auto,f32,f16,bf16,f64" help:"Dtype for quantized tensors, which are dequantized: auto (their dtype before import when known, else f32), f32, f16, bf16 or f64. Other tensors keep their dtype."`
	cli.TempDirFlag `set:"temp_dir_help=Where to spool a piped input that cannot be streamed (default: beside the output file, else $TMPDIR)."`
}

// Run exports.
func (c *ExportCmd) Run(env *cli.Env) error {
	opts := stconv.ExportOptions{TempDir: c.TempDir}
	opts.Spooling = func(why string) { env.Notef("%s", why) }
	if c.DType != "auto" {
		d, err := dtype.Parse(strings.ToUpper(c.DType))
		if err != nil {
			return cli.Usagef("%v", err)
		}
		opts.DType = d
	}
	dirOut := false
	if c.ShardSize != "" {
		n, err := ParseSize(c.ShardSize)
		if err != nil {
			return cli.Usagef("--shard-size: %v", err)
		}
		opts.ShardSize = n
		dirOut = true
	}
	toStdout := c.Output == "" || c.Output == "-"
	if !toStdout && (strings.HasSuffix(c.Output, "/") || isDir(c.Output)) {
		dirOut = true
	}
	if dirOut && toStdout {
		return cli.Usagef("--shard-size writes a checkpoint directory: give it with -o DIR")
	}
	if opts.TempDir == "" && !toStdout && !dirOut {
		opts.TempDir = filepath.Dir(c.Output)
	}
	src, name, err := openSource(env, c.Input)
	if err != nil {
		return prefix(name, err)
	}
	defer src.Close()
	m := env.Meter("exporting", false, 0)
	defer m.Done()
	if dirOut {
		if err := stconv.ExportDir(c.Output, src, opts); err != nil {
			return prefix(name, err)
		}
		return nil
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	m.Probe(out.Size)
	if err := stconv.Export(out.Writer, src, opts); err != nil {
		return prefix(name, err)
	}
	m.Done()
	if stconv.HasFiles(src.Header()) {
		env.Notef("the config and tokenizer files kept in the metadata are not written to a single file; export to a directory (-o DIR/) to restore them")
	}
	return out.Commit()
}

func openSource(env *cli.Env, in string) (*stconv.Source, string, error) {
	if in != "-" && in != "" {
		src, err := stconv.OpenSource(in)
		return src, in, err
	}
	if f, ok := env.Stdin.(*os.File); ok {
		src, err := stconv.FileSource(f)
		return src, "stdin", err
	}
	s, err := apr.OpenStream(env.Stdin)
	if err != nil {
		return nil, "stdin", err
	}
	return stconv.StreamSource(s), "stdin", nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// ParseSize reads a byte count as Hugging Face's max_shard_size: an integer, or a
// number with a unit: KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers
// of 1024); case does not matter. With a decimal unit it is huggingface_hub's
// parse_size_to_int, which save_pretrained uses: the number (a decimal fraction
// too) times the unit, truncated ("0.5GB" is 500000000). huggingface_hub knows no
// binary units; they are transformers' older convert_file_size_to_int's ("2GiB" is
// 2*2^30), and a bare integer is the int that save_pretrained also takes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := 1.0
	upper := strings.ToUpper(t)
	for _, u := range units {
		if strings.HasSuffix(upper, u.suffix) {
			mult, t = u.mult, strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || v*mult >= 1<<62 { // !(v > 0): NaN too
		return 0, errors.New("expected a positive size such as 5GB, 500MB, 2GiB or 1000000")
	}
	return int64(v * mult), nil
}

// Package ggufcmd is the command line of apr-gguf, shared by apr-gguf (subcommands
// import and export) and its aliases apr-gguf-import and apr-gguf-export (cli.Alias).
package ggufcmd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/llm"
)

// The programs: apr-gguf, and its commands as programs of their own.
var (
	Program = cli.Program{Name: "apr-gguf", Help: "Convert between GGUF (llama.cpp) and APR model files, byte for byte.",
		Grammar: func() any { return &grammar{} }}
	Import = cli.Alias[ImportCmd]("apr-gguf-import", importHelp)
	Export = cli.Alias[ExportCmd]("apr-gguf-export", exportHelp)
)

type grammar struct {
	cli.Globals
	Import    ImportCmd    `cmd:"" help:"GGUF to APR: every tensor, type and KV kept exactly."`
	Export    ExportCmd    `cmd:"" help:"APR to GGUF: restores an imported file byte for byte; apr models get documented keys."`
	Modelfile ModelfileCmd `cmd:"" help:"Print an Ollama Modelfile for a GGUF: FROM, its chat template as TEMPLATE, SYSTEM, PARAMETER stop."`
}

const (
	importHelp = "Import a GGUF file as an APR model: tensors pass through unchanged (every ggml type), " +
		"every KV is kept with its exact type and order (metadata key \"gguf\"), " +
		"general.name/description/license become the model's name, description and license. " +
		"A file argument records its size in the provenance (and with --digest its SHA-256); stdin streams. " +
		"The first part of a split set (NAME-00001-of-0000N.gguf, llama-gguf-split) reads the whole set, as the merged file."
	exportHelp = "Export an APR model as GGUF. A file imported from GGUF comes back byte for byte; " +
		"apr's own models (LinearRegression, ...) get general.architecture \"apr_<type>\" and their config as typed keys. " +
		"Everything llama.cpp would refuse is an error before any byte is written. " +
		"From an APR file the tensor list comes from its index; from stdin, the stream's tensor table (format 2.1); without one the tensors are spooled to a temporary file first. " +
		"--split-max-tensors or --split-max-size with -o PREFIX write a split set as llama-gguf-split does."
)

// ImportCmd is `apr-gguf import`.
type ImportCmd struct {
	cli.InputFlag `set:"input_help=GGUF file, or the first part of a split set ('-': stdin, streamed)."`
	cli.OutputFlag
	cli.CompressFlag
	Digest    bool `help:"Record the file's SHA-256 in the provenance (one more read of the file, hashed beside the conversion; SHA-256 runs at about 1.3 GB/s per core, slower than the import). Not for stdin."`
	ChunkSize int  `default:"1048576" placeholder:"BYTES" help:"Raw bytes per compressed chunk."`
	cli.WorkersFlag
}

// Run implements the command.
func (c *ImportCmd) Run(env *cli.Env) error {
	comp, err := c.Compression()
	if err != nil {
		return err
	}
	jopts, err := c.Options()
	if err != nil {
		return err
	}
	opts := append([]container.Option{container.WithCompression(comp), container.WithChunkSize(c.ChunkSize)}, jopts...)
	if c.Input != "-" && c.Input != "" {
		out, err := env.Create(c.Output, true)
		if err != nil {
			return err
		}
		defer out.Abort()
		m := env.Meter("importing", false, setSize(c.Input))
		m.Probe(out.Size)
		defer m.Done()
		o := ggufconv.ImportOptions{Digest: c.Digest, Set: func(parts []string) {
			env.Notef("%s is the first of a split set of %d parts; reading them all as one model (%s to %s)",
				c.Input, len(parts), filepath.Base(parts[0]), filepath.Base(parts[len(parts)-1]))
		}}
		// out.Writer: the file itself (or stdout), so that the digest can be computed
		// beside the conversion and patched in (see ggufconv.ImportFile).
		if err := ggufconv.ImportFile(out.Writer, c.Input, o, opts...); err != nil {
			return err
		}
		return out.Commit()
	}
	if c.Digest {
		return cli.Usagef("--digest needs a file input (stdin's digest is known only after the metadata has gone out)")
	}
	s, err := ggufconv.NewStream(env.Stdin, ggufconv.ImportOptions{Name: "stdin"})
	if err != nil {
		return err
	}
	defer s.Close()
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	m := env.Meter("importing", false, 0)
	defer m.Done()
	if err := ggufconv.Import(m.Writer(out), s, opts...); err != nil {
		return err
	}
	return out.Commit()
}

// ExportCmd is `apr-gguf export`.
type ExportCmd struct {
	cli.InputFlag `set:"input_help=APR (or aprender) file ('-': stdin, streamed when it has a tensor table, else spooled to a temporary file)."`
	cli.OutputFlag
	cli.TempDirFlag `set:"temp_dir_help=Where to spool tensors read from stdin without a tensor table (default: $TMPDIR or /tmp)."`
	Generic         bool   `help:"Write a Hugging Face language model that is not in llama.cpp's form (an architecture apr does not convert, or imported with --hf-layout) as a generic GGUF of its tensors, which llama.cpp cannot run, instead of refusing it."`
	SplitMaxTensors int    `placeholder:"N" nonempty:"" help:"Write a split set (-o PREFIX: PREFIX-00001-of-0000K.gguf, ...) of at most N tensors a part, as llama-gguf-split --split --split-max-tensors N does."`
	SplitMaxSize    string `placeholder:"SIZE" nonempty:"" help:"Write a split set (-o PREFIX) of at most SIZE bytes of tensor data a part: a whole number of M (10^6 bytes) or G (10^9), as llama-gguf-split --split --split-max-size SIZE does."`
}

// Run implements the command.
func (c *ExportCmd) Run(env *cli.Env) error {
	o := ggufconv.ExportOptions{TempDir: c.TempDir, Generic: c.Generic}
	o.Spooling = func(why string) { env.Notef("%s", why) }
	if c.SplitMaxTensors != 0 || c.SplitMaxSize != "" {
		return c.split(env, o)
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	m := env.Meter("exporting", false, fileSize(c.Input))
	m.Probe(out.Size)
	defer m.Done()
	if c.Input != "-" && c.Input != "" {
		// out.Writer: the file itself (or stdout), so that a regular file gets the
		// tensor data by copy_file_range.
		if err := ggufconv.ExportFile(out.Writer, c.Input, o); err != nil {
			return err
		}
		return out.Commit()
	}
	s, err := apr.OpenStream(env.Stdin)
	if err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	defer s.Close()
	if err := ggufconv.Export(out.Writer, s, o); err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	return out.Commit()
}

// split writes a split set (--split-max-tensors, --split-max-size) to -o PREFIX.
func (c *ExportCmd) split(env *cli.Env, o ggufconv.ExportOptions) error {
	so, err := SplitOptions(c.SplitMaxTensors, c.SplitMaxSize, c.Output)
	if err != nil {
		return err
	}
	if err := env.NotInputSet(c.Output); err != nil {
		return err
	}
	var res *ggufconv.SplitResult
	if c.Input != "-" && c.Input != "" {
		res, err = ggufconv.ExportSplitFile(c.Output, c.Input, o, so)
	} else {
		s, serr := apr.OpenStream(env.Stdin)
		if serr != nil {
			return fmt.Errorf("stdin: %w", serr)
		}
		defer s.Close()
		if res, err = ggufconv.ExportSplit(c.Output, s, o, so); err != nil {
			err = fmt.Errorf("stdin: %w", err)
		}
	}
	NoteSplit(env, res)
	return err
}

// SplitOptions reads the flags --split-max-tensors and --split-max-size (one of
// them given) and checks that the output is a file prefix; apr-quant takes the same
// flags.
func SplitOptions(maxTensors int, maxSize, output string) (ggufconv.SplitOptions, error) {
	var so ggufconv.SplitOptions
	switch {
	case maxTensors != 0 && maxSize != "":
		return so, cli.Usagef("--split-max-tensors and --split-max-size: give one of them, as llama-gguf-split takes one")
	case maxTensors < 0:
		return so, cli.Usagef("--split-max-tensors %d: want a positive number of tensors", maxTensors)
	case maxTensors > 0:
		so.MaxTensors = maxTensors
	default:
		n, err := ggufconv.ParseSplitSize(maxSize)
		if err != nil {
			return so, cli.Usagef("--split-max-size: %v", err)
		}
		so.MaxSize = n
	}
	if output == "" || output == "-" {
		return so, cli.Usagef("a split set is written to files: give -o PREFIX (the parts are PREFIX-00001-of-0000K.gguf, ...)")
	}
	return so, nil
}

// NoteSplit says on stderr which parts a split export wrote (res may be nil) and
// which parts of an earlier set it removed.
func NoteSplit(env *cli.Env, res *ggufconv.SplitResult) {
	if res == nil {
		return
	}
	env.Notef("wrote a split set of %d parts: %s to %s", len(res.Parts), filepath.Base(res.Parts[0]), filepath.Base(res.Parts[len(res.Parts)-1]))
	for _, p := range res.Removed {
		env.Notef("removed %s, a part of the earlier set of another part count", p)
	}
}

// ModelfileCmd is `apr-gguf modelfile`.
type ModelfileCmd struct {
	Model string `arg:"" placeholder:"MODEL.gguf" reads:"" help:"GGUF file; FROM names it as given (Ollama resolves a relative path against the Modelfile's directory)."`
	cli.OutputFlag
	Template   string `placeholder:"FILE" reads:"" help:"Use the Ollama template in FILE as TEMPLATE instead of translating the GGUF's chat template."`
	NoTemplate bool   `help:"Write no TEMPLATE (Ollama's default applies), for a chat template apr does not know."`
}

// MaxTemplate caps the --template file of `apr-gguf modelfile`: a template is text a
// person writes, and the longest chat templates are tens of KiB.
const MaxTemplate = 1 << 20

// Run implements the command.
func (c *ModelfileCmd) Run(env *cli.Env) error {
	if c.Template != "" && c.NoTemplate {
		return cli.Usagef("--template and --no-template exclude each other")
	}
	if c.Model == "-" || c.Model == "" {
		return cli.Usagef("a Modelfile names its GGUF by path: give a file, not stdin")
	}
	o := llm.ModelfileOptions{From: c.Model, NoTemplate: c.NoTemplate}
	if c.Template != "" {
		t, err := cli.ReadSmallFile(c.Template, MaxTemplate)
		if err != nil {
			return err
		}
		if len(t) == 0 {
			return fmt.Errorf("%s: empty template file", c.Template)
		}
		o.Template = string(t)
	}
	f, err := gguf.Open(c.Model)
	if err != nil {
		return err
	}
	defer f.Close()
	mf, err := llm.OllamaModelfile(&f.Header, o)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Model, err)
	}
	text, err := mf.Text()
	if err != nil {
		return fmt.Errorf("%s: %w", c.Model, err)
	}
	if mf.Chat != nil {
		env.Notef("chat template: %s (%s)", mf.Chat.Family, mf.Chat.Source)
		for _, n := range mf.Chat.Notes {
			env.Notef("%s", n)
		}
	}
	out, err := env.Create(c.Output, false)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := out.Write(text); err != nil {
		return err
	}
	return out.Commit()
}

// setSize is the size of the file path, or of the split set it is the first part of
// by its name (PREFIX-00001-of-NNNNN.gguf: the parts that exist), for progress.
func setSize(path string) int64 {
	n := fileSize(path)
	var count int
	if _, err := fmt.Sscanf(filepath.Base(path)[max(0, len(filepath.Base(path))-20):], "-00001-of-%05d.gguf", &count); err != nil || count < 2 {
		return n
	}
	parts, err := ggufconv.SplitParts(path, count)
	if err != nil {
		return n
	}
	for _, p := range parts[1:] {
		n += fileSize(p)
	}
	return n
}

// fileSize is the size of the regular file path, or 0 (unknown, e.g. stdin).
func fileSize(path string) int64 {
	if path == "-" || path == "" {
		return 0
	}
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return st.Size()
	}
	return 0
}

// Package cli is the shared voice and plumbing of apr's programs: how they parse
// flags, report errors ("apr-NAME: message", lower case, no trailing period, an
// optional hint line), open inputs, and create outputs that never leave a partial
// file behind. Every program's main is a thin call to Main with its own run
// function, which tests call in-process.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/atomicfile"
)

// Exit codes of every program.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// Env is a program's outside world.
type Env struct {
	Name   string // program name, e.g. "apr-encode"
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Errorf prints "NAME: message" on stderr.
func (e *Env) Errorf(format string, args ...any) {
	fmt.Fprintf(e.Stderr, "%s: %s\n", e.Name, strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
}

// Hintf prints an indented hint line after an error.
func (e *Env) Hintf(format string, args ...any) {
	fmt.Fprintf(e.Stderr, "%s: hint: %s\n", e.Name, fmt.Sprintf(format, args...))
}

// Infof prints a report line on stderr.
func (e *Env) Infof(format string, args ...any) {
	fmt.Fprintf(e.Stderr, format+"\n", args...)
}

// UsageError marks an error as a usage mistake (exit 2).
type UsageError struct{ Msg string }

func (u *UsageError) Error() string { return u.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error { return &UsageError{fmt.Sprintf(format, args...)} }

type exitCode int

// Run parses args into grammar (a kong struct whose commands have a
// Run(*cli.Env) error method) and runs the selected command. It returns the exit code.
func Run(env *Env, description string, grammar any, args []string, opts ...kong.Option) (code int) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(exitCode)
			if !ok {
				panic(r)
			}
			code = int(c)
		}
	}()
	opts = append([]kong.Option{
		kong.Name(env.Name),
		kong.Description(description),
		kong.Writers(env.Stdout, env.Stderr),
		kong.Exit(func(c int) { panic(exitCode(c)) }),
		kong.Vars{"version": env.Name + " " + apr.Version},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	}, opts...)
	parser, err := kong.New(grammar, opts...)
	if err != nil {
		env.Errorf("internal error: %v", err)
		return ExitFail
	}
	ctx, err := parser.Parse(args)
	if err != nil {
		env.Errorf("%v", err)
		env.Hintf("run '%s --help' for usage", env.Name)
		return ExitUsage
	}
	if err := ctx.Run(env); err != nil {
		var u *UsageError
		if errors.As(err, &u) {
			env.Errorf("%v", err)
			env.Hintf("run '%s --help' for usage", env.Name)
			return ExitUsage
		}
		var silent *SilentError
		if !errors.As(err, &silent) {
			env.Errorf("%v", err)
		}
		return ExitFail
	}
	return ExitOK
}

// SilentError fails the program without printing (the command printed its own report).
type SilentError struct{}

func (*SilentError) Error() string { return "failed" }

// VersionFlag is embedded in every program's grammar.
type VersionFlag struct {
	Version kong.VersionFlag `help:"Print the version and exit."`
}

// Main runs a program's run function with the process's streams and exits.
func Main(run func(args []string, stdin io.Reader, stdout, stderr io.Writer) int) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(MemoryLimit)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// MemoryLimit is the programs' soft memory limit (GOMEMLIMIT overrides it). The
// programs keep a bounded working set whatever the model's size, but by default Go's
// collector lets the heap grow to twice what is live before it collects, and pooled
// buffers and zstd-max's encoder tables (about 80 MiB) are live: with the limit the
// heap is collected before it passes 80 MiB, which keeps peak RSS under 100 MiB.
const MemoryLimit = 80 << 20

// Input opens path for reading; "" and "-" mean stdin.
func (e *Env) Input(path string) (io.ReadCloser, string, error) {
	if path == "" || path == "-" {
		return io.NopCloser(e.Stdin), "stdin", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, path, err
	}
	return f, path, nil
}

// Output is where a program writes its result: a pending file renamed into place on
// Commit, or stdout.
type Output struct {
	io.Writer
	Name string
	file *atomicfile.File
}

// Create opens the output: path "" or "-" is stdout, refused when stdout is a terminal
// and binary is true (model bytes would garble it).
func (e *Env) Create(path string, binary bool) (*Output, error) {
	if path == "" || path == "-" {
		if binary && IsTerminal(e.Stdout) {
			return nil, Usagef("refusing to write binary model data to a terminal; use -o FILE or a pipe")
		}
		return &Output{Writer: e.Stdout, Name: "stdout"}, nil
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, err
	}
	return &Output{Writer: f, Name: path, file: f}, nil
}

// Commit renames a file output into place.
func (o *Output) Commit() error {
	if o.file == nil {
		return nil
	}
	return o.file.Commit()
}

// Abort removes a file output that was not committed; callers defer it.
func (o *Output) Abort() {
	if o.file != nil {
		o.file.Abort()
	}
}

// IsTerminal reports whether w is a terminal. A character device is not enough:
// /dev/null is one too, and writing model bytes there is fine.
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isTerminal(f)
}

// Package cli is the shared voice and plumbing of apr's programs (docs/CLI.md): the
// flags every program spells the same way (flags.go), deprecated spellings
// (deprecate.go), how errors are reported ("apr-NAME: message", lower case, no
// trailing period, an optional hint line) with exit codes 0, 1 and 2, -q, the
// progress meter (progress.go), the terminal (term.go), passphrases, inputs, and
// outputs that never leave a partial file behind. Every program is a Program whose
// Run tests call in-process; alias programs (apr-st-import, ...) are made by Alias.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"github.com/alecthomas/kong"

	"github.com/apr-go/apr/kernels"
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
	// Quiet (-q) silences warnings, notes, reports and progress on stderr; errors
	// still print. ForceProgress (--progress) shows progress on a non-terminal.
	Quiet, ForceProgress bool

	meter  atomic.Pointer[Meter] // the meter on stderr, if any
	inputs []input               // the files the run reads, which no output may replace (sameinput.go)
}

// write prints on stderr, clearing a meter's line first.
func (e *Env) write(format string, args ...any) {
	if m := e.meter.Load(); m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.clear()
	}
	fmt.Fprintf(e.Stderr, format, args...)
}

// Warnf prints "NAME: warning: message" on stderr, unless -q.
func (e *Env) Warnf(format string, args ...any) {
	if !e.Quiet {
		e.Errorf("warning: "+format, args...)
	}
}

// Notef prints "NAME: note: message" on stderr, unless -q.
func (e *Env) Notef(format string, args ...any) {
	if !e.Quiet {
		e.Errorf("note: "+format, args...)
	}
}

// Errorf prints "NAME: message" on stderr.
func (e *Env) Errorf(format string, args ...any) {
	e.write("%s: %s\n", e.Name, strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
}

// Hintf prints an indented hint line after an error.
func (e *Env) Hintf(format string, args ...any) {
	e.write("%s: hint: %s\n", e.Name, fmt.Sprintf(format, args...))
}

// Infof prints a report line on stderr, unless -q.
func (e *Env) Infof(format string, args ...any) {
	if !e.Quiet {
		e.write(format+"\n", args...)
	}
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
		kong.Vars{"version": env.Name + " " + apr.Version + " (" + kernelsText() + ")"},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.KindMapper(reflect.String, rawString{}),
	}, opts...)
	parser, err := kong.New(grammar, opts...)
	if err != nil {
		env.Errorf("internal error: %v", err)
		return ExitFail
	}
	if ok, code := genDoc(env, description, parser.Model, args); ok {
		return code
	}
	ctx, err := parser.Parse(args)
	if err == nil {
		err = applyGlobals(env, ctx)
	}
	if err != nil {
		env.Errorf("%v", err)
		env.Hintf("run '%s --help' for usage", env.Name)
		return ExitUsage
	}
	if IsTerminal(env.Stdin) {
		env.Stdin = terminalStdin{env.Name}
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

// terminalStdin stands for a stdin that is a terminal: a program that reads its model
// from stdin would otherwise wait silently for a person to type one. As zstd does, the
// first read is a usage error that says what is expected.
type terminalStdin struct{ name string }

func (t terminalStdin) Read([]byte) (int, error) {
	return 0, Usagef("stdin is a terminal: give %s a FILE argument, or pipe or redirect a model into it", t.name)
}

// kernelsText says which kernels the build runs, since a plain `go install` (without
// GOEXPERIMENT=simd) gets the pure-Go ones, several times slower (make build and make
// install set it).
func kernelsText() string {
	if fp := kernels.FastPath(); fp != "" {
		return "kernels: " + fp
	}
	return "kernels: pure Go (the purego build, or a CPU without AVX2 and F16C)"
}

// SilentError fails the program without printing (the command printed its own report).
type SilentError struct{}

func (*SilentError) Error() string { return "failed" }

// Globals are the flags of every program, embedded in each grammar's root.
type Globals struct {
	Version  kong.VersionFlag `help:"Print the version and exit."`
	Quiet    bool             `short:"q" help:"Print no warnings, notes, reports or progress on stderr (errors only); for verify, nothing at all: use the exit status."`
	Progress bool             `help:"Show progress on stderr even when it is not a terminal."`
}

// applyGlobals reads -q and --progress into env and applies deprecated spellings.
func applyGlobals(env *Env, ctx *kong.Context) error {
	for _, f := range ctx.Flags() {
		switch f.Name {
		case "quiet":
			env.Quiet = f.Target.Bool()
		case "progress":
			env.ForceProgress = f.Target.Bool()
		}
	}
	if err := checkEmptyNames(ctx); err != nil {
		return err
	}
	env.readsTagged(ctx)
	return applyDeprecated(env, ctx)
}

// nameFlags are the flags that name a file, a directory, a key or a variable.
var nameFlags = map[string]bool{
	"output": true, "temp-dir": true, "tmp-dir": true, "identity": true, "recipient": true,
	"key": true, "pubkey": true, "sig-file": true, "passphrase-file": true, "passphrase-env": true,
	"key-passphrase-file": true, "key-passphrase-env": true, "password-file": true, "password-env": true,
	"imatrix": true, "tensor-type-file": true, "stats-file": true,
	// apr-sign oms, spelled as model_signing spells them.
	"signature": true, "private-key": true, "public-key": true, "signing-certificate": true,
	"certificate-chain": true, "ignore-paths": true, "trust-config": true,
}

// checkEmptyNames refuses a naming flag given as "": -o "$OUT" with OUT unset would
// otherwise write the model to stdout, and --temp-dir "" spool to $TMPDIR. A flag
// tagged nonempty:"" is refused given as "" or 0 too: its zero value would mean "not
// given" (apr-quant --prune-layers "" would prune nothing, --split-max-tensors 0 write
// no split set).
func checkEmptyNames(ctx *kong.Context) error {
	given := map[*kong.Flag]int{}
	for _, p := range ctx.Path {
		if p.Flag != nil && (nameFlags[p.Flag.Name] || p.Flag.Tag.Has("nonempty")) {
			given[p.Flag]++
		}
	}
	for f, n := range given {
		v := f.Target
		if v.Kind() == reflect.Int && v.Int() == 0 {
			return Usagef("--%s 0: give a number of 1 or more", f.Name)
		}
		empty := v.Kind() == reflect.String && v.String() == ""
		if v.Kind() == reflect.Slice {
			// kong makes no element of "": a flag given more often than it has
			// elements was given empty.
			empty = v.Len() < n
			for i := range v.Len() {
				empty = empty || v.Index(i).Kind() == reflect.String && v.Index(i).String() == ""
			}
		}
		switch {
		case empty && nameFlags[f.Name]:
			return Usagef("--%s is empty: give a name (an unset variable?)", f.Name)
		case empty:
			return Usagef("--%s is empty: give a value (an unset variable?)", f.Name)
		}
	}
	return nil
}

// Program is one program: its name, its description and its kong grammar (a fresh
// struct per run, with Globals embedded and Run(*Env) error methods on its commands).
type Program struct {
	Name, Help string
	Grammar    func() any
}

// Run runs the program in-process and returns its exit code.
func (p Program) Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &Env{Name: p.Name, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	return Run(env, p.Help, p.Grammar(), args)
}

// Alias is the program NAME that is one command of another program (apr-st-import
// is apr-st's import): its grammar is the command's flags and arguments at the top.
// T is the command's struct type; *T has the Run method.
func Alias[T any, PT interface {
	*T
	Run(*Env) error
}](name, help string) Program {
	return Program{Name: name, Help: help, Grammar: func() any { return &alias[T, PT]{} }}
}

type alias[T any, PT interface {
	*T
	Run(*Env) error
}] struct {
	Globals
	Cmd T `embed:""`
}

func (a *alias[T, PT]) Run(env *Env) error { return PT(&a.Cmd).Run(env) }

// Main runs a program's run function with the process's streams and exits; a signal
// that stops it removes its temporary files first (exitOnSignal).
func Main(run func(args []string, stdin io.Reader, stdout, stderr io.Writer) int) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(MemoryLimit)
	}
	exitOnSignal()
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
	e.Reads(path)
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
// and binary is true (model bytes would garble it); a file that is one of the run's
// inputs is refused (NotInput).
func (e *Env) Create(path string, binary bool) (*Output, error) {
	if path == "" || path == "-" {
		if binary && IsTerminal(e.Stdout) {
			return nil, Usagef("refusing to write binary model data to a terminal; use -o FILE or a pipe")
		}
		if wasClosed(e.Stdout) {
			e.Warnf("stdout looks closed (>&-: the null device, opened read-write), so the output is discarded; use -o FILE or a pipe to keep it")
		}
		return &Output{Writer: e.Stdout, Name: "stdout"}, nil
	}
	if err := e.NotInput(path); err != nil {
		return nil, err
	}
	f, err := atomicfile.Create(path, 0o666)
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

package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"golang.org/x/term"
)

// The terminal layer: whether a stream is a terminal, its width, and a password typed
// with echo off. It is golang.org/x/term, so it works wherever that does (Linux, the
// BSDs, macOS, Windows); under wasm nothing is a terminal.

// IsTerminal reports whether w is a terminal. A character device is not enough:
// /dev/null is one too, and writing model bytes there is fine.
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// termWidth is the width of the terminal w, or 80 when it is not one or cannot say.
func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 80
}

// ttyPaths are the terminal's input and output devices, opened directly because
// stdin and stdout carry the model (as age does).
func ttyPaths() (in, out string) {
	if runtime.GOOS == "windows" {
		return "CONIN$", "CONOUT$"
	}
	return "/dev/tty", "/dev/tty"
}

// readPasswordTTY asks for a password on the terminal with echo off.
func readPasswordTTY(prompt string) ([]byte, error) {
	inPath, outPath := ttyPaths()
	in, err := os.OpenFile(inPath, os.O_RDWR, 0)
	if err != nil {
		return nil, ErrNoTerminal
	}
	defer in.Close()
	if !term.IsTerminal(int(in.Fd())) {
		return nil, ErrNoTerminal
	}
	out := in
	if outPath != inPath {
		if out, err = os.OpenFile(outPath, os.O_WRONLY, 0); err != nil {
			return nil, ErrNoTerminal
		}
		defer out.Close()
	}
	fmt.Fprint(out, prompt)
	defer fmt.Fprintln(out)
	pw, err := term.ReadPassword(int(in.Fd()))
	if err != nil {
		return nil, fmt.Errorf("reading the passphrase: %w", err)
	}
	if len(pw) > 4096 {
		return nil, errors.New("passphrase longer than 4096 bytes")
	}
	return pw, nil
}

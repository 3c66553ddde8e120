package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrNoTerminal is returned by ReadPassword when the passphrase is to be typed but
// there is no terminal to ask on (a CI job, a container without a tty).
var ErrNoTerminal = errors.New("no terminal to ask for the passphrase on")

// PasswordSource says where a passphrase comes from: the first line of File, all of
// the environment variable Env, or else a line typed on the terminal. FileFlag and
// EnvFlag are the flags that set them, named in errors.
type PasswordSource struct {
	File, Env         string
	FileFlag, EnvFlag string
}

// ReadPassword reads a passphrase from src; on a terminal it asks with prompt, twice
// when confirm is set. An empty passphrase is refused.
func ReadPassword(src PasswordSource, prompt string, confirm bool) ([]byte, error) {
	pw, err := GivenPassword(src)
	if err != nil {
		return nil, err
	}
	if pw == nil {
		if pw, err = askPassword(prompt, confirm); errors.Is(err, ErrNoTerminal) {
			return nil, fmt.Errorf("%w; give %s FILE or %s VAR", err, src.FileFlag, src.EnvFlag)
		} else if err != nil {
			return nil, err
		}
	}
	if len(pw) == 0 {
		return nil, errors.New("empty passphrase")
	}
	return pw, nil
}

// GivenPassword returns the passphrase src names by a file or an environment variable,
// or nil when it names neither (the terminal is not asked).
func GivenPassword(src PasswordSource) ([]byte, error) {
	switch {
	case src.File != "":
		b, err := ReadSmallFile(src.File, 64<<10)
		if err != nil {
			return nil, err
		}
		line, _, _ := strings.Cut(string(b), "\n")
		return []byte(strings.TrimSuffix(line, "\r")), nil
	case src.Env != "":
		v, ok := os.LookupEnv(src.Env)
		if !ok {
			return nil, Usagef("environment variable %s is not set", src.Env)
		}
		return []byte(v), nil
	}
	return nil, nil
}

func askPassword(prompt string, confirm bool) ([]byte, error) {
	pw, err := readPasswordTTY(prompt)
	if err != nil || !confirm {
		return pw, err
	}
	again, err := readPasswordTTY("Confirm " + strings.ToLower(prompt[:1]) + prompt[1:])
	if err != nil {
		return nil, err
	}
	if string(again) != string(pw) {
		return nil, errors.New("the passphrases do not match")
	}
	return pw, nil
}

// ReadSmallFile reads a key, recipient or passphrase file, refusing one larger than
// limit bytes (such a file is not what the flag wants, and is not read into memory).
func ReadSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}

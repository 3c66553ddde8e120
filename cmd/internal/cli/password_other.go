//go:build !linux

package cli

// readPasswordTTY: terminal prompts are implemented for Linux only; elsewhere the
// password comes from a file or an environment variable.
func readPasswordTTY(string) ([]byte, error) { return nil, ErrNoTerminal }

//go:build !linux

package main

// readPasswordTTY: terminal prompts are implemented for Linux only; elsewhere the
// password comes from --password-file or --password-env.
func readPasswordTTY(string) ([]byte, error) { return nil, errNoTerminal }

package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/seal"
)

type keygenCmd struct {
	Output string `short:"o" placeholder:"NAME" help:"Write the identity to NAME (mode 0600, never overwritten) and the recipient to NAME.pub; without it, the identity goes to stdout."`
}

func (c *keygenCmd) Run(env *cli.Env) error {
	id, err := seal.GenerateX25519Identity()
	if err != nil {
		return err
	}
	rcpt := id.Recipient().String()
	text := fmt.Sprintf("# created: %s\n# public key: %s\n%s\n", time.Now().UTC().Format(time.RFC3339), rcpt, id)
	if c.Output == "" || c.Output == "-" {
		if _, err := io.WriteString(env.Stdout, text); err != nil {
			return err
		}
		env.Infof("Public key: %s", rcpt)
		return nil
	}
	if err := writeNew(c.Output, text, 0o600); err != nil {
		return err
	}
	if err := writeNew(c.Output+".pub", rcpt+"\n", 0o666); err != nil {
		os.Remove(c.Output)
		return err
	}
	_, err = fmt.Fprintln(env.Stdout, rcpt)
	return err
}

// writeNew creates path with perm, refusing to overwrite, and removes it again if
// writing fails.
func writeNew(path, text string, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// apr-seal seals (encrypts) the tensor data of an APR model for X25519 recipients or
// a password, and unseals it. Header, metadata and index stay readable (apr-decode
// inspect shows who can open a sealed file) and are authenticated.
//
//	apr-seal keygen -o alice.key                    # writes alice.key (0600) and alice.key.pub
//	apr-seal -r age1... < model.apr > sealed.apr     # or -r alice.key.pub
//	apr-seal -d -i alice.key < sealed.apr > model.apr
//	apr-seal --passphrase-file pw.txt model.apr -o sealed.apr
//	apr-seal unseal --passphrase-env MODEL_PW sealed.apr -o model.apr
package main

import (
	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/seal"
)

func main() { cli.Main(run) }

var run = cli.Program{Name: "apr-seal", Help: "Seal (encrypt) an APR model's tensor data for X25519 recipients or a passphrase, or unseal it.",
	Grammar: func() any { return &sealCLI{} }}.Run

type sealCLI struct {
	cli.Globals
	Seal   sealCmd   `cmd:"" default:"withargs" help:"Seal a model (the default command); with -d, unseal it."`
	Unseal unsealCmd `cmd:"" help:"Unseal a model with an identity file (-i) or its passphrase."`
	Keygen keygenCmd `cmd:"" help:"Write a new X25519 identity (age's format) and its recipient."`
}

// ioFlags are the input, output and encoding of both directions.
type ioFlags struct {
	cli.InputFlag `set:"input_help=APR (or aprender) file to read ('-': stdin)."`
	cli.OutputFlag
	Compress string `short:"c" default:"auto" enum:"auto,none,zstd,zstd-max,lz4" help:"Compression of the output's tensor data, applied before sealing: auto keeps the input's (default: auto)."`
	cli.WorkersFlag
}

// passFlags say where a passphrase comes from; -p is its deprecated spelling.
type passFlags struct {
	cli.PassphraseFlags
	OldP bool `name:"deprecated-p" short:"p" hidden:"" deprecated:"-p for a passphrase" use:"passphrase"`
}

type sealCmd struct {
	ioFlags
	cli.RecipientFlag
	passFlags
	Decrypt          bool `short:"d" help:"Unseal instead (as 'apr-seal unseal')."`
	cli.IdentityFlag `set:"identity_help=With -d: identity file (AGE-SECRET-KEY-1... lines, as apr-seal keygen and age-keygen write)."`
	Shuffle          bool   `help:"Byte-shuffle float and integer tensors before compression."`
	Argon2T          uint32 `name:"argon2-time" default:"3" hidden:"" help:"Argon2id passes."`
	Argon2M          uint32 `name:"argon2-memory" default:"65536" hidden:"" help:"Argon2id memory in KiB."`
	Argon2P          uint8  `name:"argon2-threads" default:"4" hidden:"" help:"Argon2id lanes."`
}

func (c *sealCmd) Run(env *cli.Env) error {
	if c.Decrypt {
		if len(c.Recipient) > 0 {
			return cli.Usagef("-d unseals: -r does not apply")
		}
		u := unsealCmd{ioFlags: c.ioFlags, IdentityFlag: c.IdentityFlag, passFlags: c.passFlags}
		return u.Run(env)
	}
	if len(c.Identity) > 0 {
		return cli.Usagef("-i is for unsealing (-d); to seal for a key, give its recipient with -r")
	}
	rs, err := c.Recipients()
	if err != nil {
		return err
	}
	switch {
	case c.Wanted() && len(rs) > 0:
		return cli.Usagef("seal for a passphrase or for recipients, not both (anyone holding a key could re-seal a passphrase file)")
	case c.Wanted():
		pw, err := c.Read("Passphrase: ", true)
		if err != nil {
			return err
		}
		r, err := seal.NewPasswordRecipient(pw, seal.Argon2Params{Time: c.Argon2T, MemoryKiB: c.Argon2M, Threads: c.Argon2P})
		if err != nil {
			return cli.Usagef("%v", err)
		}
		rs = append(rs, r)
	case len(rs) == 0:
		return cli.Usagef("nothing to seal for: give -r RECIPIENT or --passphrase")
	}
	src, closeIn, err := openInput(env, c.Input, nil)
	if err != nil {
		return err
	}
	defer closeIn()
	src, opts, err := c.encoding(src, c.Shuffle)
	if err != nil {
		return err
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if err := apr.SealStream(out, src, rs, opts...); err != nil {
		return err
	}
	return out.Commit()
}

type unsealCmd struct {
	ioFlags
	cli.IdentityFlag
	passFlags
}

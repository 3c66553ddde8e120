package main

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/cleanup"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/sign"
)

// modelIO opens a command's input and output and the unsealer of a sealed input; the
// caller closes in and aborts out (a no-op after Commit).
func (s *sealedFlags) modelIO(env *cli.Env, input, output string) (in io.ReadCloser, name string, out *cli.Output, u container.Unsealer, err error) {
	if u, err = s.unsealer(); err != nil {
		return nil, "", nil, nil, err
	}
	if in, name, err = env.Input(input); err != nil {
		return nil, "", nil, nil, err
	}
	if out, err = env.Create(output, true); err != nil {
		in.Close()
		return nil, "", nil, nil, err
	}
	return in, name, out, u, nil
}

// unsealer returns nil when no identity and no passphrase was asked for: a sealed
// input is then refused with a message saying what to give.
func (s *sealedFlags) unsealer() (container.Unsealer, error) {
	return cli.Unsealer(&s.IdentityFlag, &s.PassphraseFlags)
}

func (c *verifyCmd) Run(env *cli.Env) error {
	keys, err := c.Keys()
	if err != nil {
		return err
	}
	if c.Minisign {
		return c.minisign(env, keys)
	}
	if c.SigFile != "" {
		return cli.Usagef("-x is the signature file of --minisign")
	}
	if c.Pass && c.Output != "" && c.Output != "-" {
		// Two destinations for one model: refused rather than one silently ignored.
		return cli.Usagef("--pass writes the verified model to stdout and -o FILE to FILE: give one (--pass is -o -)")
	}
	in, name, err := env.Input(c.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	u, err := c.unsealer()
	if err != nil {
		return err
	}
	p := apr.Policy{Signers: keys, Unsealer: u}
	if c.License {
		p = apr.Policy{LicenseIssuers: keys, Unsealer: u}
	}
	report := env.Stdout
	var src io.Reader = in
	var release func() error
	switch {
	case c.Output != "" && c.Output != "-":
		// The atomic output file is the spool: committed only after verification.
		out, err := env.Create(c.Output, true)
		if err != nil {
			return err
		}
		defer out.Abort()
		bw := bufio.NewWriterSize(out, 1<<20)
		src = io.TeeReader(in, bw)
		release = func() error {
			if err := bw.Flush(); err != nil {
				return err
			}
			return out.Commit()
		}
	case c.Pass || c.Output == "-":
		report = env.Stderr
		out, err := env.Create("-", true)
		if err != nil {
			return err
		}
		spool, removeSpool, err := cleanup.CreateTemp("", "apr-sign-verify-*.apr")
		if err != nil {
			return fmt.Errorf("spool file for --pass: %w", err)
		}
		defer removeSpool()
		bw := bufio.NewWriterSize(spool, 1<<20)
		src = io.TeeReader(in, bw)
		release = func() error {
			if err := bw.Flush(); err != nil {
				return fmt.Errorf("spool file: %w", err)
			}
			if _, err := spool.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("spool file: %w", err)
			}
			_, err := io.Copy(out, spool)
			return err
		}
	}
	v, err := apr.Verify(src, p)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if release != nil {
		if err := release(); err != nil {
			return err
		}
	}
	if !env.Quiet {
		if c.License {
			l := v.License.License
			exp := "never expires"
			if !l.ExpiresAt.IsZero() {
				exp = "expires " + l.ExpiresAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(report, "%s: valid license for %q, tier %q, %d seats, issued %s, %s, by issuer key %s\n",
				name, l.Licensee, l.Tier, l.Seats, l.IssuedAt.UTC().Format(time.RFC3339), exp, v.License.Issuer.ID)
		} else {
			s := v.Signer.Signature
			fmt.Fprintf(report, "%s: good signature by key %s (fingerprint %s), signed %s, comment %q; %d tensors, content sha256:%x\n",
				name, v.Signer.Key.ID, v.Signer.Key.Fingerprint(), s.Time.UTC().Format(time.RFC3339), s.Comment, v.Tensors, v.Digest)
		}
	}
	return nil
}

func (c *verifyCmd) minisign(env *cli.Env, keys []*sign.PublicKey) error {
	if c.Pass || c.Output != "" || c.License {
		return cli.Usagef("--minisign checks a file; it does not combine with --pass, -o or --license")
	}
	if c.Input == "-" && c.SigFile == "" {
		return cli.Usagef("checking stdin with --minisign needs -x SIGFILE")
	}
	sigPath := c.SigFile
	if sigPath == "" {
		sigPath = c.Input + ".minisig"
	}
	sig, err := readSmall(sigPath)
	if err != nil {
		return err
	}
	in, name, err := env.Input(c.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	ms, key, err := sign.VerifyMinisign(bufio.NewReaderSize(in, 1<<20), sig, keys)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !env.Quiet {
		fmt.Fprintf(env.Stdout, "%s: good minisign signature by key %s, trusted comment %q\n", name, key.ID, ms.TrustedComment)
	}
	return nil
}

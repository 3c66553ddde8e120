package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/atomicfile"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/sign"
)

func (c *signCmd) Run(env *cli.Env) error {
	if c.Minisign && !c.Detached {
		return cli.Usagef("--minisign is the format of --detached signatures; add --detached")
	}
	if c.Detached && !c.Minisign {
		return cli.Usagef("--detached needs a format: add --minisign")
	}
	key, err := c.Load(env, &c.PassphraseFlags)
	if err != nil {
		return err
	}
	if c.Detached {
		return c.detached(env, key)
	}
	in, name, out, u, err := c.modelIO(env, c.Input, c.Output)
	if err != nil {
		return err
	}
	defer in.Close()
	defer out.Abort()
	sig, err := apr.SignStream(out, in, key, apr.WithComment(c.Comment), apr.WithSealedInput(u))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := out.Commit(); err != nil {
		return err
	}
	env.Infof("%s: signed by key %s at %s", name, sig.KeyID, sig.Time.UTC().Format(time.RFC3339))
	return nil
}

func (c *signCmd) detached(env *cli.Env, key *sign.PrivateKey) error {
	sigPath := c.Output
	if sigPath == "" {
		if c.Input == "-" {
			return cli.Usagef("signing stdin with --detached needs -o SIGFILE")
		}
		sigPath = c.Input + ".minisig"
	}
	if err := env.NotInput(sigPath); err != nil { // written by atomicfile, not env.Create
		return err
	}
	in, name, err := env.Input(c.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	comment := c.Comment
	if comment == "" {
		t, err := signTime()
		if err != nil {
			return err
		}
		comment = fmt.Sprintf("timestamp:%d\tfile:%s\thashed", t.Unix(), filepath.Base(name))
	}
	sig, err := sign.SignMinisign(bufio.NewReaderSize(in, 1<<20), key, comment, "signature from apr-sign secret key "+key.ID.String())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := atomicfile.WriteFile(sigPath, sig, 0o666); err != nil {
		return err
	}
	env.Infof("%s: detached minisign signature by key %s written to %s", name, key.ID, sigPath)
	return nil
}

// signTime is SOURCE_DATE_EPOCH when set, else now.
func signTime() (time.Time, error) {
	s, err := container.CreatedAt()
	if err != nil {
		return time.Time{}, err
	}
	return time.Parse(time.RFC3339, s)
}

func (c *keygenCmd) Run(env *cli.Env) error {
	keyPath, pubPath := c.Output+".key", c.Output+".pub"
	if !c.Force {
		for _, p := range []string{keyPath, pubPath} {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("%s exists; use --force to overwrite it", p)
			}
		}
	}
	// Not through a symbolic link, even with --force: a link planted in a shared
	// directory would have the private key replace the file it points to.
	if fi, err := os.Lstat(keyPath); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link: a private key is not written through one (remove it first)", keyPath)
	}
	k, err := sign.GenerateKey(nil)
	if err != nil {
		return err
	}
	var priv, pub []byte
	if c.Minisign {
		if priv, err = sign.MarshalMinisignSecretKey(k, ""); err == nil {
			pub, err = sign.MarshalMinisignPublicKey(k.Public(), "")
		}
	} else {
		if priv, err = sign.MarshalPrivateKeyPEM(k); err == nil {
			pub, err = sign.MarshalPublicKeyPEM(k.Public())
		}
	}
	if err != nil {
		return err
	}
	kf, err := atomicfile.Create(keyPath, 0o600)
	if err != nil {
		return err
	}
	defer kf.Abort()
	pf, err := atomicfile.Create(pubPath, 0o666)
	if err != nil {
		return err
	}
	defer pf.Abort()
	if _, err := kf.Write(priv); err != nil {
		return err
	}
	if _, err := pf.Write(pub); err != nil {
		return err
	}
	if err := kf.Commit(); err != nil {
		return err
	}
	if err := pf.Commit(); err != nil {
		os.Remove(keyPath)
		return err
	}
	env.Infof("key id %s (fingerprint %s)\nprivate key: %s (keep it secret)\npublic key:  %s", k.ID, k.Public().Fingerprint(), keyPath, pubPath)
	return nil
}

func (c *pubkeyCmd) Run(env *cli.Env) error {
	data, err := readSmall(c.From)
	if err != nil {
		return err
	}
	pub, err := sign.ParsePublicKey(data)
	if err != nil {
		k, kerr := sign.ParsePrivateKey(data, nil)
		if kerr != nil {
			return fmt.Errorf("%s: neither a public key (%v) nor an unencrypted private key (%v)", c.From, err, kerr)
		}
		pub = k.Public()
	}
	var out []byte
	switch c.Format {
	case "pem":
		out, err = sign.MarshalPublicKeyPEM(pub)
	case "ssh":
		out, err = sign.MarshalAuthorizedKey(pub, "apr-sign "+pub.ID.String())
	default:
		out, err = sign.MarshalMinisignPublicKey(pub, "")
	}
	if err != nil {
		return err
	}
	_, err = env.Stdout.Write(out)
	return err
}

// readSmall reads a key or signature file, refusing anything larger than a key file
// can be.
func readSmall(path string) ([]byte, error) { return cli.ReadSmallFile(path, sign.MaxKeyFileSize) }

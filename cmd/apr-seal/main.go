// apr-seal seals (encrypts) the tensor data of an APR model for X25519 recipients or
// a password, and unseals it. Header, metadata and index stay readable (apr-decode
// inspect shows who can open a sealed file) and are authenticated.
//
//	apr-seal keygen -o alice.key                    # writes alice.key (0600) and alice.key.pub
//	apr-seal -r age1... < model.apr > sealed.apr     # or -r alice.key.pub
//	apr-seal -d -i alice.key < sealed.apr > model.apr
//	apr-seal -p --passphrase-file pw.txt model.apr -o sealed.apr
//	apr-seal unseal --passphrase-env MODEL_PW sealed.apr -o model.apr
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/stream"
)

func main() { cli.Main(run) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &cli.Env{Name: "apr-seal", Stdin: stdin, Stdout: stdout, Stderr: stderr}
	return cli.Run(env, "Seal (encrypt) an APR model's tensor data for X25519 recipients or a password, or unseal it.", &sealCLI{}, args)
}

type sealCLI struct {
	cli.VersionFlag
	Seal   sealCmd   `cmd:"" default:"withargs" help:"Seal a model (the default command); with -d, unseal it."`
	Unseal unsealCmd `cmd:"" help:"Unseal a model with an identity file (-i) or its password."`
	Keygen keygenCmd `cmd:"" help:"Write a new X25519 identity (age's format) and its recipient."`
}

// ioFlags are the input, output and encoding of both directions.
type ioFlags struct {
	Input    string `arg:"" optional:"" default:"-" help:"APR (or aprender) file to read ('-': stdin)."`
	Output   string `short:"o" placeholder:"FILE" help:"Write to FILE (atomically; nothing is left behind on failure) instead of stdout."`
	Compress string `short:"c" default:"auto" enum:"auto,none,zstd,zstd-max,lz4" help:"Compression of the output's tensor data, applied before sealing: auto keeps the input's (default: auto)."`
	Workers  int    `short:"j" default:"0" help:"Chunks processed at once (default: number of CPUs)."`
}

// passFlags say where a password comes from.
type passFlags struct {
	Passphrase     bool   `short:"p" help:"Use a password, asked on the terminal (/dev/tty, since stdin carries the model)."`
	PassphraseFile string `placeholder:"FILE" help:"Read the password from FILE (its first line); implies -p."`
	PassphraseEnv  string `placeholder:"VAR" help:"Read the password from environment variable VAR; implies -p."`
}

func (p *passFlags) wanted() bool {
	return p.Passphrase || p.PassphraseFile != "" || p.PassphraseEnv != ""
}

// password reads the password; confirm asks twice on a terminal.
func (p *passFlags) password(confirm bool) ([]byte, error) {
	src := cli.PasswordSource{File: p.PassphraseFile, Env: p.PassphraseEnv, FileFlag: "--passphrase-file", EnvFlag: "--passphrase-env"}
	return cli.ReadPassword(src, "Password: ", confirm)
}

type sealCmd struct {
	ioFlags
	Recipient []string `short:"r" placeholder:"RECIPIENT" help:"Seal for an X25519 public key: an age1... string, or a file of them (one per line, # comments). Repeatable."`
	passFlags
	Decrypt  bool     `short:"d" help:"Unseal instead (as 'apr-seal unseal')."`
	Identity []string `short:"i" placeholder:"FILE" help:"With -d: identity file (AGE-SECRET-KEY-1... lines, as apr-seal keygen and age-keygen write). Repeatable."`
	Shuffle  bool     `help:"Byte-shuffle float and integer tensors before compression."`
	Argon2T  uint32   `name:"argon2-time" default:"3" hidden:"" help:"Argon2id passes."`
	Argon2M  uint32   `name:"argon2-memory" default:"65536" hidden:"" help:"Argon2id memory in KiB."`
	Argon2P  uint8    `name:"argon2-threads" default:"4" hidden:"" help:"Argon2id lanes."`
}

func (c *sealCmd) Run(env *cli.Env) error {
	if c.Decrypt {
		if len(c.Recipient) > 0 {
			return cli.Usagef("-d unseals: -r does not apply")
		}
		u := unsealCmd{ioFlags: c.ioFlags, Identity: c.Identity, passFlags: c.passFlags}
		return u.Run(env)
	}
	if len(c.Identity) > 0 {
		return cli.Usagef("-i is for unsealing (-d); to seal for a key, give its recipient with -r")
	}
	var rs []seal.Recipient
	for _, r := range c.Recipient {
		parsed, err := parseRecipients(r)
		if err != nil {
			return err
		}
		rs = append(rs, parsed...)
	}
	switch {
	case c.wanted() && len(rs) > 0:
		return cli.Usagef("seal for a password or for recipients, not both (anyone holding a key could re-seal a password file)")
	case c.wanted():
		pw, err := c.password(true)
		if err != nil {
			return err
		}
		r, err := seal.NewPasswordRecipient(pw, seal.Argon2Params{Time: c.Argon2T, MemoryKiB: c.Argon2M, Threads: c.Argon2P})
		if err != nil {
			return cli.Usagef("%v", err)
		}
		rs = append(rs, r)
	case len(rs) == 0:
		return cli.Usagef("nothing to seal for: give -r RECIPIENT or -p")
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
	Identity []string `short:"i" placeholder:"FILE" help:"Identity file (AGE-SECRET-KEY-1... lines, as apr-seal keygen and age-keygen write). Repeatable."`
	passFlags
}

func (c *unsealCmd) Run(env *cli.Env) error {
	var ids []seal.Identity
	for _, path := range c.Identity {
		b, err := cli.ReadSmallFile(path, 1<<20)
		if err != nil {
			return err
		}
		parsed, err := seal.ParseX25519Identities(strings.NewReader(string(b)))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, id := range parsed {
			ids = append(ids, id)
		}
	}
	u := &lazyUnsealer{ids: ids, pass: &c.passFlags}
	src, closeIn, err := openInput(env, c.Input, u)
	if err != nil {
		return err
	}
	defer closeIn()
	src, opts, err := c.encoding(src, false)
	if err != nil {
		return err
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if err := stream.Reencode(out, src, nil, true, opts...); err != nil {
		return err
	}
	return out.Commit()
}

// lazyUnsealer asks for a password only when the file is sealed for one and no
// identity file was given, so that 'apr-seal -d < f' just works for password files.
type lazyUnsealer struct {
	ids  []seal.Identity
	pass *passFlags
}

func (l *lazyUnsealer) Begin(header, metadata, section []byte) (container.TensorOpener, error) {
	si, err := apr.ParseSealInfo(section)
	if err != nil {
		return nil, err
	}
	ids := l.ids
	if l.pass.wanted() || (len(ids) == 0 && si.Password) {
		if !si.Password {
			return nil, fmt.Errorf("%w: the file is not sealed for a password (%s)", apr.ErrDecryptionFailed, describe(si))
		}
		pw, err := l.pass.password(false)
		if err != nil {
			return nil, err
		}
		ids = append(ids, seal.NewPasswordIdentity(pw))
	}
	if len(ids) == 0 {
		return nil, cli.Usagef("the file is sealed for %s: give -i IDENTITY", describe(si))
	}
	return apr.NewUnsealer(ids...).Begin(header, metadata, section)
}

func describe(si *apr.SealInfo) string {
	var parts []string
	if si.X25519 > 0 {
		parts = append(parts, fmt.Sprintf("%d X25519 recipient(s)", si.X25519))
	}
	if si.Password {
		parts = append(parts, "a password")
	}
	for _, t := range si.OtherType {
		parts = append(parts, "a "+t+" recipient")
	}
	return strings.Join(parts, " and ")
}

// openInput opens the input as a verified tensor stream; with u, as a sealed one.
func openInput(env *cli.Env, path string, u container.Unsealer) (apr.Stream, func(), error) {
	r, name, err := env.Input(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(r, 1<<16)
	var s apr.Stream
	if u == nil {
		if h, _ := br.Peek(container.HeaderSize); len(h) == container.HeaderSize && string(h[:4]) == "APRN" &&
			h[4] == container.MajorVersion && container.Flags(binary.LittleEndian.Uint32(h[8:]))&container.FlagEncrypted != 0 {
			err = errors.New("the input is sealed already (unseal it with -d first)")
		} else {
			s, err = apr.OpenStream(br)
		}
	} else {
		s, err = apr.OpenSealedStreamWith(br, u)
	}
	if err != nil {
		r.Close()
		var usage *cli.UsageError
		if errors.As(err, &usage) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, func() { s.Close(); r.Close() }, nil
}

// encoding picks the writer options: the chosen compression, or with auto the
// input's, as its first tensor shows it (a compressed input whose first tensor is
// stored plain gets zstd).
func (f *ioFlags) encoding(src apr.Stream, shuffle bool) (apr.Stream, []container.Option, error) {
	var opts []container.Option
	if f.Workers > 0 {
		opts = append(opts, container.WithWorkers(f.Workers))
	}
	if f.Compress != "auto" {
		c, err := container.ParseCompression(f.Compress)
		if err != nil {
			return nil, nil, cli.Usagef("%v", err)
		}
		if shuffle && c == container.CompressNone {
			return nil, nil, cli.Usagef("--shuffle needs a codec (-c zstd, zstd-max or lz4)")
		}
		return src, append(opts, container.WithCompression(c), container.WithShuffle(shuffle)), nil
	}
	info, r, err := src.Next()
	p := &peeked{Stream: src, info: info, r: r, err: err}
	if err != nil {
		return p, opts, nil // Next reports it
	}
	c := container.CompressNone
	if src.Header().Flags&container.FlagCompressed != 0 || shuffle {
		c = container.CompressZstd
	}
	if t, ok := r.(*container.Tensor); ok {
		switch t.Codec {
		case container.CodecZstd:
			c = container.CompressZstd
		case container.CodecLZ4:
			c = container.CompressLZ4
		}
		shuffle = shuffle || t.Shuffle
		if t.ChunkSize != 0 {
			opts = append(opts, container.WithChunkSize(int(t.ChunkSize)))
		}
	}
	return p, append(opts, container.WithCompression(c), container.WithShuffle(shuffle && c != container.CompressNone)), nil
}

// peeked is a stream whose first tensor was already taken.
type peeked struct {
	apr.Stream
	info container.TensorInfo
	r    io.Reader
	err  error
	done bool
}

func (p *peeked) Next() (container.TensorInfo, io.Reader, error) {
	if !p.done {
		p.done = true
		return p.info, p.r, p.err
	}
	return p.Stream.Next()
}

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
	if err := writeNew(c.Output+".pub", rcpt+"\n", 0o644); err != nil {
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

// parseRecipients reads an age1... string, or a file of them.
func parseRecipients(arg string) ([]seal.Recipient, error) {
	if strings.HasPrefix(arg, "age1") {
		r, err := seal.ParseX25519Recipient(arg)
		if err != nil {
			return nil, cli.Usagef("recipient %q: %v", arg, err)
		}
		return []seal.Recipient{r}, nil
	}
	b, err := cli.ReadSmallFile(arg, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("recipient %q is neither an age1... key nor a readable file: %w", arg, err)
	}
	var rs []seal.Recipient
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := seal.ParseX25519Recipient(line)
		if err != nil {
			if strings.HasPrefix(line, "AGE-SECRET-KEY-") {
				return nil, fmt.Errorf("%s:%d: this is an identity (private key); give its recipient (the .pub file)", arg, n)
			}
			return nil, fmt.Errorf("%s:%d: %w", arg, n, err)
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("%s: no recipients in the file", arg)
	}
	return rs, nil
}

// apr-sign signs APR models and checks their signatures and licenses.
//
//	apr-sign keygen -o author                       # author.key (0600) and author.pub
//	apr-sign -k author.key --comment "v1" < model.apr > signed.apr
//	apr-sign verify -p author.pub signed.apr
//	apr-sign verify -p author.pub --pass < signed.apr | apr-decode inspect
//	apr-sign --detached --minisign -k author.key model.apr   # model.apr.minisig
//	apr-sign license -k issuer.key --licensee "Acme" --expires 2027-01-01 < signed.apr > licensed.apr
//	apr-sign verify --license -p issuer.pub licensed.apr
//	apr-sign pubkey author.pub > author.minisign.pub          # for minisign -V
//	apr-sign -k author.key --password-file pw.txt sealed.apr -o signed.apr   # a password-sealed input
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/atomicfile"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/sign"
)

func main() { cli.Main(run) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &cli.Env{Name: "apr-sign", Stdin: stdin, Stdout: stdout, Stderr: stderr}
	return cli.Run(env, "Sign APR models (Ed25519 over the content, so signatures survive re-compression), verify signatures, add and check licenses.", &signCLI{}, args)
}

type signCLI struct {
	cli.VersionFlag
	Sign    signCmd    `cmd:"" default:"withargs" help:"Append a signature to a model (the default command): apr-sign -k KEY [FILE] [-o OUT]."`
	Keygen  keygenCmd  `cmd:"" help:"Generate an Ed25519 key pair: NAME.key (private, mode 0600) and NAME.pub."`
	Verify  verifyCmd  `cmd:"" help:"Check that a model carries a valid signature (or license) from a trusted key; exit 0 only then."`
	License licenseCmd `cmd:"" help:"Add a license block signed by the issuer's key (replaces an existing license)."`
	Pubkey  pubkeyCmd  `cmd:"" help:"Print a public key (from a private or public key file) in another format, e.g. minisign's for 'minisign -V'."`
}

type pubkeyCmd struct {
	From   string `arg:"" placeholder:"KEYFILE" help:"A private or public key file in any supported format."`
	Format string `short:"f" default:"minisign" enum:"pem,minisign,ssh" help:"Output format: pem (PKIX), minisign, or ssh (an authorized_keys line) (default: minisign)."`
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

// keyFlags read a private key, possibly encrypted.
type keyFlags struct {
	Key            string `short:"k" required:"" placeholder:"KEY" help:"Private key: PKCS#8 PEM, OpenSSH ed25519 or minisign secret key."`
	PassphraseFile string `placeholder:"FILE" help:"Read the passphrase of an encrypted key from FILE (its first line)."`
	PassphraseEnv  string `placeholder:"VAR" help:"Read the passphrase of an encrypted key from environment variable VAR."`
}

func (k *keyFlags) load() (*sign.PrivateKey, error) {
	data, err := readSmall(k.Key)
	if err != nil {
		return nil, err
	}
	pass, err := cli.GivenPassword(cli.PasswordSource{File: k.PassphraseFile, Env: k.PassphraseEnv})
	if err != nil {
		return nil, err
	}
	key, err := sign.ParsePrivateKey(data, pass)
	if errors.Is(err, sign.ErrPassphraseRequired) {
		return nil, fmt.Errorf("%s: %w (give --passphrase-file FILE or --passphrase-env VAR)", k.Key, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Key, err)
	}
	return key, nil
}

// readSmall reads a key, signature or passphrase file, refusing anything larger than a
// key file can be.
func readSmall(path string) ([]byte, error) { return cli.ReadSmallFile(path, sign.MaxKeyFileSize) }

// sealedFlags open sealed inputs, whose signatures cover the plaintext.
type sealedFlags struct {
	Identity     []string `short:"i" placeholder:"IDENTITY" help:"For a sealed input: an X25519 identity file (apr-seal keygen, age-keygen) that opens it; repeatable."`
	Password     bool     `help:"For a password-sealed input: ask for its password on the terminal (/dev/tty, since stdin carries the model)."`
	PasswordFile string   `placeholder:"FILE" help:"For a password-sealed input: read its password from FILE (its first line); implies --password."`
	PasswordEnv  string   `placeholder:"VAR" help:"For a password-sealed input: read its password from environment variable VAR; implies --password."`
}

func (s *sealedFlags) passwordWanted() bool {
	return s.Password || s.PasswordFile != "" || s.PasswordEnv != ""
}

// unsealer returns nil when no identity and no password was asked for: a sealed
// input is then refused with a message saying what to give.
func (s *sealedFlags) unsealer() (container.Unsealer, error) {
	if s.PasswordFile != "" && s.PasswordEnv != "" {
		return nil, cli.Usagef("give the password once: --password-file or --password-env")
	}
	if len(s.Identity) == 0 && !s.passwordWanted() {
		return nil, nil
	}
	var ids []seal.Identity
	for _, p := range s.Identity {
		b, err := readSmall(p)
		if err != nil {
			return nil, err
		}
		list, err := seal.ParseX25519Identities(strings.NewReader(string(b)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, id := range list {
			ids = append(ids, id)
		}
	}
	return &passwordUnsealer{ids: ids, flags: s}, nil
}

// passwordUnsealer reads the password only once the input turns out to be sealed
// for one, so that an unsealed input never prompts.
type passwordUnsealer struct {
	ids   []seal.Identity
	flags *sealedFlags
}

func (u *passwordUnsealer) Begin(header, metadata, section []byte) (container.TensorOpener, error) {
	ids := u.ids
	if u.flags.passwordWanted() {
		si, err := apr.ParseSealInfo(section)
		if err != nil {
			return nil, err
		}
		if !si.Password {
			return nil, fmt.Errorf("%w: the input is not sealed for a password (it is for %d X25519 recipient(s); give -i IDENTITY)",
				apr.ErrDecryptionFailed, si.X25519)
		}
		pw, err := u.flags.password()
		if err != nil {
			return nil, err
		}
		ids = append(ids[:len(ids):len(ids)], seal.NewPasswordIdentity(pw))
	}
	return apr.NewUnsealer(ids...).Begin(header, metadata, section)
}

// password reads the sealed input's password as apr-seal does: the first line of
// --password-file, all of --password-env, or a line typed on the terminal.
func (s *sealedFlags) password() ([]byte, error) {
	src := cli.PasswordSource{File: s.PasswordFile, Env: s.PasswordEnv, FileFlag: "--password-file", EnvFlag: "--password-env"}
	return cli.ReadPassword(src, "Password of the sealed input: ", false)
}

func loadPublicKeys(paths []string) ([]*sign.PublicKey, error) {
	var keys []*sign.PublicKey
	for _, p := range paths {
		b, err := readSmall(p)
		if err != nil {
			return nil, err
		}
		k, err := sign.ParsePublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

type signCmd struct {
	keyFlags
	sealedFlags
	Input    string `arg:"" optional:"" default:"-" help:"APR v2 model ('-': stdin)."`
	Output   string `short:"o" placeholder:"FILE" help:"Write to FILE (atomically) instead of stdout; with --detached, the signature file (default FILE.minisig)."`
	Comment  string `placeholder:"TEXT" help:"Signed comment (e.g. who signs and why); with --detached, the trusted comment."`
	Detached bool   `help:"Write a detached signature of the whole file instead of a signature block (needs --minisign)."`
	Minisign bool   `help:"With --detached: minisign's .minisig format, which 'minisign -V -p KEY.pub -m FILE' verifies."`
}

func (c *signCmd) Run(env *cli.Env) error {
	if c.Minisign && !c.Detached {
		return cli.Usagef("--minisign is the format of --detached signatures; add --detached")
	}
	if c.Detached && !c.Minisign {
		return cli.Usagef("--detached needs a format: add --minisign")
	}
	key, err := c.load()
	if err != nil {
		return err
	}
	if c.Detached {
		return c.detached(env, key)
	}
	in, name, err := env.Input(c.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	u, err := c.unsealer()
	if err != nil {
		return err
	}
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
	if err := atomicfile.WriteFile(sigPath, sig, 0o644); err != nil {
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

type keygenCmd struct {
	Output   string `short:"o" required:"" placeholder:"NAME" help:"Write NAME.key and NAME.pub."`
	Minisign bool   `help:"Write minisign's formats (an unencrypted minisign secret key, as 'minisign -G -W' does) instead of PEM."`
	Force    bool   `short:"f" help:"Overwrite existing key files."`
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
	pf, err := atomicfile.Create(pubPath, 0o644)
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

type verifyCmd struct {
	sealedFlags
	Input    string   `arg:"" optional:"" default:"-" help:"APR v2 model ('-': stdin)."`
	Pubkey   []string `short:"p" required:"" placeholder:"PUB" help:"Trusted public key (PKIX PEM, OpenSSH, minisign); repeatable. A key inside the file is never trusted."`
	License  bool     `help:"Check the license instead of signatures: the -p keys are trusted license issuers, and a valid, unexpired license bound to this content is required."`
	Pass     bool     `help:"Write the verified model to stdout. It is spooled to a temporary file and released only after every check passed."`
	Output   string   `short:"o" placeholder:"FILE" help:"Write the verified model to FILE (atomically; nothing is left on failure)."`
	Minisign bool     `help:"Check a detached minisign signature of the whole file (FILE.minisig, or -x) instead of signature blocks."`
	SigFile  string   `short:"x" placeholder:"SIGFILE" help:"With --minisign: the signature file."`
	Quiet    bool     `short:"q" help:"Print nothing; use the exit status."`
}

func (c *verifyCmd) Run(env *cli.Env) error {
	keys, err := loadPublicKeys(c.Pubkey)
	if err != nil {
		return err
	}
	if c.Minisign {
		return c.minisign(env, keys)
	}
	if c.SigFile != "" {
		return cli.Usagef("-x is the signature file of --minisign")
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
		spool, err := os.CreateTemp("", "apr-sign-verify-*.apr")
		if err != nil {
			return fmt.Errorf("spool file for --pass: %w", err)
		}
		defer func() { spool.Close(); os.Remove(spool.Name()) }()
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
	if !c.Quiet {
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
	if !c.Quiet {
		fmt.Fprintf(env.Stdout, "%s: good minisign signature by key %s, trusted comment %q\n", name, key.ID, ms.TrustedComment)
	}
	return nil
}

type licenseCmd struct {
	keyFlags
	sealedFlags
	Input    string `arg:"" optional:"" default:"-" help:"APR v2 model ('-': stdin)."`
	Output   string `short:"o" placeholder:"FILE" help:"Write to FILE (atomically) instead of stdout."`
	Licensee string `required:"" placeholder:"NAME" help:"Who the license is for."`
	Tier     string `placeholder:"TIER" help:"License tier (e.g. pro)."`
	Seats    uint32 `default:"1" help:"Number of seats."`
	Issued   string `placeholder:"DATE" help:"Issue date, YYYY-MM-DD or RFC 3339 (default: SOURCE_DATE_EPOCH or now)."`
	Expires  string `placeholder:"DATE" help:"Expiry date, YYYY-MM-DD or RFC 3339, or a duration after issue such as 365d or 720h (default: never)."`
}

func (c *licenseCmd) Run(env *cli.Env) error {
	lic := sign.License{Licensee: c.Licensee, Tier: c.Tier, Seats: c.Seats}
	var err error
	if c.Issued != "" {
		if lic.IssuedAt, err = parseDate(c.Issued); err != nil {
			return cli.Usagef("--issued: %v", err)
		}
	} else if lic.IssuedAt, err = signTime(); err != nil {
		return err
	}
	if c.Expires != "" {
		if d, ok := parseDays(c.Expires); ok {
			lic.ExpiresAt = lic.IssuedAt.Add(d)
		} else if lic.ExpiresAt, err = parseDate(c.Expires); err != nil {
			return cli.Usagef("--expires: %v", err)
		}
		if !lic.ExpiresAt.After(lic.IssuedAt) {
			return cli.Usagef("--expires %s is not after the issue time %s", lic.ExpiresAt.UTC().Format(time.RFC3339), lic.IssuedAt.UTC().Format(time.RFC3339))
		}
	}
	key, err := c.load()
	if err != nil {
		return err
	}
	in, name, err := env.Input(c.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	u, err := c.unsealer()
	if err != nil {
		return err
	}
	signed, replaced, err := apr.LicenseStream(out, in, lic, key, apr.WithSealedInput(u))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := out.Commit(); err != nil {
		return err
	}
	if replaced {
		env.Errorf("warning: %s: the previous license was replaced", name)
	}
	env.Infof("%s: licensed to %q by issuer key %s", name, signed.Licensee, signed.IssuerKeyID)
	return nil
}

func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD or RFC 3339)", s)
	}
	return t, nil
}

// parseDays accepts "365d" and Go durations such as "720h".
func parseDays(s string) (time.Duration, bool) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err == nil && days > 0 && days < 100000 && fmt.Sprint(days) == n {
			return time.Duration(days) * 24 * time.Hour, true
		}
		return 0, false
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, true
	}
	return 0, false
}

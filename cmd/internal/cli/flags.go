package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/sign"
)

// The flags programs share, one spelling and one meaning each (docs/CLI.md). A
// program embeds them in its commands; where one program's help says more, it sets
// the ${...} variable of the help with kong's set:"" tag on the embedded field.

// InputFlag is the input file argument; "-" (the default) is stdin.
type InputFlag struct {
	Input string `arg:"" optional:"" default:"-" reads:"" help:"${input_help=APR or aprender file ('-': stdin).}"`
}

// OutputFlag is -o/--output: a file written atomically, or stdout.
type OutputFlag struct {
	Output string `short:"o" placeholder:"FILE" help:"Write to FILE (atomically; nothing is left behind on failure) instead of stdout."`
}

// CompressFlag is -c/--compress, the codec of the output's tensor data. Its default
// is the variable compress (set:"compress=zstd"), none when unset.
type CompressFlag struct {
	Compress string `short:"c" default:"${compress=none}" enum:"none,zstd,zstd-max,lz4" help:"Compression of tensor data: none (memory-mappable), zstd (level 3), zstd-max or lz4 (default: ${default})."`
}

// Compression parses the flag.
func (f *CompressFlag) Compression() (container.Compression, error) {
	c, err := container.ParseCompression(f.Compress)
	if err != nil {
		return c, Usagef("%v", err)
	}
	return c, nil
}

// WorkersFlag is -j/--workers.
type WorkersFlag struct {
	Workers int `short:"j" default:"0" help:"Chunks processed at once (default: number of CPUs); the output does not depend on it."`
}

// Options are the writer options of the flag; a negative count is a usage error.
func (f *WorkersFlag) Options() ([]container.Option, error) {
	if f.Workers < 0 {
		return nil, Usagef("--workers %d: must be 0 (all CPUs) or more", f.Workers)
	}
	if f.Workers > 0 {
		return []container.Option{container.WithWorkers(f.Workers)}, nil
	}
	return nil, nil
}

// PassphraseFlags say where the passphrase of a sealed file comes from: the terminal
// (--passphrase), a file or an environment variable. apr-sign's --password spellings
// are deprecated.
type PassphraseFlags struct {
	Passphrase     bool   `help:"${passphrase_help=Use a passphrase, asked on the terminal (/dev/tty, since stdin carries the model).}"`
	PassphraseFile string `placeholder:"FILE" help:"Read the passphrase from FILE (its first line); implies --passphrase."`
	PassphraseEnv  string `placeholder:"VAR" help:"Read the passphrase from environment variable VAR (all of it); implies --passphrase."`

	OldPassword     bool   `name:"password" hidden:"" deprecated:"--password" use:"passphrase"`
	OldPasswordFile string `name:"password-file" hidden:"" deprecated:"--password-file" use:"passphrase-file"`
	OldPasswordEnv  string `name:"password-env" hidden:"" deprecated:"--password-env" use:"passphrase-env"`
}

// Wanted reports whether a passphrase was asked for.
func (p *PassphraseFlags) Wanted() bool {
	return p.Passphrase || p.PassphraseFile != "" || p.PassphraseEnv != ""
}

// Read reads the passphrase; confirm asks twice on a terminal.
func (p *PassphraseFlags) Read(prompt string, confirm bool) ([]byte, error) {
	if p.PassphraseFile != "" && p.PassphraseEnv != "" {
		return nil, Usagef("give the passphrase once: --passphrase-file or --passphrase-env")
	}
	src := PasswordSource{File: p.PassphraseFile, Env: p.PassphraseEnv, FileFlag: "--passphrase-file", EnvFlag: "--passphrase-env"}
	return ReadPassword(src, prompt, confirm)
}

// IdentityFlag is -i/--identity: X25519 identity files that open sealed files.
type IdentityFlag struct {
	Identity []string `short:"i" placeholder:"FILE" help:"${identity_help=Identity file (AGE-SECRET-KEY-1... lines, as apr-seal keygen and age-keygen write).} Repeatable."`
}

// Identities reads the identity files.
func (f *IdentityFlag) Identities() ([]seal.Identity, error) {
	var ids []seal.Identity
	for _, path := range f.Identity {
		b, err := ReadSmallFile(path, 1<<20)
		if err != nil {
			return nil, err
		}
		parsed, err := seal.ParseX25519Identities(strings.NewReader(string(b)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, id := range parsed {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// RecipientFlag is -r/--recipient: X25519 public keys to seal for.
type RecipientFlag struct {
	Recipient []string `short:"r" placeholder:"RECIPIENT" help:"Seal for an X25519 public key: an age1... string, or a file of them (one per line, # comments). Repeatable."`
}

// Recipients parses the recipients.
func (f *RecipientFlag) Recipients() ([]seal.Recipient, error) {
	var rs []seal.Recipient
	for _, r := range f.Recipient {
		parsed, err := parseRecipients(r)
		if err != nil {
			return nil, err
		}
		rs = append(rs, parsed...)
	}
	return rs, nil
}

// parseRecipients reads an age1... string, or a file of them.
func parseRecipients(arg string) ([]seal.Recipient, error) {
	if strings.HasPrefix(arg, "age1") {
		r, err := seal.ParseX25519Recipient(arg)
		if err != nil {
			return nil, Usagef("recipient %q: %v", arg, err)
		}
		return []seal.Recipient{r}, nil
	}
	b, err := ReadSmallFile(arg, 1<<20)
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

// KeyFlags are -k/--key, a private signing key, and where the passphrase of an
// encrypted one comes from.
type KeyFlags struct {
	Key               string `short:"k" required:"" placeholder:"KEY" help:"Private key: PKCS#8 PEM, OpenSSH ed25519 or minisign secret key."`
	KeyPassphraseFile string `placeholder:"FILE" help:"Read the passphrase of an encrypted key from FILE (its first line)."`
	KeyPassphraseEnv  string `placeholder:"VAR" help:"Read the passphrase of an encrypted key from environment variable VAR."`
}

// Load reads the key. legacy, when it names a passphrase, is tried for an encrypted
// key given no --key-passphrase-*, with a deprecation notice (apr-sign's
// --passphrase-file and --passphrase-env meant the key's passphrase until they
// came to mean a sealed input's, as everywhere).
func (k *KeyFlags) Load(env *Env, legacy *PassphraseFlags) (*sign.PrivateKey, error) {
	data, err := ReadSmallFile(k.Key, sign.MaxKeyFileSize)
	if err != nil {
		return nil, err
	}
	pass, err := GivenPassword(PasswordSource{File: k.KeyPassphraseFile, Env: k.KeyPassphraseEnv})
	if err != nil {
		return nil, err
	}
	key, err := sign.ParsePrivateKey(data, pass)
	if errors.Is(err, sign.ErrPassphraseRequired) && pass == nil && legacy != nil && (legacy.PassphraseFile != "" || legacy.PassphraseEnv != "") {
		if legacy.PassphraseFile != "" {
			env.Deprecated("--passphrase-file for the key's passphrase", "--key-passphrase-file")
		} else {
			env.Deprecated("--passphrase-env for the key's passphrase", "--key-passphrase-env")
		}
		if pass, err = GivenPassword(PasswordSource{File: legacy.PassphraseFile, Env: legacy.PassphraseEnv}); err != nil {
			return nil, err
		}
		key, err = sign.ParsePrivateKey(data, pass)
	}
	if errors.Is(err, sign.ErrPassphraseRequired) {
		return nil, fmt.Errorf("%s: %w (give --key-passphrase-file FILE or --key-passphrase-env VAR)", k.Key, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Key, err)
	}
	return key, nil
}

// PubkeyFlag is -p/--pubkey: trusted public keys.
type PubkeyFlag struct {
	Pubkey []string `short:"p" required:"" placeholder:"PUB" help:"Trusted public key (PKIX PEM, OpenSSH, minisign); repeatable. A key inside the file is never trusted."`
}

// Keys reads the public keys.
func (f *PubkeyFlag) Keys() ([]*sign.PublicKey, error) {
	var keys []*sign.PublicKey
	for _, p := range f.Pubkey {
		b, err := ReadSmallFile(p, sign.MaxKeyFileSize)
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

// TempDirFlag is --temp-dir, where a piped input is spooled (--tmp-dir is deprecated).
type TempDirFlag struct {
	TempDir    string `placeholder:"DIR" help:"${temp_dir_help=Where to spool a piped input (default: $TMPDIR or /tmp).}"`
	OldTempDir string `name:"tmp-dir" hidden:"" deprecated:"--tmp-dir" use:"temp-dir"`
}

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
//	apr-sign -k author.key --passphrase-file pw.txt sealed.apr -o signed.apr   # a passphrase-sealed input
//	apr-sign oms sign key --private-key key.pem --signature model.sig MODEL_DIR  # OpenSSF Model Signing
//	apr-sign oms verify key --public-key pub.pem --signature model.sig MODEL_DIR
//	apr-sign oms verify certificate --certificate-chain ca.pem --signature model.sig MODEL_DIR
package main

import "github.com/apr-go/apr/cmd/internal/cli"

func main() { cli.Main(run) }

var run = cli.Program{Name: "apr-sign",
	Help:    "Sign APR models (Ed25519 over the content, so signatures survive re-compression), verify signatures, add and check licenses.",
	Grammar: func() any { return &signCLI{} }}.Run

type signCLI struct {
	cli.Globals
	Sign    signCmd    `cmd:"" default:"withargs" help:"Append a signature to a model (the default command): apr-sign -k KEY [FILE] [-o OUT]."`
	Keygen  keygenCmd  `cmd:"" help:"Generate an Ed25519 key pair: NAME.key (private, mode 0600) and NAME.pub."`
	Verify  verifyCmd  `cmd:"" help:"Check that a model carries a valid signature (or license) from a trusted key; exit 0 only then."`
	License licenseCmd `cmd:"" help:"Add a license block signed by the issuer's key (replaces an existing license)."`
	Pubkey  pubkeyCmd  `cmd:"" help:"Print a public key (from a private or public key file) in another format, e.g. minisign's for 'minisign -V'."`
	OMS     omsCmd     `cmd:"" name:"oms" help:"OpenSSF Model Signing: sign a model directory or file with a detached model.sig (a Sigstore bundle), or verify one, as model_signing does."`
}

// sealedFlags open sealed inputs, whose signatures cover the plaintext.
type sealedFlags struct {
	cli.IdentityFlag    `set:"identity_help=For a sealed input: an X25519 identity file (apr-seal keygen, age-keygen) that opens it."`
	cli.PassphraseFlags `set:"passphrase_help=For a passphrase-sealed input: ask for its passphrase on the terminal (/dev/tty, since stdin carries the model)."`
}

type signCmd struct {
	cli.KeyFlags
	sealedFlags
	cli.InputFlag `set:"input_help=APR v2 model ('-': stdin)."`
	Output        string `short:"o" placeholder:"FILE" help:"Write to FILE (atomically) instead of stdout; with --detached, the signature file (default FILE.minisig)."`
	Comment       string `placeholder:"TEXT" help:"Signed comment (e.g. who signs and why); with --detached, the trusted comment."`
	Detached      bool   `help:"Write a detached signature of the whole file instead of a signature block (needs --minisign)."`
	Minisign      bool   `help:"With --detached: minisign's .minisig format, which 'minisign -V -p KEY.pub -m FILE' verifies."`
}

type keygenCmd struct {
	Output   string `short:"o" required:"" placeholder:"NAME" help:"Write NAME.key and NAME.pub."`
	Minisign bool   `help:"Write minisign's formats (an unencrypted minisign secret key, as 'minisign -G -W' does) instead of PEM."`
	Force    bool   `short:"f" help:"Overwrite existing key files."`
}

type verifyCmd struct {
	sealedFlags
	cli.InputFlag `set:"input_help=APR v2 model ('-': stdin)."`
	cli.PubkeyFlag
	License  bool   `help:"Check the license instead of signatures: the -p keys are trusted license issuers, and a valid, unexpired license bound to this content is required."`
	Pass     bool   `help:"Write the verified model to stdout. It is spooled to a temporary file and released only after every check passed."`
	Output   string `short:"o" placeholder:"FILE" help:"Write the verified model to FILE (atomically; nothing is left on failure)."`
	Minisign bool   `help:"Check a detached minisign signature of the whole file (FILE.minisig, or -x) instead of signature blocks."`
	SigFile  string `short:"x" placeholder:"SIGFILE" help:"With --minisign: the signature file."`
}

type licenseCmd struct {
	cli.KeyFlags
	sealedFlags
	cli.InputFlag `set:"input_help=APR v2 model ('-': stdin)."`
	cli.OutputFlag
	Licensee string `required:"" placeholder:"NAME" help:"Who the license is for."`
	Tier     string `placeholder:"TIER" help:"License tier (e.g. pro)."`
	Seats    uint32 `default:"1" help:"Number of seats."`
	Issued   string `placeholder:"DATE" help:"Issue date, YYYY-MM-DD or RFC 3339 (default: SOURCE_DATE_EPOCH or now)."`
	Expires  string `placeholder:"DATE" help:"Expiry date, YYYY-MM-DD or RFC 3339, or a duration after issue such as 365d or 720h (default: never)."`
}

type pubkeyCmd struct {
	From   string `arg:"" placeholder:"KEYFILE" help:"A private or public key file in any supported format."`
	Format string `default:"minisign" enum:"pem,minisign,ssh" help:"Output format: pem (PKIX), minisign, or ssh (an authorized_keys line) (default: minisign)."`

	OldF string `name:"deprecated-f" short:"f" hidden:"" deprecated:"pubkey -f for the format" use:"format"`
}

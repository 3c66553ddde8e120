// apr-predict runs a model over feature rows, as a filter: features on stdin (or a
// file), predictions on stdout (or -o FILE).
//
//	apr-predict diabetes.apr < features.csv > predictions.csv
//	apr-predict softmax.apr x.npy --proba -o proba.npy
//	apr-predict --require-signature -p ci.pub model.apr < x.npz > y.npz
//	apr-predict -i alice.key sealed.apr x.csv
//	apr-predict --request model.apr --reply-to user.key.pub < x.csv > request
//	apr-predict model.apr -i owner.key --serve-request --replay-dir seen < request > reply
//	apr-predict --open-reply request -i user.key < reply > predictions.csv
package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/predict"
	"github.com/apr-go/apr/lib/sign"
)

func main() { cli.Main(run) }

var run = cli.Program{Name: "apr-predict", Help: description, Grammar: func() any { return &predictCmd{} }}.Run

const description = `Predict with a model: one prediction per feature row.

The features are CSV (commas or spaces, gzip too; a first line that is not numbers is
a header and is skipped), a 2-D .npy array of any float or integer type, or an .npz
archive (its array "x", or its only array, or --array NAME); the format is told from
the bytes. Predictions come in the same family unless --format (or -o FILE's
extension) says otherwise: CSV, one line per row; .npy, float64 values or int64 class
labels; .npz, that array as "y". --proba writes a classifier's class probabilities
instead: one column per class (CSV under a header p0,p1,...; "proba" in an .npz).

LinearRegression, LogisticRegression (binary and multinomial), NeuralSequential and
MixtureOfExperts models predict; other types are refused before their tensors are read. The model is
read whole and every checksum verified before the first row is predicted; with
--require-signature it must carry a valid signature by a -p key, and a sealed model
opens with -i IDENTITY or its passphrase. Rows are read, predicted and written a batch
at a time, so memory does not grow with the input.

Private inference (docs/SEALING.md): --request seals the features to the X25519 key
the model publishes (metadata inference_recipient) and to --reply-to; the owner
answers with --serve-request -i OWNER_KEY --replay-dir DIR, which refuses a request
for another model, older than --max-age, or served before, and seals the predictions
to the reply-to key; --open-reply REQUEST -i USER_KEY checks that a reply answers that
request and writes its predictions (age -d -i USER_KEY opens it too, unchecked).`

type predictCmd struct {
	cli.Globals
	Model               string        `arg:"" optional:"" placeholder:"MODEL" reads:"" help:"The model: APR v2 file (or aprender). With --open-reply, the reply (default: stdin)."`
	Features            string        `arg:"" optional:"" default:"-" placeholder:"FEATURES" reads:"" help:"Feature rows: CSV, .npy or .npz ('-': stdin)."`
	Output              string        `short:"o" placeholder:"FILE" help:"Write the predictions to FILE (atomically; nothing is left behind on failure) instead of stdout."`
	Format              string        `default:"auto" enum:"auto,csv,npy,npz" help:"Format of the predictions: csv, npy, npz, or auto: -o FILE's extension, else the features' format (default: auto)."`
	Proba               bool          `help:"Write class probabilities (one column per class) instead of predictions; classifiers only."`
	Array               string        `placeholder:"NAME" help:"The .npz array holding the features (default: x, or the only one)."`
	BatchSize           int           `default:"0" placeholder:"ROWS" help:"Rows predicted at once (default: about 1 MiB of features); the output does not depend on it."`
	RequireSignature    bool          `help:"Refuse a model without a valid signature by a trusted key (-p; giving -p implies it)."`
	Pubkey              []string      `short:"p" placeholder:"PUB" help:"Trusted public key (PKIX PEM, OpenSSH, minisign); repeatable. A key inside the file is never trusted."`
	Request             bool          `help:"Write a private request instead of predicting: FEATURES sealed to the model's inference_recipient and to --reply-to."`
	ReplyTo             string        `placeholder:"RECIPIENT" help:"With --request: the age1... key (or a file holding it) the reply is sealed to."`
	ServeRequest        bool          `help:"Answer a private request (FEATURES is the request) with a reply sealed to its reply-to key; -i is the model's inference identity."`
	ReplayDir           string        `placeholder:"DIR" help:"With --serve-request: the directory holding the ids of served requests; a request served before is refused."`
	MaxAge              time.Duration `default:"24h" placeholder:"DURATION" help:"With --serve-request: refuse requests made longer ago than this (default: 24h)."`
	OpenReply           string        `placeholder:"REQUEST" help:"Open a reply (MODEL argument or stdin) to REQUEST with -i (the reply-to identity), check that it answers REQUEST, and write its predictions."`
	cli.IdentityFlag    `set:"identity_help=For a sealed model: an X25519 identity file (apr-seal keygen, age-keygen) that opens it; with --serve-request, also the model's inference identity; with --open-reply, the reply-to identity."`
	cli.PassphraseFlags `set:"passphrase_help=For a passphrase-sealed model: ask for its passphrase on the terminal (/dev/tty)."`
	cli.TempDirFlag     `set:"temp_dir_help=Where a piped .npz input, and .npy or .npz predictions of CSV rows, are spooled (default: $TMPDIR or /tmp)."`
}

func (c *predictCmd) Run(env *cli.Env) error {
	if c.RequireSignature && len(c.Pubkey) == 0 {
		return cli.Usagef("--require-signature needs the trusted key: -p PUB")
	}
	if err := c.checkPrivate(); err != nil {
		return err
	}
	if c.BatchSize < 0 {
		return cli.Usagef("--batch-size %d: must be 0 (automatic) or more", c.BatchSize)
	}
	if c.OpenReply != "" && c.Features != "-" {
		return cli.Usagef("--open-reply takes one argument, the reply")
	}
	if c.OpenReply == "" && (c.Model == "-" || c.Model == "") && (c.Features == "-" || c.Features == "") {
		return cli.Usagef("the model and the features cannot both come from stdin: give FEATURES as a file")
	}
	switch {
	case c.Request:
		return c.request(env)
	case c.ServeRequest:
		return c.serve(env)
	case c.OpenReply != "":
		return c.openReply(env)
	}
	keys, err := (&cli.PubkeyFlag{Pubkey: c.Pubkey}).Keys()
	if err != nil {
		return err
	}
	m, mname, err := c.readModel(env, keys, nil)
	if err != nil {
		return err
	}
	p, err := predict.New(m)
	if err != nil {
		return fmt.Errorf("%s: %w", mname, err)
	}
	in, fname, err := env.Input(c.Features)
	if err != nil {
		return err
	}
	defer in.Close()
	rows, inFormat, release, err := predict.Open(in, fname, p.Features(), c.Array, c.TempDir)
	if err != nil {
		return err
	}
	defer release()
	format, err := c.outFormat(inFormat)
	if err != nil {
		return err
	}
	if _, _, _, err := p.Shape(c.Proba); err != nil {
		return cli.Usagef("%s: %v", mname, err)
	}
	out, err := env.Create(c.Output, format != predict.CSV)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := predict.Run(out, rows, p, predict.Options{Format: format, Proba: c.Proba, BatchRows: c.BatchSize, TempDir: c.TempDir}); err != nil {
		return fmt.Errorf("%s: %w", fname, err)
	}
	return out.Commit()
}

// readModel reads the model and verifies it: every checksum, a signature by one of
// keys when there are any, and a seal opened by -i or the passphrase. describe, when
// not nil, sees its header before the tensors are read.
func (c *predictCmd) readModel(env *cli.Env, keys []*sign.PublicKey, describe func(modeltype.Type, *container.Metadata, []container.TensorInfo) error) (model.Model, string, error) {
	u, err := cli.Unsealer(&c.IdentityFlag, &c.PassphraseFlags)
	if err != nil {
		return nil, "", err
	}
	mf, mname, err := env.Input(c.Model)
	if err != nil {
		return nil, "", err
	}
	defer mf.Close()
	m, _, err := apr.ReadModel(mf, apr.ReadOptions{Accept: predict.Supported, Policy: apr.Policy{Signers: keys, Unsealer: u}, Describe: describe})
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", mname, err)
	}
	return m, mname, nil
}

// outFormat is --format, or -o FILE's extension, or the features' format.
func (c *predictCmd) outFormat(in predict.Format) (predict.Format, error) {
	if c.Format != "auto" {
		return predict.ParseFormat(c.Format)
	}
	if f, err := predict.ParseFormat(strings.TrimPrefix(filepath.Ext(c.Output), ".")); err == nil {
		return f, nil
	}
	return in, nil
}

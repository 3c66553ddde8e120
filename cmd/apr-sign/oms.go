package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/oms"
	"github.com/apr-go/apr/lib/printable"
)

// omsCmd signs and verifies models as OpenSSF Model Signing does, with model_signing's
// verbs and flags (its underscore spellings, --private_key etc., work too).
type omsCmd struct {
	Sign   omsSignCmd   `cmd:"" help:"Sign a model (a directory or a file) and write a detached OMS signature (model.sig)."`
	Verify omsVerifyCmd `cmd:"" help:"Verify a model against its OMS signature: exit 0 only if the signature is good and every file matches."`
}

type omsSignCmd struct {
	Key         omsSignKeyCmd  `cmd:"" help:"Sign with an ECDSA private key (P-256, P-384 or P-521, PEM)."`
	Certificate omsSignCertCmd `cmd:"" help:"Sign with an ECDSA private key and its signing certificate; the bundle carries the certificate chain."`
}

type omsVerifyCmd struct {
	Key         omsVerifyKeyCmd      `cmd:"" help:"Verify a key-method signature with the signer's public key (PEM)."`
	Certificate omsVerifyCertCmd     `cmd:"" help:"Verify a certificate-method signature against trusted root certificates (PEM)."`
	Sigstore    omsVerifySigstoreCmd `cmd:"" help:"Verify a keyless Sigstore signature offline: the Rekor entry, the Fulcio certificate and the signer's identity, against a trusted root (--trust-config)."`
}

// omsModelFlags are the flags of every oms command.
type omsModelFlags struct {
	Signature   string   `default:"model.sig" placeholder:"FILE" help:"The signature file (default model.sig in the current directory, as model_signing). Inside the model it is excluded from the signed files."`
	IgnorePaths []string `name:"ignore-paths" aliases:"ignore_paths" sep:"none" placeholder:"PATH" help:"A file or directory to leave out (relative to the current directory, as model_signing); repeat for more. .git, .gitattributes, .github and .gitignore at the model's top are always left out."`
	ModelPath   string   `arg:"" name:"MODEL_PATH" help:"The model: a directory (a checkpoint, a GGUF split set) or a single file."`
}

// omsSignFlags choose how the model is serialized.
type omsSignFlags struct {
	omsModelFlags
	AllowSymlinks bool   `name:"allow-symlinks" aliases:"allow_symlinks" help:"Follow symbolic links and sign their targets under the links' names (default: a link is an error)."`
	Method        string `default:"files" enum:"files,shards" help:"Serialization: files (one digest per file, the default) or shards (one per --shard-size bytes of each file)."`
	ShardSize     *int64 `placeholder:"BYTES" help:"Shard size of --method shards, a positive number of bytes (default 1000000000, the spec's)."`
	HashAlgorithm string `name:"hash-algorithm" default:"sha256" enum:"sha256,blake2b" help:"File digest: sha256 (the default, what every OMS verifier takes) or blake2b."`
}

type omsSignKeyCmd struct {
	omsSignFlags
	PrivateKey string `name:"private-key" aliases:"private_key" required:"" placeholder:"FILE" help:"The PEM private key (PKCS #8 or SEC 1; unencrypted)."`
}

type omsSignCertCmd struct {
	omsSignFlags
	PrivateKey         string   `name:"private-key" aliases:"private_key" required:"" placeholder:"FILE" help:"The PEM private key of the signing certificate."`
	SigningCertificate string   `name:"signing-certificate" aliases:"signing_certificate" required:"" placeholder:"FILE" help:"The PEM signing certificate."`
	CertificateChain   []string `name:"certificate-chain" aliases:"certificate_chain" sep:"none" placeholder:"FILE" help:"PEM certificates of the chain above the signing certificate (intermediates, root); repeatable."`
}

type omsVerifyKeyCmd struct {
	omsModelFlags
	PublicKey           string `name:"public-key" aliases:"public_key" required:"" placeholder:"FILE" help:"The signer's PEM public key."`
	IgnoreUnsignedFiles bool   `name:"ignore-unsigned-files" help:"Check the signed files only; files the signature does not list are not an error."`
}

type omsVerifyCertCmd struct {
	omsModelFlags
	CertificateChain    []string `name:"certificate-chain" aliases:"certificate_chain" required:"" sep:"none" placeholder:"FILE" help:"PEM certificates trusted as roots of the signing certificate's chain; repeatable."`
	IgnoreUnsignedFiles bool     `name:"ignore-unsigned-files" help:"Check the signed files only; files the signature does not list are not an error."`
}

type omsVerifySigstoreCmd struct {
	omsModelFlags
	Identity            string `required:"" placeholder:"ID" help:"The signer's identity: the e-mail or URI in the Fulcio certificate."`
	IdentityProvider    string `name:"identity-provider" aliases:"identity_provider" required:"" placeholder:"URL" help:"The identity's OIDC issuer, as Fulcio recorded it."`
	TrustConfig         string `name:"trust-config" aliases:"trust_config" placeholder:"FILE" help:"Sigstore's trusted root (trusted_root.json, or model_signing's trust configuration holding one): Fulcio's CAs and Rekor's keys. Needed: apr carries none and goes to no network."`
	UseStaging          bool   `name:"use-staging" hidden:"" help:"(model_signing's) Sigstore's staging instance: give its trusted root with --trust-config."`
	IgnoreUnsignedFiles bool   `name:"ignore-unsigned-files" help:"Check the signed files only; files the signature does not list are not an error."`
}

// ignoreRel makes the --ignore-paths and the signature relative to the model root
// as model_signing does (from the current directory); paths outside the model are
// dropped.
func ignoreRel(model string, paths []string) []string {
	root, err := filepath.Abs(model)
	if err != nil {
		return nil
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	var out []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

func (f *omsSignFlags) sign(env *cli.Env, s *oms.Signer, what string) error {
	ser := oms.Serialization{Method: f.Method, HashType: f.HashAlgorithm, AllowSymlinks: f.AllowSymlinks}
	// A pointer: --shard-size 0 is a mistake, not the default.
	switch {
	case f.ShardSize != nil && *f.ShardSize <= 0:
		return cli.Usagef("--shard-size must be a positive number of bytes, not %d", *f.ShardSize)
	case f.Method == oms.MethodFiles && f.ShardSize != nil:
		return cli.Usagef("--shard-size is for --method shards")
	case f.Method == oms.MethodShards:
		ser.ShardSize = oms.DefaultShardSize
		if f.ShardSize != nil {
			ser.ShardSize = *f.ShardSize
		}
	}
	// Recorded: the default exclusions, the user's and the signature file, sorted
	// so the statement is the same bytes for the same inputs.
	ignored := slices.Concat(oms.DefaultIgnores, ignoreRel(f.ModelPath, append(slices.Clone(f.IgnorePaths), f.Signature)))
	slices.Sort(ignored)
	ser.IgnorePaths = slices.Compact(ignored)
	m, err := oms.Hash(f.ModelPath, ser, oms.HashOptions{Warn: func(m string) { env.Warnf("%s", m) }})
	if err != nil {
		return err
	}
	st, err := m.Statement()
	if err != nil {
		return err
	}
	bundle, err := s.Sign(st)
	if err != nil {
		return err
	}
	// The signature is created only now: a pending file inside the model must not
	// be hashed.
	out, err := env.Create(f.Signature, false)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := out.Write(bundle); err != nil {
		return err
	}
	if err := out.Commit(); err != nil {
		return err
	}
	env.Infof("%s: signed %s (%d bytes) as %s (%s, %s) with %s; signature %s",
		printable.String(f.ModelPath), count(m.Files, "file"), m.Bytes, count(len(m.Resources), "resource"), ser.Method, ser.HashType, what, printable.String(out.Name))
	return nil
}

// count is "1 file", "2 files".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// readPEM reads the small PEM file at path and parses it, an error naming path.
func readPEM[T any](path string, parse func([]byte) (T, error)) (T, error) {
	data, err := cli.ReadSmallFile(path, 1<<20)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(data)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func (c *omsSignKeyCmd) Run(env *cli.Env) error {
	k, err := readPEM(c.PrivateKey, oms.ParsePrivateKey)
	if err != nil {
		return err
	}
	return c.sign(env, oms.NewKeySigner(k), "key "+oms.KeyHint(&k.PublicKey))
}

func readCerts(paths []string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, p := range paths {
		cs, err := readPEM(p, oms.ParseCertificates)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

func (c *omsSignCertCmd) Run(env *cli.Env) error {
	k, err := readPEM(c.PrivateKey, oms.ParsePrivateKey)
	if err != nil {
		return err
	}
	leaf, err := readCerts([]string{c.SigningCertificate})
	if err != nil {
		return err
	}
	chain, err := readCerts(c.CertificateChain)
	if err != nil {
		return err
	}
	s, err := oms.NewCertificateSigner(k, leaf[0], chain)
	if err != nil {
		return fmt.Errorf("%s: %w", c.SigningCertificate, err)
	}
	return c.sign(env, s, fmt.Sprintf("certificate %q", leaf[0].Subject.String()))
}

func (f *omsModelFlags) verify(env *cli.Env, v oms.BundleVerifier, ignoreUnsigned bool) error {
	// A model.sig is a few KB: reading stops past oms.MaxBundle (16 MiB).
	bundle, err := cli.ReadSmallFile(f.Signature, oms.MaxBundle)
	if err != nil {
		return err
	}
	exclude := ignoreRel(f.ModelPath, append(slices.Clone(f.IgnorePaths), f.Signature))
	rep, err := oms.VerifyModel(f.ModelPath, v, bundle, oms.VerifyOptions{
		IgnorePaths: exclude, IgnoreUnsigned: ignoreUnsigned,
		Warn: func(m string) { env.Warnf("%s", m) }})
	model, sig := printable.String(f.ModelPath), printable.String(f.Signature)
	var mm *oms.MismatchError
	switch {
	case errors.As(err, &mm):
		return fmt.Errorf("%s: signature %s is good (%s), but %w", model, sig, rep.Signer, err)
	case err != nil:
		return fmt.Errorf("%s: %s: %w", model, sig, err)
	}
	m := rep.Manifest
	if !env.Quiet {
		fmt.Fprintf(env.Stdout, "%s: good OMS signature (%s method) by %s; %s, %s (%s, %s)\n",
			model, rep.Method, rep.Signer, count(rep.Actual.Files, "file"), count(len(m.Resources), "resource"), m.Serialization.Method, m.Serialization.HashType)
	}
	return nil
}

func (c *omsVerifyKeyCmd) Run(env *cli.Env) error {
	k, err := readPEM(c.PublicKey, oms.ParsePublicKey)
	if err != nil {
		return err
	}
	return c.verify(env, &oms.Verifier{Key: k}, c.IgnoreUnsignedFiles)
}

func (c *omsVerifyCertCmd) Run(env *cli.Env) error {
	roots, err := readCerts(c.CertificateChain)
	if err != nil {
		return err
	}
	return c.verify(env, &oms.Verifier{Roots: roots}, c.IgnoreUnsignedFiles)
}

func (c *omsVerifySigstoreCmd) Run(env *cli.Env) error {
	if c.TrustConfig == "" {
		return cli.Usagef("keyless Sigstore signatures are checked offline against a trusted root: give --trust-config TRUSTED_ROOT.json (Sigstore's public-good one is the trusted_root.json target of its TUF repository; 'cosign trusted-root create' or sigstore-go's examples/trusted-root-public-good.json)")
	}
	data, err := cli.ReadSmallFile(c.TrustConfig, 16<<20)
	if err != nil {
		return err
	}
	tr, err := oms.ParseTrustedRoot(data)
	if err != nil {
		return fmt.Errorf("%s: %w", c.TrustConfig, err)
	}
	return c.verify(env, &oms.Keyless{Root: tr, Identity: c.Identity, Issuer: c.IdentityProvider}, c.IgnoreUnsignedFiles)
}

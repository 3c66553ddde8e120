package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/cleanup"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/predict"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/stream"
)

// Private inference (docs/SEALING.md): --request seals feature rows to the model's
// inference recipient, --serve-request answers such a request, --open-reply opens
// the answer.

// checkPrivate refuses flag combinations that do not make sense in the private modes.
func (c *predictCmd) checkPrivate() error {
	modes := 0
	for _, on := range []bool{c.Request, c.ServeRequest, c.OpenReply != ""} {
		if on {
			modes++
		}
	}
	switch {
	case modes > 1:
		return cli.Usagef("--request, --serve-request and --open-reply are three different steps: give one")
	case c.ReplyTo != "" && !c.Request:
		return cli.Usagef("--reply-to is for --request")
	case (c.ReplayDir != "" || c.MaxAge != 24*time.Hour) && !c.ServeRequest:
		return cli.Usagef("--replay-dir and --max-age are for --serve-request")
	case modes == 1 && c.Array != "":
		return cli.Usagef("--array does not apply to private requests: a request's .npz holds its array as x, X or its only one")
	case (c.ServeRequest || c.OpenReply != "") && (c.Proba || c.Format != "auto"):
		return cli.Usagef("the request decides --proba and --format: give them to apr-predict --request")
	case c.OpenReply != "" && len(c.Pubkey) > 0:
		return cli.Usagef("-p checks a model; --open-reply reads no model")
	case c.Request && c.ReplyTo == "":
		return cli.Usagef("--request needs --reply-to age1... (the key the reply is sealed to)")
	case c.ServeRequest && c.ReplayDir == "":
		return cli.Usagef("--serve-request needs --replay-dir DIR, where the ids of served requests are kept to refuse replays")
	case c.ServeRequest && c.MaxAge <= 0:
		return cli.Usagef("--max-age %v: must be positive", c.MaxAge)
	case (c.ServeRequest || c.OpenReply != "") && len(c.Identity) == 0:
		return cli.Usagef("give the identity that opens the request: -i KEY")
	case c.Model == "" && c.OpenReply == "":
		return cli.Usagef("expected the MODEL argument")
	}
	return nil
}

// x25519Identities reads -i as X25519 identities.
func (c *predictCmd) x25519Identities() ([]*seal.X25519Identity, error) {
	parsed, err := c.IdentityFlag.Identities()
	if err != nil {
		return nil, err
	}
	var ids []*seal.X25519Identity
	for _, id := range parsed {
		if x, ok := id.(*seal.X25519Identity); ok {
			ids = append(ids, x)
		}
	}
	return ids, nil
}

// describe returns the ReadOptions.Describe that records the model's id and metadata.
func describe(id *[32]byte, md **container.Metadata) func(modeltype.Type, *container.Metadata, []container.TensorInfo) error {
	return func(t modeltype.Type, m *container.Metadata, tensors []container.TensorInfo) error {
		if m == nil {
			return errors.New("private inference needs an APR v2 model (convert it with apr-encode)")
		}
		var err error
		*id, err = predict.ModelID(t, m, tensors)
		*md = m
		return err
	}
}

// request writes a request for the model: the features as given, sealed to the
// model's inference recipient and to --reply-to.
func (c *predictCmd) request(env *cli.Env) error {
	rs, err := (&cli.RecipientFlag{Recipient: []string{c.ReplyTo}}).Recipients()
	if err != nil {
		return err
	}
	if len(rs) != 1 {
		return cli.Usagef("--reply-to %s: one recipient, please (found %d)", c.ReplyTo, len(rs))
	}
	replyTo, ok := rs[0].(*seal.X25519Recipient)
	if !ok {
		return cli.Usagef("--reply-to: an age1... X25519 recipient")
	}
	keys, err := (&cli.PubkeyFlag{Pubkey: c.Pubkey}).Keys()
	if err != nil {
		return err
	}
	var id [32]byte
	var md *container.Metadata
	var mname string
	if len(keys) > 0 {
		// The recipient must be the one the signature covers: read and verify it all.
		if _, mname, err = c.readModel(env, keys, describe(&id, &md)); err != nil {
			return err
		}
	} else {
		var mf io.ReadCloser
		if mf, mname, err = env.Input(c.Model); err != nil {
			return err
		}
		var info *stream.Info
		if f, ok := mf.(*os.File); ok && c.Model != "-" {
			f.Close()
			info, err = stream.Inspect(c.Model)
		} else {
			info, err = stream.InspectReader(mf)
			mf.Close()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", mname, err)
		}
		if err := predict.Supported(info.Type); err != nil {
			return fmt.Errorf("%s: %w", mname, err)
		}
		if info.Format != "APR v2" {
			return fmt.Errorf("%s: private inference needs an APR v2 model (convert it with apr-encode)", mname)
		}
		infos := make([]container.TensorInfo, len(info.Tensors))
		for i, t := range info.Tensors {
			infos[i] = t.TensorInfo
		}
		md = info.Metadata
		if id, err = predict.ModelID(info.Type, md, infos); err != nil {
			return fmt.Errorf("%s: %w", mname, err)
		}
	}
	to, err := predict.InferenceRecipient(md)
	if err != nil {
		return fmt.Errorf("%s: %w", mname, err)
	}
	req, err := predict.NewRequest(id, replyTo, c.Proba, c.Format)
	if err != nil {
		return err
	}
	in, _, err := env.Input(c.Features)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if err := predict.WriteRequest(out, to, req, in); err != nil {
		return err
	}
	if err := out.Commit(); err != nil {
		return err
	}
	env.Infof("request %s for %s, sealed to %s; keep it to open the reply (--open-reply)", req.IDString(), mname, to)
	return nil
}

// serve answers a request: the model is read (and verified, with -p), the request
// opened with the model's inference identity, checked (model, time, replay) and its
// rows predicted into a reply sealed to the request's reply-to key.
func (c *predictCmd) serve(env *cli.Env) error {
	ids, err := c.x25519Identities()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(c.ReplayDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("--replay-dir %s: not a directory (create it once: mkdir)", c.ReplayDir)
	}
	keys, err := (&cli.PubkeyFlag{Pubkey: c.Pubkey}).Keys()
	if err != nil {
		return err
	}
	var id [32]byte
	var md *container.Metadata
	m, mname, err := c.readModel(env, keys, describe(&id, &md))
	if err != nil {
		return err
	}
	p, err := predict.New(m)
	if err != nil {
		return fmt.Errorf("%s: %w", mname, err)
	}
	to, err := predict.InferenceRecipient(md)
	if err != nil {
		return fmt.Errorf("%s: %w", mname, err)
	}
	var owner *seal.X25519Identity
	for _, id := range ids {
		if id.Recipient().String() == to.String() {
			owner = id
		}
	}
	if owner == nil {
		return fmt.Errorf("%s: no -i identity is the model's inference recipient %s", mname, to)
	}
	in, rname, err := env.Input(c.Features)
	if err != nil {
		return err
	}
	defer in.Close()
	req, feats, err := predict.OpenRequest(in, []*seal.X25519Identity{owner})
	if err != nil {
		return fmt.Errorf("%s: %w", rname, err)
	}
	if err := req.Check(id, time.Now(), c.MaxAge); err != nil {
		return fmt.Errorf("%s: %w", rname, err)
	}
	if err := req.Record(c.ReplayDir); err != nil {
		return fmt.Errorf("%s: %w", rname, err)
	}
	rows, inFormat, release, err := predict.Open(feats, rname, p.Features(), "", c.TempDir)
	if err != nil {
		return err
	}
	defer release()
	if _, _, _, err := p.Shape(req.Proba); err != nil {
		return fmt.Errorf("%s: the request asks for --proba: %w", rname, err)
	}
	// The reply is spooled and written out only once every row was predicted, so a
	// failed request leaves no output at all, not even a reply's header.
	spool, remove, err := cleanup.CreateTemp(c.TempDir, "apr-predict-reply-*")
	if err != nil {
		return err
	}
	defer remove()
	defer spool.Close()
	w, err := predict.CreateReply(spool, req)
	if err != nil {
		return err
	}
	if _, err := predict.Run(w, rows, p, predict.Options{Format: req.RequestFormat(inFormat), Proba: req.Proba, BatchRows: c.BatchSize, TempDir: c.TempDir}); err != nil {
		return fmt.Errorf("%s: %w", rname, err)
	}
	if err := w.Close(); err != nil {
		return err
	}
	return copyOut(env, c.Output, spool, true)
}

// copyOut writes the spool to -o FILE or stdout.
func copyOut(env *cli.Env, path string, spool *os.File, binary bool) error {
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	out, err := env.Create(path, binary)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := io.Copy(out, spool); err != nil {
		return err
	}
	return out.Commit()
}

// openReply checks that the reply answers the request and writes its predictions,
// only once all of them verified.
func (c *predictCmd) openReply(env *cli.Env) error {
	ids, err := c.x25519Identities()
	if err != nil {
		return err
	}
	rf, err := os.Open(c.OpenReply)
	if err != nil {
		return err
	}
	req, _, err := predict.OpenRequest(rf, ids)
	rf.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", c.OpenReply, err)
	}
	reply := c.Model
	if reply == "" {
		reply = "-"
	}
	in, name, err := env.Input(reply)
	if err != nil {
		return err
	}
	defer in.Close()
	pr, err := predict.OpenReply(in, req, ids)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	spool, remove, err := cleanup.CreateTemp(c.TempDir, "apr-predict-reply-*")
	if err != nil {
		return err
	}
	defer remove()
	defer spool.Close()
	if _, err := io.Copy(spool, pr); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	prefix := make([]byte, 8)
	n, _ := spool.ReadAt(prefix, 0)
	return copyOut(env, c.Output, spool, predict.Sniff(prefix[:n]) != predict.CSV)
}

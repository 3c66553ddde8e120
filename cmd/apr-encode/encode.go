package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/printable"
	"github.com/apr-go/apr/lib/seal"
)

// inferenceRecipientKey is lib/predict's RecipientKey, spelled out so that apr-encode
// does not carry the models' code.
const inferenceRecipientKey = "inference_recipient"

// source is the input stream: NumPy files make a new model; otherwise an APR file or stdin.
func (c *encodeCmd) source(env *cli.Env) (apr.Stream, error) {
	numpy := 0
	for _, in := range c.Inputs {
		switch strings.ToLower(filepath.Ext(in)) {
		case ".npy", ".npz":
			numpy++
		}
	}
	if numpy > 0 {
		if numpy != len(c.Inputs) {
			return nil, cli.Usagef("mix of NumPy files and other inputs; give only .npy/.npz files, or one APR file")
		}
		t := modeltype.Custom
		if c.Type != "" {
			var err error
			if t, err = modeltype.ParseType(c.Type); err != nil {
				return nil, cli.Usagef("%v", err)
			}
		}
		created, err := container.CreatedAt()
		if err != nil {
			return nil, err
		}
		md := container.Metadata{CreatedAt: created, Producer: apr.Producer,
			Provenance: map[string]any{"source_format": "numpy"}}
		return apr.NumPyStream(container.Header{Type: t, Metadata: md}, c.Inputs)
	}
	if len(c.Inputs) > 1 {
		return nil, cli.Usagef("re-encoding takes one APR file, got %d inputs", len(c.Inputs))
	}
	in := "-"
	if len(c.Inputs) == 1 {
		in = c.Inputs[0]
	}
	r, name, err := env.Input(in)
	if err != nil {
		return nil, err
	}
	s, err := apr.OpenStream(r)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if c.Type != "" {
		t, err := modeltype.ParseType(c.Type)
		if err != nil {
			return nil, cli.Usagef("%v", err)
		}
		if got := s.Header().Type; got != t {
			return nil, fmt.Errorf("%s: model type is %v, --type says %v (re-encoding never changes the type)", name, got, t)
		}
	}
	return &closing{Stream: s, c: r}, nil
}

type closing struct {
	apr.Stream
	c io.Closer
}

func (c *closing) Close() error { c.Stream.Close(); return c.c.Close() }

// edit applies the metadata options to the header.
// checkPairs refuses a --meta, --hyper or --metric that is not KEY=VALUE with a key.
func (c *encodeCmd) checkPairs() error {
	for flag, kvs := range map[string][]string{"--meta": c.Meta, "--hyper": c.Hyper, "--metric": c.Metric} {
		for _, kv := range kvs {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return cli.Usagef("%s %s: expected KEY=VALUE (KEY= removes KEY, as --unset KEY does)", flag, printable.String(kv))
			}
		}
	}
	return nil
}

// checkRecipient parses --inference-recipient into its age1... string.
func (c *encodeCmd) checkRecipient() error {
	if c.InferenceRecipient == nil || *c.InferenceRecipient == "" {
		return nil
	}
	rs, err := (&cli.RecipientFlag{Recipient: []string{*c.InferenceRecipient}}).Recipients()
	if err != nil {
		return err
	}
	if len(rs) != 1 {
		return cli.Usagef("--inference-recipient: one X25519 recipient, please (found %d)", len(rs))
	}
	r, ok := rs[0].(*seal.X25519Recipient)
	if !ok {
		return cli.Usagef("--inference-recipient: an age1... X25519 recipient")
	}
	s := r.String()
	c.InferenceRecipient = &s
	return nil
}

func (c *encodeCmd) edit(h *container.Header) {
	md := &h.Metadata
	if c.InferenceRecipient != nil {
		if *c.InferenceRecipient == "" {
			delete(md.Extra, inferenceRecipientKey)
		} else {
			if md.Extra == nil {
				md.Extra = map[string]any{}
			}
			md.Extra[inferenceRecipientKey] = *c.InferenceRecipient
		}
	}
	if c.Name != nil {
		md.Name = *c.Name
	}
	if c.Description != nil {
		md.Description = *c.Description
	}
	set := func(m *map[string]any, kvs []string) {
		for _, kv := range kvs {
			k, v, _ := strings.Cut(kv, "=")
			if *m == nil {
				*m = map[string]any{}
			}
			if v == "" { // empty values are omitted (docs/FORMAT.md): KEY= removes KEY
				delete(*m, k)
				continue
			}
			(*m)[k] = parseValue(v)
		}
	}
	set(&md.Custom, c.Meta)
	set(&md.Hyperparameters, c.Hyper)
	set(&md.Metrics, c.Metric)
	for _, k := range c.Unset {
		delete(md.Custom, k)
		delete(md.Hyperparameters, k)
		delete(md.Metrics, k)
	}
}

// parseValue types a command-line value: integer, float, bool, else string.
func parseValue(s string) any {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	if b, err := strconv.ParseBool(s); err == nil && (s == "true" || s == "false") {
		return b
	}
	return s
}

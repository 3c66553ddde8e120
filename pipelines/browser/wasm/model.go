package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/aprender"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/predict"
	"github.com/apr-go/apr/lib/sign"
)

// Loaded is a model that verified, ready to predict.
type Loaded struct {
	Predictor *predict.Predictor
	Type      string
	Features  int
	Classes   int    // 0 for a regression model
	Signer    string // the pinned key's fingerprint when one was given (and so verified)
	SHA256    string // of the file's bytes, the page's cache key
}

// Failure kinds the page words its message by.
const (
	KindDamaged   = "damaged"    // a checksum did not match: the bytes were altered or cut
	KindWrongType = "wrong-type" // not an APR file, or a model with no predict
	KindSignature = "signature"  // no valid signature by the pinned key
	KindInput     = "input"      // the typed rows do not parse or have the wrong width
)

// Error is a failure with its kind.
type Error struct {
	Kind string
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Digest is the hex SHA-256 of b.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Load verifies every checksum of file (and, when pinnedKey is not empty, a
// signature by that key) and builds its predictor. Nothing is built from a file
// that does not verify as a whole.
func Load(file []byte, pinnedKey string) (*Loaded, error) {
	var opts apr.ReadOptions
	var pub *sign.PublicKey
	if strings.TrimSpace(pinnedKey) != "" {
		var err error
		if pub, err = sign.ParsePublicKey([]byte(pinnedKey)); err != nil {
			return nil, fmt.Errorf("the pinned key: %w", err)
		}
		opts.Policy.Signers = []*sign.PublicKey{pub}
	}
	// Refuse a type without a predict as soon as the header is read.
	opts.Accept = func(t modeltype.Type) error {
		if err := predict.Supported(t); err != nil {
			return &Error{KindWrongType, err}
		}
		return nil
	}
	m, _, err := apr.ReadModel(bytes.NewReader(file), opts)
	if err != nil {
		return nil, classify(file, err)
	}
	p, err := predict.New(m)
	if err != nil {
		return nil, &Error{KindWrongType, err}
	}
	l := &Loaded{Predictor: p, Type: m.Type().String(), Features: p.Features(), Classes: p.Classes(), SHA256: Digest(file)}
	if pub != nil {
		l.Signer = pub.Fingerprint()
	}
	return l, nil
}

// classify gives a load error its kind; the order matters, since a signature
// error can wrap a format one.
func classify(file []byte, err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return err
	case errors.Is(err, apr.ErrSignatureInvalid):
		return &Error{KindSignature, err}
	case errors.Is(err, apr.ErrChecksumMismatch):
		return &Error{KindDamaged, err}
	case isAPR(file):
		// An APR file that does not parse (cut short, a mangled header) is
		// damaged; a sealed one needs a key the page does not have.
		if errors.Is(err, container.ErrEncrypted) {
			return &Error{KindWrongType, err}
		}
		return &Error{KindDamaged, err}
	default:
		return &Error{KindWrongType, err}
	}
}

// isAPR tells an APR file (v2, or aprender's two layouts) by its first bytes.
func isAPR(b []byte) bool {
	if _, ok := aprender.Detect(b[:min(len(b), 5)]); ok {
		return true
	}
	return bytes.HasPrefix(b, []byte("APRN"))
}

// Prediction is one row's outcome: a label (classifier), a value (regression) and,
// for a classifier, every class's probability.
type Prediction struct {
	Label  int64
	Value  float64
	Proba  []float64
	Values []float64 // a regression network's outputs, when it has several
}

// Predict reads CSV rows (header optional; commas or runs of spaces and tabs, as
// apr-predict reads them) and predicts each.
func (l *Loaded) Predict(text string) ([]Prediction, error) {
	rows, err := predict.NewCSVRows(strings.NewReader(text), l.Features)
	if errors.Is(err, io.EOF) {
		return nil, &Error{KindInput, errNoRows}
	}
	if err != nil {
		return nil, &Error{KindInput, err}
	}
	var out []Prediction
	var x model.Matrix
	for {
		x, err = rows.Next(x, 1024)
		if err != nil {
			break
		}
		res, err := l.Predictor.Predict(x, false)
		var pr predict.Result
		if err == nil && l.Classes > 0 {
			pr, err = l.Predictor.Predict(x, true)
		}
		if err != nil {
			return nil, &Error{KindInput, fmt.Errorf("rows %d-%d: %w", len(out)+1, len(out)+x.Rows, err)}
		}
		for i := range x.Rows {
			if l.Classes > 0 {
				out = append(out, Prediction{Label: res.Labels[i], Proba: pr.Values[i*pr.Cols : (i+1)*pr.Cols]})
				continue
			}
			v := res.Values[i*res.Cols : (i+1)*res.Cols]
			p := Prediction{Value: v[0]}
			if res.Cols > 1 {
				p.Values = v
			}
			out = append(out, p)
		}
	}
	if !errors.Is(err, io.EOF) {
		return nil, &Error{KindInput, err}
	}
	if len(out) == 0 {
		return nil, &Error{KindInput, errNoRows}
	}
	return out, nil
}

var errNoRows = errors.New("no rows: type or paste one row of numbers per line")

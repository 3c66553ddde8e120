// Command embedded is one static binary with its model inside: a signed .apr is
// compiled in with go:embed beside the public key it must be signed by, the signature
// is checked when the program starts (a binary whose model was swapped or damaged
// refuses to run), and every CSV row on stdin gets a prediction on stdout.
//
//	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o classify ./pipelines/embedded
//	echo '17.99,10.38,122.8,...' | ./classify          # 30 features -> 0 or 1
//
// The model is the demo's LogisticRegression on the Wisconsin breast-cancer data:
// model.apr was made by `go run ./pipelines/train -model breast_cancer` and
// `apr-sign -k signer.key`, with a key from `apr-sign keygen -o signer` whose private
// half was then discarded; signer.pub is its public half. --proba
// prints the probability of each class; --check only verifies the embedded model.
package main

import (
	"bytes"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/predict"
	"github.com/apr-go/apr/lib/sign"
)

//go:embed model.apr
var modelFile []byte

//go:embed signer.pub
var signerKey []byte

func main() {
	proba := flag.Bool("proba", false, "print each class's probability instead of the label")
	check := flag.Bool("check", false, "verify the embedded model and exit")
	flag.Parse()
	p, err := load(modelFile, signerKey)
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedded: the model inside this binary does not verify:", err)
		os.Exit(1)
	}
	if *check {
		return
	}
	if err := run(os.Stdout, os.Stdin, p, *proba); err != nil {
		fmt.Fprintln(os.Stderr, "embedded:", err)
		os.Exit(1)
	}
}

// load verifies every checksum of the model and its signature by the key, then
// builds the predictor.
func load(model, key []byte) (*predict.Predictor, error) {
	pub, err := sign.ParsePublicKey(key)
	if err != nil {
		return nil, err
	}
	m, _, err := apr.ReadModel(bytes.NewReader(model), apr.ReadOptions{Policy: apr.Policy{Signers: []*sign.PublicKey{pub}}})
	if err != nil {
		return nil, err
	}
	return predict.New(m)
}

// run predicts every CSV row of r (header optional) onto w, one line per row.
func run(w io.Writer, r io.Reader, p *predict.Predictor, proba bool) error {
	rows, err := predict.NewCSVRows(r, p.Features())
	if err != nil {
		return err
	}
	_, err = predict.Run(w, rows, p, predict.Options{Format: predict.CSV, Proba: proba})
	return err
}

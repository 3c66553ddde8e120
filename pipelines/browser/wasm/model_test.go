package main

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/predict"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// formatFloat prints v as apr-predict's CSV does: the shortest form that reads
// back to the same float64.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// firstRows are rows 1 and 20 of the breast-cancer data, labels 0 and 1, without
// the label column.
func firstRows(t *testing.T) string {
	lines := strings.Split(string(readFile(t, "../../../testdata/datasets/breast_cancer.csv")), "\n")
	var b strings.Builder
	for _, l := range []string{lines[1], lines[20]} {
		b.WriteString(l[:strings.LastIndexByte(l, ',')] + "\n")
	}
	return b.String()
}

// TestLoadPredict: the embedded pipeline's signed model loads under its key and
// predicts what lib/predict's CSV run (apr-predict's engine) prints.
func TestLoadPredict(t *testing.T) {
	file, key := readFile(t, "../../embedded/model.apr"), readFile(t, "../../embedded/signer.pub")
	l, err := Load(file, string(key))
	if err != nil {
		t.Fatal(err)
	}
	if l.Type != "LogisticRegression" || l.Features != 30 || l.Classes != 2 || l.Signer == "" || l.SHA256 != Digest(file) {
		t.Fatalf("loaded %+v", l)
	}
	rows := firstRows(t)
	got, err := l.Predict(rows)
	if err != nil {
		t.Fatal(err)
	}
	src, err := predict.NewCSVRows(strings.NewReader(rows), l.Features)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := predict.Run(&want, src, l.Predictor, predict.Options{Format: predict.CSV, Proba: true}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("p0,p1\n")
	for _, p := range got {
		b.WriteString(formatFloat(p.Proba[0]) + "," + formatFloat(p.Proba[1]) + "\n")
	}
	if b.String() != want.String() {
		t.Errorf("probabilities\n%s want\n%s", b.String(), want.String())
	}
	if len(got) != 2 || got[0].Label != 0 || got[1].Label != 1 {
		t.Errorf("labels %+v, want 0 and 1", got)
	}
}

// TestLoadRefuses: each bad file fails with its kind and a message that says why.
func TestLoadRefuses(t *testing.T) {
	file, key := readFile(t, "../../embedded/model.apr"), string(readFile(t, "../../embedded/signer.pub"))
	flipped := bytes.Clone(file)
	flipped[len(flipped)/2] ^= 1
	cases := []struct {
		name, kind, msg string
		file            []byte
		key             string
	}{
		{"flipped byte", KindDamaged, "checksum", flipped, key},
		{"flipped byte, no key", KindDamaged, "checksum", flipped, ""},
		{"truncated", KindDamaged, "", file[:len(file)-40], ""},
		{"a CSV file", KindWrongType, "", readFile(t, "../../../testdata/datasets/breast_cancer.csv"), ""},
		{"a GGUF file", KindWrongType, "GGUF", readFile(t, "../../../testdata/gguf/tiny-llama.f32.gguf"), ""},
		{"empty", KindWrongType, "", nil, ""},
		{"a KMeans model", KindWrongType, "a KMeans model has no predict", kmeans(t), ""},
		{"unsigned, key pinned", KindSignature, "signature", unsigned(t), key},
	}
	for _, c := range cases {
		_, err := Load(c.file, c.key)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		t.Logf("%s: %s: %v", c.name, e.Kind, err)
		if e.Kind != c.kind || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, e.Kind, err, c.kind, c.msg)
		}
	}
}

// TestPredictInput: typed rows of the wrong width or with words fail with the line.
func TestPredictInput(t *testing.T) {
	l, err := Load(readFile(t, "../../embedded/model.apr"), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"", "1,2,3\n", "\n\n"} {
		_, err := l.Predict(in)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindInput {
			t.Errorf("%q: %v, want an input error", in, err)
		}
		t.Logf("%q: %v", in, err)
	}
}

// kmeans is a KMeans model file: a valid APR of a type with no predict.
func kmeans(t *testing.T) []byte {
	var b bytes.Buffer
	s := stream.FromTensors(modeltype.KMeans, container.Metadata{}, []tensor.Tensor{tensor.F32("centroids", []float32{0, 1, 2, 3})})
	if err := stream.Reencode(&b, s, nil, false); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// unsigned is an unsigned LogisticRegression file: the embedded model without
// its signature block.
func unsigned(t *testing.T) []byte {
	var b bytes.Buffer
	s, err := stream.Open(bytes.NewReader(readFile(t, "../../embedded/model.apr")))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Reencode(&b, s, nil, false); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

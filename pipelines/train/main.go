// Command train fits the two classical models of the demo on real data sets and saves
// them as .apr files with the library API (lib/apr, lib/model):
//
//   - LinearRegression on scikit-learn's diabetes data (10 raw features),
//   - LogisticRegression on the Wisconsin breast-cancer data (30 features,
//     standardised; the scaling is folded into the saved coefficients, so the model
//     takes raw features).
//
// Each model is fitted on a fixed 75% of the rows (every fourth row is held out) and
// scored on the rest; the scores go into the file's metrics.
//
//	go run ./pipelines/train -data testdata/datasets -out /tmp/models
//
// -model diabetes (or breast_cancer) fits only that model, so a build system can make
// each file from its own data set (pipelines/Makefile does).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/model"
)

func main() {
	data := flag.String("data", "testdata/datasets", "directory of the data sets")
	out := flag.String("out", ".", "directory for the .apr files")
	only := flag.String("model", "", "fit only this model: diabetes or breast_cancer (default: both)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("train: ")
	fits := []struct {
		name string
		fit  func(dir, out string) error
	}{{"diabetes", diabetes}, {"breast_cancer", breastCancer}}
	known := *only == ""
	for _, f := range fits {
		known = known || f.name == *only
	}
	if !known {
		log.Fatalf("unknown model %q: diabetes or breast_cancer", *only)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, f := range fits {
		if *only != "" && f.name != *only {
			continue
		}
		if err := f.fit(*data, *out); err != nil {
			log.Fatal(err)
		}
	}
}

// split holds out every fourth row.
func split(x model.Matrix, y []float64) (trX, teX model.Matrix, trY, teY []float64) {
	var tr, te [][]float64
	for i := 0; i < x.Rows; i++ {
		if i%4 == 3 {
			te, teY = append(te, x.Row(i)), append(teY, y[i])
		} else {
			tr, trY = append(tr, x.Row(i)), append(trY, y[i])
		}
	}
	trX, _ = model.FromRows(tr)
	teX, _ = model.FromRows(te)
	return
}

func diabetes(dir, out string) error {
	x, err := model.LoadCSV(filepath.Join(dir, "diabetes_data_raw.csv.gz"), model.CSVOptions{})
	if err != nil {
		return err
	}
	t, err := model.LoadCSV(filepath.Join(dir, "diabetes_target.csv.gz"), model.CSVOptions{})
	if err != nil {
		return err
	}
	trX, teX, trY, teY := split(x, t.Col(0))
	m := model.NewLinearRegression()
	if err := m.Fit(trX, trY); err != nil {
		return err
	}
	trR2, _ := m.Score(trX, trY)
	teR2, _ := m.Score(teX, teY)
	path := filepath.Join(out, "diabetes.apr")
	err = apr.Save(path, m, apr.SaveOptions{
		Name:            "diabetes-ols",
		Description:     "Ordinary least squares on scikit-learn's diabetes data (10 raw features)",
		Hyperparameters: map[string]any{"fit_intercept": true, "train_rows": int64(trX.Rows)},
		Metrics:         map[string]any{"r2_train": trR2, "r2_test": teR2},
	})
	fmt.Printf("LinearRegression   diabetes       %d train / %d test rows   R² train %.4f  test %.4f  -> %s\n",
		trX.Rows, teX.Rows, trR2, teR2, path)
	return err
}

func breastCancer(dir, out string) error {
	all, err := model.LoadCSV(filepath.Join(dir, "breast_cancer.csv"), model.CSVOptions{SkipLines: 1})
	if err != nil {
		return err
	}
	x, y, err := all.SplitTarget(all.Cols - 1)
	if err != nil {
		return err
	}
	trX, teX, trY, teY := split(x, y)
	std, mean, scale, err := model.Standardize(trX)
	if err != nil {
		return err
	}
	m := model.NewLogisticRegression()
	m.LearningRate, m.MaxIter = 0.1, 2000
	if err := m.Fit(std, trY); err != nil {
		return err
	}
	// Fold the standardisation into the parameters: w·(x-mean)/scale + b.
	for j := range m.Coefficients {
		w := float64(m.Coefficients[j]) / scale[j]
		m.Intercept -= float32(w * mean[j])
		m.Coefficients[j] = float32(w)
	}
	trAcc := accuracy(m, trX, trY)
	teAcc := accuracy(m, teX, teY)
	path := filepath.Join(out, "breast_cancer.apr")
	err = apr.Save(path, m, apr.SaveOptions{
		Name:            "breast-cancer-logreg",
		Description:     "Logistic regression on the Wisconsin breast-cancer data (30 raw features; 1 = benign)",
		Hyperparameters: map[string]any{"learning_rate": m.LearningRate, "max_iter": int64(m.MaxIter), "standardised": true},
		Metrics:         map[string]any{"accuracy_train": trAcc, "accuracy_test": teAcc},
	})
	fmt.Printf("LogisticRegression breast_cancer  %d train / %d test rows   accuracy train %.4f  test %.4f  -> %s\n",
		trX.Rows, teX.Rows, trAcc, teAcc, path)
	return err
}

func accuracy(m *model.LogisticRegressionModel, x model.Matrix, y []float64) float64 {
	pred, err := m.Predict(x)
	if err != nil {
		return 0
	}
	return model.Accuracy(y, pred)
}

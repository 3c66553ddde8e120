package model_test

import (
	"fmt"
	"path/filepath"

	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// Fit ordinary least squares on the diabetes data set and rebuild the model from
// its config and tensors, as a loader does.
func ExampleLinearRegressionModel() {
	dir := filepath.Join("..", "..", "testdata", "datasets")
	x, err := model.LoadCSV(filepath.Join(dir, "diabetes_data_raw.csv.gz"), model.CSVOptions{})
	if err != nil {
		panic(err)
	}
	y, err := model.LoadCSV(filepath.Join(dir, "diabetes_target.csv.gz"), model.CSVOptions{})
	if err != nil {
		panic(err)
	}
	lr := model.NewLinearRegression()
	if err := lr.Fit(x, y.Data); err != nil {
		panic(err)
	}
	r2, _ := lr.Score(x, y.Data)
	fmt.Printf("R^2 = %.4f\n", r2)

	tensors := map[string]tensor.Tensor{}
	for _, t := range lr.Tensors() {
		tensors[t.Name] = t
		fmt.Println(t.Name, t.DType, t.Shape)
	}
	back, err := model.Decode(modeltype.LinearRegression, lr.Config(), tensors)
	if err != nil {
		panic(err)
	}
	fmt.Println(back.Type())
	// Output:
	// R^2 = 0.5177
	// coefficients F32 [10]
	// intercept F32 [1]
	// LinearRegression
}

// Classify breast_cancer with logistic regression on standardised features.
func ExampleLogisticRegressionModel() {
	m, err := model.LoadCSV(filepath.Join("..", "..", "testdata", "datasets", "breast_cancer.csv"), model.CSVOptions{SkipLines: 1})
	if err != nil {
		panic(err)
	}
	x, y, _ := m.SplitTarget(-1)
	xs, _, _, _ := model.Standardize(x)
	clf := model.NewLogisticRegression()
	clf.LearningRate = 0.1
	if err := clf.Fit(xs, y); err != nil {
		panic(err)
	}
	acc, _ := clf.Score(xs, y)
	fmt.Printf("training accuracy %.2f over %d samples\n", acc, x.Rows)
	// Output:
	// training accuracy 0.99 over 569 samples
}

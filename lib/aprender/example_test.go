package aprender_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apr-go/apr/lib/aprender"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/tensor"
)

// Import aprender's MNIST logistic regression and use it as a lib/model model.
func ExampleRead() {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "aprender", "mnist_784x2.apr"))
	if err != nil {
		panic(err)
	}
	f, err := aprender.Read(data)
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Layout, f.Version, f.ModelType, f.Metadata["aprender_version"])
	for _, t := range f.Tensors {
		fmt.Println(t.Name, t.DType, t.Shape)
	}
	byName := make(map[string]tensor.Tensor)
	for _, t := range f.Tensors {
		byName[t.Name] = t
	}
	m, err := model.Decode(f.ModelType, f.Config, byName)
	if err != nil {
		panic(err)
	}
	clf := m.(*model.LogisticRegressionModel)
	fmt.Println(clf.LearningRate, clf.MaxIter, clf.Tol)
	// Output:
	// aprender APRN v1 1.0 LogisticRegression 0.11.0
	// coefficients F32 [784]
	// intercept F32 [1]
	// 0.01 100 0.0001
}

package apr_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
)

// The Quick Start of the .apr case study, in Go: fit, save, load typed.
func Example_quickStart() {
	// Train model: y = 2*x0 - 3*x1 + 1.
	x, _ := model.FromRows([][]float64{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 1}})
	y := []float64{1, 3, -2, 0, 2}
	m := model.NewLinearRegression()
	if err := m.Fit(x, y); err != nil {
		log.Fatal(err)
	}

	// Save.
	dir, _ := os.MkdirTemp("", "quickstart")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.apr")
	if err := apr.Save(path, m, apr.SaveOptions{Name: "quickstart"}); err != nil {
		log.Fatal(err)
	}

	// Load, typed.
	loaded, err := apr.Load[*model.LinearRegressionModel](path, modeltype.LinearRegression)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("coefficients %.3f intercept %.3f\n", loaded.Coefficients, loaded.Intercept)

	// Loading it as another type fails fast.
	_, err = apr.Load[*model.LogisticRegressionModel](path, modeltype.LogisticRegression)
	fmt.Println(err != nil)
	// Output:
	// coefficients [2.000 -3.000] intercept 1.000
	// true
}

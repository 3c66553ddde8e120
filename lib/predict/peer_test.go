package predict

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/internal/peertest"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/npy"
)

// sklearnPredict gives scikit-learn's estimators the coefficients of apr's models
// (float32 values, widened) and predicts the same rows.
const sklearnPredict = `
import sys, numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression
d = sys.argv[1]
x = np.load(d + "/x.npy")
lin = LinearRegression()
lin.coef_, lin.intercept_ = np.load(d + "/lin_coef.npy"), float(np.load(d + "/lin_icpt.npy")[0])
np.save(d + "/sk_lin.npy", lin.predict(x))
for name in ("bin", "multi"):
    coef, icpt = np.load(d + "/%s_coef.npy" % name), np.load(d + "/%s_icpt.npy" % name)
    k = 2 if coef.ndim == 1 else coef.shape[0]
    lr = LogisticRegression(multi_class="multinomial" if k > 2 else "auto")
    lr.coef_ = coef.reshape(1, -1) if k == 2 else coef
    lr.intercept_ = icpt
    lr.classes_ = np.arange(k)
    np.save(d + "/sk_%s_label.npy" % name, lr.predict(x).astype(np.int64))
    np.save(d + "/sk_%s_proba.npy" % name, np.ascontiguousarray(lr.predict_proba(x)))
`

func saveF64(t *testing.T, path string, shape []int64, v []float64) {
	t.Helper()
	b := make([]byte, 0, 8*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	if err := npy.WriteFile(path, dtype.F64, shape, b); err != nil {
		t.Fatal(err)
	}
}

func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}

func loadF64(t *testing.T, path string) []float64 {
	t.Helper()
	h, b, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, h.Elems())
	if err := npy.Float64s(out, b, h.DType); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSklearnPeer: scikit-learn's LinearRegression and LogisticRegression (binary,
// and multinomial softmax) given the same coefficients predict the same values,
// labels and probabilities for the same rows as apr-predict's engine, to 1e-9
// relative (both sum the same float64 products, in another order).
func TestSklearnPeer(t *testing.T) {
	py := peertest.Python(t, "sklearn", "python3-sklearn")
	dir := t.TempDir()
	lin, x := diabetes(t)
	// the diabetes rows, scaled so one logistic model splits them and another
	// spreads them over 3 classes without saturating
	xs, _, _, err := model.Standardize(x)
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := breastCancer(t)
	bin.Coefficients = bin.Coefficients[:10]
	multi := model.NewMultinomialLogisticRegression(3)
	multi.Coefficients = make([]float32, 30)
	for i := range multi.Coefficients {
		multi.Coefficients[i] = float32(math.Sin(float64(i)+1)) / 2
	}
	multi.Intercepts = []float32{0.3, -0.1, 0.05}
	saveF64(t, filepath.Join(dir, "x.npy"), []int64{int64(xs.Rows), int64(xs.Cols)}, xs.Data)
	saveF64(t, filepath.Join(dir, "lin_coef.npy"), []int64{10}, widen(lin.Coefficients))
	saveF64(t, filepath.Join(dir, "lin_icpt.npy"), []int64{1}, []float64{float64(lin.Intercept)})
	saveF64(t, filepath.Join(dir, "bin_coef.npy"), []int64{10}, widen(bin.Coefficients))
	saveF64(t, filepath.Join(dir, "bin_icpt.npy"), []int64{1}, []float64{float64(bin.Intercept)})
	saveF64(t, filepath.Join(dir, "multi_coef.npy"), []int64{3, 10}, widen(multi.Coefficients))
	saveF64(t, filepath.Join(dir, "multi_icpt.npy"), []int64{3}, widen(multi.Intercepts))
	cmd := exec.Command(py, "-c", sklearnPredict, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scikit-learn: %v\n%s", err, out)
	}
	in, err := os.ReadFile(filepath.Join(dir, "x.npy"))
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want []float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, scikit-learn %d", what, len(got), len(want))
		}
		worst := 0.0
		for i := range want {
			d := math.Abs(got[i]-want[i]) / max(1, math.Abs(want[i]))
			worst = max(worst, d)
			if d > 1e-9 {
				t.Fatalf("%s, value %d: %v, scikit-learn %v", what, i, got[i], want[i])
			}
		}
		t.Logf("%s: %d values, largest relative difference %.3g", what, len(want), worst)
	}
	output := func(m model.Model, proba bool) []float64 {
		out := filepath.Join(dir, "apr.npy")
		if err := os.WriteFile(out, run(t, m, in, Options{Format: NPY, Proba: proba}), 0o644); err != nil {
			t.Fatal(err)
		}
		return loadF64(t, out)
	}
	near("LinearRegression", output(lin, false), loadF64(t, filepath.Join(dir, "sk_lin.npy")))
	for name, m := range map[string]*model.LogisticRegressionModel{"bin": bin, "multi": multi} {
		near(name+" labels", output(m, false), loadF64(t, filepath.Join(dir, "sk_"+name+"_label.npy")))
		near(name+" probabilities", output(m, true), loadF64(t, filepath.Join(dir, "sk_"+name+"_proba.npy")))
	}
}

package distill

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/npy"
)

func f64bytes(v []float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func TestLoadData(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	csv := write("h.csv", "\nlabel,a,b\n1,0.5,2\n0,1.5,3\n")
	d, err := LoadData(csv, LoadOptions{LabelColumn: "label"})
	if err != nil || d.X.Rows != 2 || d.X.Cols != 2 || d.X.Data[2] != 1.5 || d.Y[0] != 1 || d.Y[1] != 0 {
		t.Fatalf("header CSV: %+v %v", d, err)
	}
	if d, err = LoadData(csv, LoadOptions{LabelColumn: "0"}); err != nil || d.Y[0] != 1 {
		t.Errorf("label column 0: %+v %v", d, err)
	}
	plain := write("p.csv", "0.5,2,1\n1.5,3,0\n")
	if d, err = LoadData(plain, LoadOptions{LabelColumn: "none"}); err != nil || d.Y != nil || d.X.Cols != 3 {
		t.Errorf("unlabelled: %+v %v", d, err)
	}
	for _, c := range []struct{ file, col, want string }{
		{csv, "nope", `"nope": not in the header`},
		{plain, "x", "no header line"},
		{plain, "3", "the file has 3 columns"},
		{write("f.csv", "1,2.5\n"), "", "row 1, column 2: label 2.5"},
		{write("r.csv", "1,2\n3\n"), "", "line 2"},
	} {
		if _, err := LoadData(c.file, LoadOptions{LabelColumn: c.col}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s --label-column %q: %v, want %q", filepath.Base(c.file), c.col, err, c.want)
		}
	}

	x := []float64{1, 2, 3, 4, 5, 6}
	xp, yp := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
	if err := npy.WriteFile(xp, dtype.F64, []int64{3, 2}, f64bytes(x)); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(yp, dtype.U8, []int64{3}, []byte{2, 0, 1}); err != nil {
		t.Fatal(err)
	}
	if d, err = LoadData(xp, LoadOptions{Labels: yp}); err != nil || d.X.Rows != 3 || d.X.Data[5] != 6 || d.Y[0] != 2 {
		t.Errorf("npy: %+v %v", d, err)
	}
	zp := filepath.Join(dir, "d.npz")
	f, err := os.Create(zp)
	if err != nil {
		t.Fatal(err)
	}
	zw := npy.NewNPZWriter(f, npy.Store)
	w, err := zw.Create("X", dtype.F64, []int64{3, 2})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(f64bytes(x))
	w, err = zw.Create("y", dtype.F64, []int64{3})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(f64bytes([]float64{1, 1, 7}))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if d, err = LoadData(zp, LoadOptions{}); err != nil || d.X.Cols != 2 || d.Y[2] != 7 {
		t.Errorf("npz: %+v %v", d, err)
	}
	if _, err := LoadData(xp, LoadOptions{Labels: xp}); err == nil || !strings.Contains(err.Error(), "one label per row") {
		t.Errorf("2-D labels: %v", err)
	}
}

func TestSplitStratified(t *testing.T) {
	d, err := LoadData(digitsPath, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	train, val, err := Split(d, 0.25, 0)
	if err != nil {
		t.Fatal(err)
	}
	count := func(y []int) map[int]int {
		m := map[int]int{}
		for _, c := range y {
			m[c]++
		}
		return m
	}
	// scikit-learn's train_test_split(test_size=0.25, stratify=y) sizes: 450 test
	// rows, each class floor(450·n/1797) or one more (the largest remainders).
	if val.X.Rows != 450 || train.X.Rows != 1347 {
		t.Errorf("split %d/%d rows, want 1347/450", train.X.Rows, val.X.Rows)
	}
	all, v := count(d.Y), count(val.Y)
	for c, n := range all {
		lo := 450 * n / 1797
		if v[c] != lo && v[c] != lo+1 {
			t.Errorf("class %d: %d of %d rows in validation, want %d or %d", c, v[c], n, lo, lo+1)
		}
	}
	if train.X.Rows+val.X.Rows != d.X.Rows || len(train.Y) != train.X.Rows {
		t.Errorf("split %d + %d of %d rows", train.X.Rows, val.X.Rows, d.X.Rows)
	}
	again, _, _ := Split(d, 0.25, 0)
	other, _, _ := Split(d, 0.25, 1)
	same := func(a, b Data) bool {
		for i := range a.X.Data {
			if a.X.Data[i] != b.X.Data[i] {
				return false
			}
		}
		return true
	}
	if !same(train, again) || same(train, other) {
		t.Error("the split does not follow its seed")
	}
	if _, _, err := Split(d, 1, 0); err == nil {
		t.Error("split 1 accepted")
	}
}

// TestLoadTargets: regression targets from a CSV column and from a separate CSV
// labels file (the diabetes set's layout), split along with their rows.
func TestLoadTargets(t *testing.T) {
	dir := t.TempDir()
	x := filepath.Join(dir, "x.csv")
	y := filepath.Join(dir, "y.csv")
	os.WriteFile(x, []byte("1 2\n3 4\n5 6\n7 8\n"), 0o600)
	os.WriteFile(y, []byte("0.5\n-1.25\n3\n4\n"), 0o600)
	d, err := LoadData(x, LoadOptions{Labels: y, LabelColumn: "-1", Targets: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.X.Cols != 2 || d.Y != nil || len(d.T) != 4 || d.T[1] != -1.25 {
		t.Fatalf("got %d columns, Y %v, T %v", d.X.Cols, d.Y, d.T)
	}
	tr, va, err := Split(d, 0.25, 1)
	if err != nil || len(tr.T) != 3 || len(va.T) != 1 {
		t.Fatalf("split: %v, %d and %d targets", err, len(tr.T), len(va.T))
	}
	if d, err = LoadData(x, LoadOptions{Targets: true}); err != nil || d.X.Cols != 1 || d.T[3] != 8 {
		t.Fatalf("column targets: %v %+v", err, d)
	}
	// Real-valued labels are not classes; a short labels file and a label column
	// together with a labels file are refused, naming the file.
	if _, err := LoadData(x, LoadOptions{Labels: y}); err == nil || !strings.Contains(err.Error(), "row 1: label 0.5") {
		t.Fatalf("class labels 0.5: %v", err)
	}
	os.WriteFile(y, []byte("1\n2\n"), 0o600)
	if _, err := LoadData(x, LoadOptions{Labels: y, Targets: true}); err == nil || !strings.Contains(err.Error(), "2 labels for the 4 rows") {
		t.Fatalf("short labels: %v", err)
	}
	if _, err := LoadData(x, LoadOptions{Labels: y, LabelColumn: "0"}); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Fatalf("both: %v", err)
	}
}

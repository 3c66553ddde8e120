package modeltype

import (
	"strings"
	"testing"
)

func TestParseType(t *testing.T) {
	for _, s := range []string{"LinearRegression", "linearregression", "linear-regression", "linear_regression", "LINEAR_REGRESSION", "0x0001"} {
		if got, err := ParseType(s); err != nil || got != LinearRegression {
			t.Errorf("ParseType(%q) = %v, %v", s, got, err)
		}
	}
	if got, err := ParseType("pca"); err != nil || got != PCA {
		t.Errorf("pca: %v %v", got, err)
	}
	_, err := ParseType("linear-regresion")
	if err == nil || !strings.Contains(err.Error(), "LinearRegression") || !strings.Contains(err.Error(), "MixtureOfExperts") {
		t.Errorf("unknown name: %v (want the valid names listed)", err)
	}
	if _, err := ParseType("0x00FE"); err == nil {
		t.Error("unknown code accepted")
	}
	if len(Types()) != 18 {
		t.Errorf("%d types, want the registry's 18", len(Types()))
	}
}

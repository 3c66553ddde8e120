// Package modeltype is the registry of the 18 model-type codes an APR header carries
// (the u16 at offset 6). It is a leaf: the file format needs the codes, not the models,
// so lib/container imports this package and never lib/model.
package modeltype

import (
	"fmt"
	"strings"
)

// Type is the u16 model-type code stored in the APR header.
type Type uint16

// The model types of the .apr case study's table.
const (
	LinearRegression   Type = 0x0001
	LogisticRegression Type = 0x0002
	DecisionTree       Type = 0x0003
	RandomForest       Type = 0x0004
	GradientBoosting   Type = 0x0005
	KMeans             Type = 0x0006
	PCA                Type = 0x0007
	NaiveBayes         Type = 0x0008
	KNN                Type = 0x0009
	SVM                Type = 0x000A
	NgramLM            Type = 0x0010
	TfIdf              Type = 0x0011
	CountVectorizer    Type = 0x0012
	NeuralSequential   Type = 0x0020
	NeuralCustom       Type = 0x0021
	ContentRecommender Type = 0x0030
	MixtureOfExperts   Type = 0x0040
	Custom             Type = 0x00FF
)

var typeNames = map[Type]string{
	LinearRegression:   "LinearRegression",
	LogisticRegression: "LogisticRegression",
	DecisionTree:       "DecisionTree",
	RandomForest:       "RandomForest",
	GradientBoosting:   "GradientBoosting",
	KMeans:             "KMeans",
	PCA:                "Pca",
	NaiveBayes:         "NaiveBayes",
	KNN:                "Knn",
	SVM:                "Svm",
	NgramLM:            "NgramLm",
	TfIdf:              "TfIdf",
	CountVectorizer:    "CountVectorizer",
	NeuralSequential:   "NeuralSequential",
	NeuralCustom:       "NeuralCustom",
	ContentRecommender: "ContentRecommender",
	MixtureOfExperts:   "MixtureOfExperts",
	Custom:             "Custom",
}

// Known reports whether t is one of the registry's codes.
func (t Type) Known() bool { _, ok := typeNames[t]; return ok }

// String returns the type's name as in the case study ("LinearRegression"), or
// "Type(0x....)" for an unknown code.
func (t Type) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("Type(0x%04X)", uint16(t))
}

// ParseType accepts a registry name in the spellings people type (case-insensitive,
// with or without '-' and '_': "LinearRegression", "linear-regression",
// "linear_regression") or a code such as "0x0002". An unknown name's error lists the
// valid ones.
func ParseType(s string) (Type, error) {
	key := fold(s)
	for t, n := range typeNames {
		if fold(n) == key {
			return t, nil
		}
	}
	var code uint16
	if _, err := fmt.Sscanf(s, "0x%x", &code); err == nil && Type(code).Known() {
		return Type(code), nil
	}
	names := make([]string, 0, len(typeNames))
	for _, t := range Types() {
		names = append(names, t.String())
	}
	return 0, fmt.Errorf("unknown model type %q (known: %s)", s, strings.Join(names, ", "))
}

// fold maps the spellings of one name onto one key.
func fold(s string) string {
	return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s))
}

// Types returns every registry code in ascending order.
func Types() []Type {
	var out []Type
	for c := 0; c <= 0xFF; c++ {
		if Type(c).Known() {
			out = append(out, Type(c))
		}
	}
	return out
}

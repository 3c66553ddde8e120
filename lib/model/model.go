// Package model holds apr's model types: the registry of the 18 model-type codes that
// files carry in their header, the Model interface every implementation satisfies, and
// the classical models themselves.
//
// Every model is a type code, a config (a map stored as MessagePack in the file's
// metadata under "model_config") and named tensors. That one shape lets every transform
// (quantize, compress, convert) work on every model, including types this package can
// only carry and not run.
package model

import (
	"fmt"

	"github.com/apr-go/apr/lib/dtype"
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

// ParseType accepts a registry name (case-insensitive) or a code such as "0x0002".
func ParseType(s string) (Type, error) {
	for t, n := range typeNames {
		if equalFold(n, s) {
			return t, nil
		}
	}
	var code uint16
	if _, err := fmt.Sscanf(s, "0x%x", &code); err == nil && Type(code).Known() {
		return Type(code), nil
	}
	return 0, fmt.Errorf("unknown model type %q", s)
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

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Tensor is one named tensor of a model, its data raw little-endian and row-major.
type Tensor struct {
	Name  string
	DType dtype.DType
	Shape []int64
	Data  []byte
}

// Model is what every implementation provides so that it can be saved.
type Model interface {
	// Type is the registry code written to the header.
	Type() Type
	// Config is the model's configuration (hyperparameters needed to rebuild it),
	// stored as MessagePack under the metadata key "model_config". Values are plain:
	// strings, bools, numbers, []any and map[string]any.
	Config() map[string]any
	// Tensors returns the model's parameters in a fixed order.
	Tensors() []Tensor
}

// Decoder rebuilds a model from its config and tensors (all float tensors already
// converted to F32 by the loader). It must validate shapes and never panic.
type Decoder func(config map[string]any, tensors map[string]Tensor) (Model, error)

var decoders = map[Type]Decoder{}

// Register installs the decoder for t. Implementations call it from init.
func Register(t Type, d Decoder) { decoders[t] = d }

// Decode rebuilds a model of type t; it fails for a type with no implementation.
func Decode(t Type, config map[string]any, tensors map[string]Tensor) (Model, error) {
	d, ok := decoders[t]
	if !ok {
		return nil, fmt.Errorf("model type %v has no implementation in this build", t)
	}
	return d(config, tensors)
}

// Package model holds apr's models: the Model interface every implementation
// satisfies, the decoder registry, and the classical models themselves (fit and
// predict). The type codes are lib/modeltype's; reading and writing models as files is
// lib/modelfile's, so the models know nothing of the file format.
//
// Every model is a type code, a config (a map stored as MessagePack in the file's
// metadata under "model_config") and named tensors. That one shape lets every transform
// (quantize, compress, convert) work on every model, including types this package can
// only carry and not run.
package model

import (
	"fmt"

	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// Model is what every implementation provides so that it can be saved.
type Model interface {
	// Type is the registry code written to the header.
	Type() modeltype.Type
	// Config is the model's configuration (hyperparameters needed to rebuild it),
	// stored as MessagePack under the metadata key "model_config". Values are plain:
	// strings, bools, numbers, []any and map[string]any.
	Config() map[string]any
	// Tensors returns the model's parameters in a fixed order.
	Tensors() []tensor.Tensor
}

// Decoder rebuilds a model from its config and tensors (all float tensors already
// converted to F32 by the loader). It must validate shapes and never panic.
type Decoder func(config map[string]any, tensors map[string]tensor.Tensor) (Model, error)

var decoders = map[modeltype.Type]Decoder{}

// Register installs the decoder for t. Implementations call it from init.
func Register(t modeltype.Type, d Decoder) { decoders[t] = d }

// register installs decode for t, naming the type in its errors.
func register[M Model](t modeltype.Type, decode func(map[string]any, map[string]tensor.Tensor) (M, error)) {
	Register(t, func(cfg map[string]any, tensors map[string]tensor.Tensor) (Model, error) {
		m, err := decode(cfg, tensors)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", t, err)
		}
		return m, nil
	})
}

// Decode rebuilds a model of type t; it fails for a type with no implementation.
func Decode(t modeltype.Type, config map[string]any, tensors map[string]tensor.Tensor) (Model, error) {
	d, ok := decoders[t]
	if !ok {
		return nil, fmt.Errorf("model type %v has no implementation in this build", t)
	}
	return d(config, tensors)
}

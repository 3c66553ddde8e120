package llm

import (
	"io"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/tensor"
)

// Family is the code of a family whose conversion is more than the renaming its Arch
// entry describes: one file per family (llama.go, ...), as the converter has one class
// per family. Every method has a no-op in plain, which a family embeds, so that it
// writes only what it changes.
type Family interface {
	// KVs returns the family's hyperparameter keys given the base converter's (base),
	// in the order the family's converter class writes them: most append to base, some
	// replace it.
	KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error)
	// Vocab returns the tokenizer keys with what the family's set_vocab writes beyond
	// the common vocabulary (kvs).
	Vocab(cp *Checkpoint, kvs []gguf.KV) ([]gguf.KV, error)
	// Generated returns the tensors the converter computes from the config rather than
	// reads from the checkpoint (Llama 3's rope_freqs.weight), in llama.cpp's form;
	// they come before the checkpoint's, as generate_extra_tensors puts them.
	Generated(cp *Checkpoint) ([]tensor.Tensor, error)
	// Transform turns tensor info (its GGUF name given, its data in the checkpoint's
	// dtype) into llama.cpp's form, as the family's modify_tensors does; 1-D tensors
	// are widened to F32 after it. With r nil it returns only the info, for the
	// stream's table; otherwise the data too, reading r one piece at a time where the
	// tensor is large.
	Transform(cp *Checkpoint, info container.TensorInfo, r io.Reader) (container.TensorInfo, io.Reader, error)
	// HFConfig writes the family's own config.json fields from a GGUF's keys (g) into
	// cfg, for a model from a GGUF file going back to Hugging Face's layout.
	HFConfig(cp *Checkpoint, g ggufKVs, cfg *jsonObject) error
	// Untransform undoes Transform on the way back to Hugging Face's layout, on the
	// GGUF's tensor (named in llama.cpp's form), before 1-D tensors are narrowed to
	// the checkpoint's dtype.
	Untransform(cp *Checkpoint, info container.TensorInfo, r io.Reader) (container.TensorInfo, io.Reader, error)
}

// plain is the Family of a family that only renames.
type plain struct{}

func (plain) KVs(_ *Checkpoint, base []gguf.KV) ([]gguf.KV, error)  { return base, nil }
func (plain) Vocab(_ *Checkpoint, kvs []gguf.KV) ([]gguf.KV, error) { return kvs, nil }
func (plain) HFConfig(*Checkpoint, ggufKVs, *jsonObject) error      { return nil }
func (plain) Generated(*Checkpoint) ([]tensor.Tensor, error)        { return nil, nil }
func (plain) Transform(_ *Checkpoint, info container.TensorInfo, r io.Reader) (container.TensorInfo, io.Reader, error) {
	return info, r, nil
}
func (plain) Untransform(_ *Checkpoint, info container.TensorInfo, r io.Reader) (container.TensorInfo, io.Reader, error) {
	return info, r, nil
}

// family returns the Arch's Family, plain when it has none.
func (a *Arch) family() Family {
	if a.Family == nil {
		return plain{}
	}
	return a.Family
}

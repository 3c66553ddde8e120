package apr

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/apr-go/apr/lib/aprender"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/manifest"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modelfile"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// ReadOptions say how ReadModel opens and checks a file.
type ReadOptions struct {
	// Accept, when set, is called with the file's model type as soon as the header
	// is read, before any tensor data; its error ends the read.
	Accept func(modeltype.Type) error
	// Policy, when it names a key, requires a valid signature (or license) by a
	// trusted key, checked before the model is built. Its Unsealer opens a sealed
	// file.
	Policy Policy
	// Describe, when set, is called once the whole file was read and checked (and
	// its signatures, when Policy names keys), before the model is built, with the
	// file's type, metadata and tensor list; its error ends the read. For an
	// aprender file the metadata is nil.
	Describe func(t modeltype.Type, md *container.Metadata, tensors []container.TensorInfo) error
}

// ReadModel reads a model of whatever type r holds: an APR v2 stream (every checksum
// verified, a sealed one opened with o.Policy.Unsealer, its signatures checked
// against o.Policy when that names keys) or an aprender file. The model is built
// only after the whole file was read and checked. The Verification is nil when no
// key was given.
func ReadModel(r io.Reader, o ReadOptions) (model.Model, *Verification, error) {
	accept := o.Accept
	if accept == nil {
		accept = func(modeltype.Type) error { return nil }
	}
	wantKeys := len(o.Policy.Signers) > 0 || len(o.Policy.LicenseIssuers) > 0
	br := bufio.NewReaderSize(r, 1<<16)
	prefix, _ := br.Peek(5)
	if _, ok := aprender.Detect(prefix); ok {
		if wantKeys {
			return nil, nil, fmt.Errorf("%w: an aprender file carries no signatures (convert it with apr-encode and sign it)", ErrSignatureInvalid)
		}
		b, err := aprender.ReadAll(br)
		if err != nil {
			return nil, nil, err
		}
		af, err := aprender.Read(b)
		if err != nil {
			return nil, nil, stream.AprenderError(err)
		}
		if err := accept(af.ModelType); err != nil {
			return nil, nil, err
		}
		if o.Describe != nil {
			if err := o.Describe(af.ModelType, nil, infosOf(af.Tensors)); err != nil {
				return nil, nil, err
			}
		}
		m, err := modelfile.FromTensors(af.ModelType, af.Config, af.Tensors)
		return m, nil, err
	}
	var ro []container.ReaderOption
	if o.Policy.Unsealer != nil {
		ro = append(ro, container.WithUnsealer(o.Policy.Unsealer))
	}
	cr, err := container.NewReader(br, ro...)
	if err != nil {
		if wantKeys && errors.Is(err, ErrUnsupportedVersion) {
			return nil, nil, fmt.Errorf("%w (only APR v2 files carry signatures; convert with apr-encode and sign): %w", ErrSignatureInvalid, err)
		}
		return nil, nil, err
	}
	defer cr.Close()
	h := cr.Header()
	if err := accept(h.Type); err != nil {
		return nil, nil, err
	}
	if h.Flags&container.FlagEncrypted != 0 && o.Policy.Unsealer == nil {
		return nil, nil, fmt.Errorf("%w: the model is sealed; give the identity (-i) or passphrase that opens it", container.ErrEncrypted)
	}
	var hp *manifest.Parallel
	if wantKeys {
		mb, err := manifest.New(h.Type, h.Metadata)
		if err != nil {
			return nil, nil, err
		}
		hp = manifest.NewParallel(mb, 0)
		defer hp.Close()
	}
	var tensors []tensor.Tensor
	err = cr.Each(func(t *container.Tensor) error {
		data, err := io.ReadAll(t)
		if err != nil {
			return err
		}
		tensors = append(tensors, tensor.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: data})
		if hp != nil {
			return hp.AddTensor(t.TensorInfo, data)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var v *Verification
	if hp != nil {
		digest, err := hp.Sum()
		if err != nil {
			return nil, nil, err
		}
		if v, err = o.Policy.Check(digest, h, len(tensors), cr.Blocks()); err != nil {
			return nil, v, err
		}
	}
	if o.Describe != nil {
		if err := o.Describe(h.Type, h.Metadata, infosOf(tensors)); err != nil {
			return nil, v, err
		}
	}
	m, err := modelfile.FromTensors(h.Type, h.Metadata.ModelConfig, tensors)
	return m, v, err
}

// accepting is a ReadOptions.Accept that takes only model type want.
func accepting(want modeltype.Type) func(modeltype.Type) error {
	return func(found modeltype.Type) error {
		if found != want {
			return &ModelTypeMismatch{Expected: want, Found: found}
		}
		return nil
	}
}

// infosOf lists the tensors' names, dtypes and shapes for ReadOptions.Describe.
func infosOf(tensors []tensor.Tensor) []container.TensorInfo {
	infos := make([]container.TensorInfo, len(tensors))
	for i, t := range tensors {
		infos[i] = container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	return infos
}

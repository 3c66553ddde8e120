package distill

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modelfile"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/version"
)

// maxModelFile caps a teacher or student file read into memory.
const maxModelFile = 4 << 30

// LoadModel reads a model file (APR v2 or aprender), returning the model and the
// SHA-256 digest of the file's bytes.
func LoadModel(path string) (model.Model, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	var b []byte
	if st.Mode().IsRegular() {
		if st.Size() > maxModelFile {
			return nil, "", fmt.Errorf("%s: larger than %d bytes", path, int64(maxModelFile))
		}
		// The header and metadata are checked before the file is read into memory,
		// so a file that only looks like a model is refused after a few reads.
		if _, err := stream.InspectReader(io.NewSectionReader(f, 0, st.Size())); err != nil {
			return nil, "", fmt.Errorf("%s: %w", path, err)
		}
		b = make([]byte, st.Size())
		_, err = io.ReadFull(f, b)
	} else { // a pipe (<(...)): the header checked as it is read, then the rest up to the cap
		var head bytes.Buffer
		lr := io.LimitReader(f, maxModelFile+1)
		if _, err := stream.InspectReader(io.TeeReader(lr, &head)); err != nil {
			return nil, "", fmt.Errorf("%s: %w", path, err)
		}
		var rest []byte
		rest, err = io.ReadAll(lr)
		b = append(head.Bytes(), rest...)
		if err == nil && len(b) > maxModelFile {
			err = fmt.Errorf("larger than %d bytes", int64(maxModelFile))
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	info, err := stream.InspectReader(bytes.NewReader(b))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	m, err := modelfile.ReadBytes(b, info.Type)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	return m, hex.EncodeToString(sum[:]), nil
}

// LoadTeacher reads a teacher model file; it fails for a model that is not a
// classifier.
func LoadTeacher(path string) (*Teacher, error) {
	m, digest, err := LoadModel(path)
	if err != nil {
		return nil, err
	}
	t, err := NewTeacher(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Name, t.SHA256 = filepath.Base(path), digest
	return t, nil
}

// Provenance describes a run for the student's metadata: its "distillation" (or,
// for method fit, "training") entry.
func Provenance(teachers []*Teacher, opt Options, data Data, dataSHA256 string, valSplit float64, res *Result) map[string]any {
	ts := []any{}
	weights := teacherWeights(opt.Weights, len(teachers))
	for i, t := range teachers {
		e := map[string]any{"file": t.Name, "sha256": t.SHA256, "model_type": t.Model.Type().String(),
			"parameters": int64(t.Params()), "classes": int64(t.Classes())}
		if opt.Method == Ensemble {
			e["weight"] = weights[i]
		}
		ts = append(ts, e)
	}
	o, _ := opt.Optimizer.WithDefaults() // the settings Run used (it refuses bad ones)
	p := map[string]any{
		"method":     string(opt.Method),
		"epochs":     int64(opt.Epochs),
		"batch_size": int64(opt.BatchSize),
		"optimizer":  o.Name,
		"lr":         o.LR,
		"seed":       opt.Seed,
		"data": map[string]any{"file": data.Name, "sha256": dataSHA256, "rows": int64(data.X.Rows),
			"features": int64(data.X.Cols), "labelled": data.Y != nil, "validation_split": valSplit},
		"final_loss": finite(res.Loss),
		"train":      map[string]any{"rows": int64(res.TrainRows), "accuracy": finite(res.TrainAccuracy)},
	}
	val := map[string]any{"rows": int64(res.ValRows), "accuracy": finite(res.ValAccuracy)}
	if opt.Method != Fit {
		p["teachers"] = ts
		p["temperature"] = opt.Temperature
		p["alpha"] = opt.Alpha
		p["train"].(map[string]any)["agreement"] = finite(res.TrainAgreement)
		p["train"].(map[string]any)["teacher_accuracy"] = finite(res.TeacherTrainAccuracy)
		val["agreement"] = finite(res.ValAgreement)
		val["teacher_accuracy"] = finite(res.TeacherValAccuracy)
	}
	if opt.Method == Progressive {
		p["layer_map"] = FormatLayerMap(opt.LayerMap)
		p["hint_epochs"] = int64(hintEpochs(opt))
		p["hint_loss"] = finite(res.HintLoss)
	}
	p["validation"] = val
	key := "distillation"
	if opt.Method == Fit {
		key = "training"
	}
	return map[string]any{key: p}
}

func hintEpochs(opt Options) int {
	if opt.HintEpochs > 0 {
		return opt.HintEpochs
	}
	return max(1, opt.Epochs/2)
}

// finite maps NaN (a figure that does not apply) to nil, so metadata holds no NaN.
func finite(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

// Metrics are the headline figures of a run for the student's "metrics" metadata.
func Metrics(res *Result) map[string]any {
	m := map[string]any{}
	put := func(k string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			m[k] = v
		}
	}
	put("loss", res.Loss)
	put("train_accuracy", res.TrainAccuracy)
	put("train_agreement", res.TrainAgreement)
	put("val_accuracy", res.ValAccuracy)
	put("val_agreement", res.ValAgreement)
	return m
}

// Encode writes m as an APR v2 stream to w like apr.Encode, with provenance in the
// metadata.
func Encode(w io.Writer, m model.Model, opts modelfile.EncodeOptions, provenance map[string]any) error {
	created, err := container.CreatedAt()
	if err != nil {
		return err
	}
	h := container.Header{Type: m.Type(), Metadata: container.Metadata{
		Name: opts.Name, Description: opts.Description, CreatedAt: created, Producer: version.Producer,
		Hyperparameters: opts.Hyperparameters, Metrics: opts.Metrics, Custom: opts.Custom,
		ModelConfig: m.Config(), Provenance: provenance,
	}}
	cw, err := container.NewWriter(w, h, container.WithCompression(opts.Compression), container.WithShuffle(opts.Shuffle))
	if err != nil {
		return err
	}
	for _, t := range m.Tensors() {
		if err := cw.WriteTensorBytes(container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}, t.Data); err != nil {
			return err
		}
	}
	return cw.Close()
}

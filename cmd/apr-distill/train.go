package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/distill"
	"github.com/apr-go/apr/lib/model"
)

func train(env *cli.Env, teacherPaths []string, f *trainFlags, method distill.Method, set func(*distill.Options) error) error {
	opt := distill.DefaultOptions()
	opt.Method, opt.Epochs, opt.BatchSize, opt.Seed = method, f.Epochs, f.BatchSize, f.Seed
	opt.Optimizer = model.Optimizer{Name: f.Optimizer, LR: f.LR, Momentum: f.Momentum}
	if err := set(&opt); err != nil {
		return err
	}
	if f.Epochs < 1 || f.BatchSize < 1 {
		return cli.Usagef("--epochs %d and --batch-size %d must be at least 1", f.Epochs, f.BatchSize)
	}
	if err := f.check(); err != nil {
		return err
	}
	var teachers []*distill.Teacher
	for _, p := range teacherPaths {
		t, err := distill.LoadTeacher(p)
		if err != nil {
			return err
		}
		teachers = append(teachers, t)
	}
	in, err := loadInput(&f.dataFlags, false)
	if err != nil {
		return err
	}
	data, digest, trainSet, valSet, comp := in.data, in.digest, in.train, in.val, in.comp
	student, err := newStudent(f, data, teachers)
	if err != nil {
		return err
	}
	if env.ShowProgress() {
		opt.Progress = func(s distill.EpochStats) { env.Infof("%s", progressLine(s)) }
	}
	out, err := env.Create(f.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	start := time.Now()
	res, err := distill.Run(student, teachers, trainSet, valSet, opt)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	report(env, method, opt, res, elapsed)

	prov := distill.Provenance(teachers, opt, data, digest, f.ValSplit, res)
	for _, v := range prov {
		v.(map[string]any)["data"].(map[string]any)["scale"] = f.Scale
	}
	hyper := map[string]any{"method": string(method), "epochs": int64(opt.Epochs), "batch_size": int64(opt.BatchSize),
		"optimizer": f.Optimizer, "lr": f.LR, "seed": f.Seed, "val_split": f.ValSplit, "split_seed": f.SplitSeed}
	if method != distill.Fit {
		hyper["temperature"], hyper["alpha"] = opt.Temperature, opt.Alpha
	}
	so := apr.SaveOptions{Name: f.Name, Hyperparameters: hyper, Metrics: distill.Metrics(res), Compression: comp, Custom: in.custom}
	if err := save(out, student, so, prov); err != nil {
		return err
	}
	if f.JSON {
		return printJSON(env.Stdout, jsonReport(method, opt, res, elapsed, teachers, student, f.Output))
	}
	return nil
}

// save writes a trained model with its provenance to out and commits it.
func save(out *cli.Output, m model.Model, so apr.SaveOptions, provenance map[string]any) error {
	if err := distill.Encode(out, m, so, provenance); err != nil {
		return fmt.Errorf("%s: %w", out.Name, err)
	}
	return out.Commit()
}

// printJSON writes the --json report, indented.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// check validates the data flags that need no file.
func (f *dataFlags) check() error {
	if f.JSON && (f.Output == "" || f.Output == "-") {
		return cli.Usagef("--json prints the report on stdout: write the model with -o FILE")
	}
	if !(f.Scale > 0) || math.IsInf(f.Scale, 0) {
		return cli.Usagef("--scale %v: expected a finite value > 0", f.Scale)
	}
	for _, kv := range f.Meta {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return cli.Usagef("--meta %q: expected KEY=VALUE", kv)
		}
	}
	return nil
}

// input is the data of a run, loaded, scaled, checked and split.
type input struct {
	data       distill.Data
	digest     string
	train, val distill.Data
	comp       container.Compression
	custom     map[string]any
}

// loadInput reads and splits the data of f (after f.check), with regression
// targets (Data.T) instead of class labels if targets.
func loadInput(f *dataFlags, targets bool) (*input, error) {
	comp, err := container.ParseCompression(f.Compress)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	in := &input{comp: comp}
	for _, kv := range f.Meta {
		k, v, _ := strings.Cut(kv, "=")
		if in.custom == nil {
			in.custom = map[string]any{}
		}
		in.custom[k] = v
	}
	if in.data, err = distill.LoadData(f.Data, distill.LoadOptions{LabelColumn: f.LabelColumn, Labels: f.Labels, Targets: targets}); err != nil {
		return nil, err
	}
	in.digest = in.data.SHA256
	data := in.data
	if f.Scale != 1 {
		for i := range data.X.Data {
			data.X.Data[i] *= f.Scale
		}
	}
	// Check every value before the split, so errors name the row of the file.
	for i, v := range data.X.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) || math.IsInf(float64(float32(v)), 0) {
			return nil, fmt.Errorf("%s: row %d, column %d: value %v, expected a finite number", data.Name, i/data.X.Cols+1, i%data.X.Cols+1, v)
		}
	}
	if in.train, in.val, err = distill.Split(data, f.ValSplit, f.SplitSeed); err != nil {
		return nil, cli.Usagef("--val-split: %v", err)
	}
	return in, nil
}

// num is a float for JSON: NaN (a figure that does not apply) becomes null.
func num(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

// jsonReport is the final report of --json.
func jsonReport(method distill.Method, opt distill.Options, res *distill.Result, elapsed time.Duration,
	teachers []*distill.Teacher, student *model.NeuralSequentialModel, output string) map[string]any {
	ts := []any{}
	for _, t := range teachers {
		ts = append(ts, map[string]any{"file": t.Name, "sha256": t.SHA256, "model_type": t.Model.Type().String(),
			"parameters": t.Params(), "classes": t.Classes()})
	}
	set := func(rows int, acc, agree, tacc float64) map[string]any {
		m := map[string]any{"rows": rows, "accuracy": num(acc)}
		if method != distill.Fit {
			m["agreement"], m["teacher_accuracy"] = num(agree), num(tacc)
		}
		return m
	}
	r := map[string]any{
		"output":   output,
		"method":   string(method),
		"student":  map[string]any{"widths": student.Widths(), "parameters": student.ParamCount()},
		"teachers": ts,
		"epochs":   opt.Epochs, "batch_size": opt.BatchSize, "seed": opt.Seed,
		"loss":  num(res.Loss),
		"train": set(res.TrainRows, res.TrainAccuracy, res.TrainAgreement, res.TeacherTrainAccuracy),
		"timing": map[string]any{"seconds": elapsed.Seconds(), "ms_per_epoch": elapsed.Seconds() * 1e3 / float64(opt.Epochs),
			"samples_per_second": float64(res.TrainRows*opt.Epochs) / elapsed.Seconds(), "cores": runtime.GOMAXPROCS(0)},
	}
	if method != distill.Fit {
		r["temperature"], r["alpha"] = opt.Temperature, opt.Alpha
	}
	if method == distill.Progressive {
		r["hint_loss"], r["layer_map"] = num(res.HintLoss), distill.FormatLayerMap(opt.LayerMap)
	}
	if res.ValRows > 0 {
		r["validation"] = set(res.ValRows, res.ValAccuracy, res.ValAgreement, res.TeacherValAccuracy)
	}
	return r
}

// newStudent builds the student from an architecture or loads it from a file.
func newStudent(f *trainFlags, data distill.Data, teachers []*distill.Teacher) (*model.NeuralSequentialModel, error) {
	var student *model.NeuralSequentialModel
	if st, err := os.Stat(f.Student); err == nil && st.Mode().IsRegular() {
		m, _, err := distill.LoadModel(f.Student)
		if err != nil {
			return nil, err
		}
		nn, ok := m.(*model.NeuralSequentialModel)
		if !ok {
			return nil, fmt.Errorf("%s: the student must be a NeuralSequential model, this is %v", f.Student, m.Type())
		}
		student = nn
	} else {
		widths, err := model.ParseWidths(f.Student)
		if err != nil {
			if strings.HasSuffix(strings.ToLower(f.Student), ".apr") {
				return nil, fmt.Errorf("--student %s: no such file", f.Student)
			}
			return nil, cli.Usagef("--student: %v", err)
		}
		act, err := model.ParseActivation(f.Activation)
		if err != nil {
			return nil, cli.Usagef("--activation: %v", err)
		}
		if student, err = model.NewNeuralSequential(widths, act, model.ActSoftmax, f.Seed); err != nil {
			return nil, cli.Usagef("--student: %v", err)
		}
	}
	if student.Inputs() != data.X.Cols {
		hint := ""
		if data.X.Cols+1 == student.Inputs() && !(data.Y == nil && f.LabelColumn == "none") {
			hint = " (is the last column features, not labels? use --label-column none)"
		}
		return nil, fmt.Errorf("%s: %d features per row, the student takes %d%s", data.Name, data.X.Cols, student.Inputs(), hint)
	}
	for _, t := range teachers {
		if t.Inputs() != data.X.Cols {
			return nil, fmt.Errorf("%s: %d features per row, teacher %s takes %d", data.Name, data.X.Cols, t.Name, t.Inputs())
		}
	}
	return student, nil
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.4f", v)
}

func progressLine(s distill.EpochStats) string {
	if s.Stage == "hint" {
		return fmt.Sprintf("hint  epoch %3d  loss %.5f", s.Epoch, s.Loss)
	}
	return fmt.Sprintf("epoch %3d  loss %.5f  accuracy %s  agreement %s  val accuracy %s  val agreement %s",
		s.Epoch, s.Loss, pct(s.TrainAccuracy), pct(s.Agreement), pct(s.ValAccuracy), pct(s.ValAgreement))
}

// report prints the final figures on stderr, always.
func report(env *cli.Env, method distill.Method, opt distill.Options, res *distill.Result, elapsed time.Duration) {
	env.Infof("%s: %s, %d epochs in %v (%.0f samples/s): loss %.5f", env.Name, method, opt.Epochs, elapsed.Round(time.Millisecond),
		float64(res.TrainRows*opt.Epochs)/elapsed.Seconds(), res.Loss)
	if method == distill.Progressive {
		env.Infof("  hint stage: loss %.5f", res.HintLoss)
	}
	line := func(what string, rows int, acc, agree, tacc float64) {
		if method == distill.Fit {
			env.Infof("  %-10s %5d rows: accuracy %s", what, rows, pct(acc))
			return
		}
		env.Infof("  %-10s %5d rows: accuracy %s, agreement with teacher %s (teacher accuracy %s)", what, rows, pct(acc), pct(agree), pct(tacc))
	}
	line("train", res.TrainRows, res.TrainAccuracy, res.TrainAgreement, res.TeacherTrainAccuracy)
	if res.ValRows > 0 {
		line("validation", res.ValRows, res.ValAccuracy, res.ValAgreement, res.TeacherValAccuracy)
	}
}

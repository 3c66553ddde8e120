package main

import (
	"fmt"
	"math"
	"time"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/distill"
	"github.com/apr-go/apr/lib/model"
)

// moeCmd fits a MixtureOfExperts: without --expert, --experts LinearRegression
// experts trained together with the gate (model.FitLinearMixture, regression);
// with --expert files, only the gate (FitGate), for regression or classifier
// experts alike.
type moeCmd struct {
	dataFlags
	Expert  []string `placeholder:"FILE" reads:"" help:"An expert model (.apr): LinearRegression, LogisticRegression or NeuralSequential, all of one kind, taking the data's features (repeatable, in order); only the gate is fitted."`
	Experts int      `default:"4" placeholder:"N" help:"Without --expert: the number of LinearRegression experts trained together with the gate (regression)."`
	TopK    int      `name:"top-k" default:"2" placeholder:"K" help:"Experts that predict each row: the K the gate weighs most (1 to the number of experts)."`
	Epochs  int      `default:"300" help:"Full-batch Adam steps of the gate (per round)."`
	LR      float64  `name:"lr" default:"0.05" help:"Adam's step size for the gate."`
	Rounds  int      `default:"5" help:"Without --expert: alternations of refitting the experts on their rows and training the gate."`
	Seed    uint64   `default:"0" help:"Seed of the gate's random start."`
}

func (c *moeCmd) Run(env *cli.Env) error {
	f := &c.dataFlags
	if err := f.check(); err != nil {
		return err
	}
	n := c.Experts
	if len(c.Expert) > 0 {
		n = len(c.Expert)
	}
	switch {
	case len(c.Expert) == 0 && (n < 1 || n > model.MaxExperts):
		return cli.Usagef("--experts %d: expected 1 to %d", n, model.MaxExperts)
	case c.TopK < 1 || c.TopK > n:
		return cli.Usagef("--top-k %d: expected 1 to the %d experts", c.TopK, n)
	case c.Epochs < 1 || c.Rounds < 1 || !(c.LR > 0) || math.IsInf(c.LR, 0):
		return cli.Usagef("--epochs %d, --rounds %d, --lr %v: expected epochs and rounds >= 1, lr > 0", c.Epochs, c.Rounds, c.LR)
	}
	// Experts first: their kind says whether the data holds classes or targets.
	var experts []model.Model
	given := []any{} // the files' provenance
	for i, p := range c.Expert {
		m, sum, err := distill.LoadModel(p)
		if err != nil {
			return fmt.Errorf("--expert %s: %w", p, err)
		}
		experts = append(experts, m)
		if _, err := model.NewMixtureOfExperts(experts, 1); err != nil {
			return fmt.Errorf("--expert %s (expert %d): %w", p, i, err)
		}
		given = append(given, map[string]any{"file": p, "sha256": sum, "model_type": m.Type().String()})
	}
	var mix *model.MixtureOfExpertsModel
	if len(experts) > 0 {
		var err error
		if mix, err = model.NewMixtureOfExperts(experts, c.TopK); err != nil {
			return err
		}
	}
	classifier := mix != nil && mix.IsClassifier()
	in, err := loadInput(f, !classifier)
	if err != nil {
		return err
	}
	train, val := in.train, in.val
	if (classifier && in.data.Y == nil) || (!classifier && in.data.T == nil) {
		return fmt.Errorf("%s: fit-moe needs labels or targets (--label-column, --labels or y in the .npz)", in.data.Name)
	}
	if mix != nil && mix.Features != in.data.X.Cols {
		return fmt.Errorf("%s: %d features per row, the experts take %d", in.data.Name, in.data.X.Cols, mix.Features)
	}
	if mix != nil && !classifier && mix.Outputs() != 1 {
		return fmt.Errorf("--expert: the experts predict %d values per row; fit-moe fits one target per row", mix.Outputs())
	}
	targets := func(d distill.Data) []float64 {
		if classifier {
			return floats(d.Y)
		}
		return d.T
	}

	out, err := env.Create(f.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	opt := model.MoEFitOptions{Epochs: c.Epochs, LearningRate: c.LR, Rounds: c.Rounds, Seed: c.Seed}
	start := time.Now()
	meter := env.Meter("fit-moe", false, 0)
	if mix == nil {
		mix, err = model.FitLinearMixture(train.X, train.T, n, c.TopK, opt)
	} else {
		err = mix.FitGate(train.X, targets(train), opt)
	}
	meter.Done()
	if err != nil {
		return fmt.Errorf("%s: %w", in.data.Name, err)
	}
	elapsed := time.Since(start)

	how := "gate fitted to the given experts"
	if len(c.Expert) == 0 {
		how = fmt.Sprintf("LinearRegression experts trained with the gate, %d rounds", c.Rounds)
	}
	kind := "regression"
	if classifier {
		kind = fmt.Sprintf("%d classes", mix.Classes())
	}
	env.Infof("%s: fit-moe, %d experts (%s), top-%d, %s, %d features: %v", env.Name, n, how, c.TopK, kind, mix.Features, elapsed.Round(time.Millisecond))
	sets := map[string]any{}
	metrics := map[string]any{}
	var baseline *model.LinearRegressionModel
	if !classifier {
		// One linear model on the same rows: what the mixture has to beat.
		baseline = model.NewLinearRegression()
		if err := baseline.Fit(train.X, train.T); err != nil {
			baseline = nil
		}
	}
	prefix := map[string]string{"train": "train", "validation": "val"}
	for _, s := range []struct {
		name string
		d    distill.Data
	}{{"train", train}, {"validation", val}} {
		if s.d.X.Rows == 0 {
			continue
		}
		e, err := evaluate(mix, baseline, s.d, classifier)
		if err != nil {
			return fmt.Errorf("%s: %w", s.d.Name, err)
		}
		sets[s.name] = e
		if classifier {
			env.Infof("  %-10s %5d rows: accuracy %s (best expert alone %s)", s.name, s.d.X.Rows, pct(e["accuracy"].(float64)), pct(e["best_expert_accuracy"].(float64)))
			metrics[prefix[s.name]+"_accuracy"] = e["accuracy"]
			continue
		}
		line := fmt.Sprintf("  %-10s %5d rows: mse %.6g, r2 %s", s.name, s.d.X.Rows, e["mse"], pct(e["r2"].(float64)))
		if baseline != nil {
			line += fmt.Sprintf(" (one linear model: mse %.6g, r2 %s)", e["linear_mse"], pct(e["linear_r2"].(float64)))
		}
		env.Infof("%s", line)
		metrics[prefix[s.name]+"_mse"] = e["mse"]
	}
	for k, v := range metrics {
		if x, ok := v.(float64); !ok || math.IsNaN(x) {
			delete(metrics, k)
		}
	}

	hyper := map[string]any{"method": "fit-moe", "n_experts": int64(n), "top_k": int64(c.TopK), "epochs": int64(c.Epochs),
		"lr": c.LR, "seed": c.Seed, "val_split": f.ValSplit, "split_seed": f.SplitSeed}
	if len(c.Expert) == 0 {
		hyper["rounds"] = int64(c.Rounds)
	}
	training := map[string]any{"method": "mixture_of_experts", "experts_given": given,
		"data": map[string]any{"file": in.data.Name, "sha256": in.digest, "rows": int64(in.data.X.Rows), "features": int64(in.data.X.Cols),
			"validation_split": f.ValSplit, "scale": f.Scale}}
	for k, v := range sets {
		training[k] = jsonSafe(v.(map[string]any))
	}
	so := apr.SaveOptions{Name: f.Name, Hyperparameters: hyper, Metrics: metrics, Compression: in.comp, Custom: in.custom}
	if err := save(out, mix, so, map[string]any{"training": training}); err != nil {
		return err
	}
	if f.JSON {
		params := 0
		for _, t := range mix.Tensors() {
			params += len(t.Data) / 4
		}
		r := map[string]any{"output": f.Output, "method": "mixture_of_experts", "experts_given": len(c.Expert) > 0,
			"model":  map[string]any{"type": mix.Type().String(), "experts": n, "top_k": c.TopK, "features": mix.Features, "classes": mix.Classes(), "parameters": params},
			"timing": map[string]any{"seconds": elapsed.Seconds()}}
		for k, v := range sets {
			r[k] = jsonSafe(v.(map[string]any))
		}
		return printJSON(env.Stdout, r)
	}
	return nil
}

// evaluate gives the mixture's figures on d: accuracy (and the best single
// expert's) for classifiers; mean squared error and R² (and those of the one
// linear model, if any) for regression.
func evaluate(mix *model.MixtureOfExpertsModel, baseline *model.LinearRegressionModel, d distill.Data, classifier bool) (map[string]any, error) {
	e := map[string]any{"rows": d.X.Rows}
	if classifier {
		labels, err := mix.Predict(d.X)
		if err != nil {
			return nil, err
		}
		e["accuracy"] = agreement(labels, d.Y)
		best := math.NaN()
		for i := range mix.Experts {
			one := *mix
			one.TopK = 1
			one.Experts = []model.Model{mix.Experts[i]}
			one.GateWeight, one.GateBias = make([]float32, mix.Features), make([]float32, 1)
			l, err := one.Predict(d.X)
			if err != nil {
				return nil, fmt.Errorf("expert %d: %w", i, err)
			}
			if a := agreement(l, d.Y); !(a <= best) {
				best = a
			}
		}
		e["best_expert_accuracy"] = best
		return e, nil
	}
	y, err := mix.Output(d.X)
	if err != nil {
		return nil, err
	}
	e["mse"], e["r2"] = mseR2(y.Data, d.T)
	if baseline != nil {
		p, err := baseline.Predict(d.X)
		if err != nil {
			return nil, err
		}
		e["linear_mse"], e["linear_r2"] = mseR2(p, d.T)
	}
	return e, nil
}

func agreement(labels, y []int) float64 {
	n := 0
	for i, l := range labels {
		if l == y[i] {
			n++
		}
	}
	return float64(n) / float64(len(y))
}

// mseR2 is the mean squared error of p against y and the coefficient of
// determination (NaN when y is constant).
func mseR2(p, y []float64) (float64, float64) {
	mean := 0.0
	for _, v := range y {
		mean += v
	}
	mean /= float64(len(y))
	var ss, tot float64
	for i, v := range y {
		ss += (p[i] - v) * (p[i] - v)
		tot += (v - mean) * (v - mean)
	}
	r2 := math.NaN()
	if tot > 0 {
		r2 = 1 - ss/tot
	}
	return ss / float64(len(y)), r2
}

// jsonSafe replaces NaN figures by null.
func jsonSafe(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if x, ok := v.(float64); ok {
			out[k] = num(x)
			continue
		}
		out[k] = v
	}
	return out
}

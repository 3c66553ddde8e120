// apr-distill trains a NeuralSequential student from one or more teacher models
// (knowledge distillation), or a model from labelled data alone (fit).
//
//	apr-distill fit --data digits.csv.gz --scale 0.0625 --student 64-128-128-10 -o teacher.apr
//	apr-distill teacher.apr --data digits.csv.gz --scale 0.0625 --student 64-16-16-10 -o student.apr
//	apr-distill a.apr b.apr --method ensemble --weights 2,1 --data x.npz --student 64-16-10 -o s.apr
//	apr-distill fit-logistic --data digits.csv.gz --scale 0.0625 -o softmax.apr
//	apr-distill fit-moe --data x.csv --labels y.csv --experts 4 --top-k 2 -o moe.apr
//	apr-distill fit-moe --data cancer.csv --expert a.apr --expert b.apr -o moe.apr
package main

import (
	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/distill"
)

func main() { cli.Main(run) }

var run = cli.Program{Name: "apr-distill",
	Help:    "Train a NeuralSequential student from teacher models (knowledge distillation), or a model from labelled data (fit).",
	Grammar: func() any { return &distillCLI{} }}.Run

type distillCLI struct {
	cli.Globals
	Distill distillCmd `cmd:"" default:"withargs" help:"Distil a student from one or more teacher models (the default command)."`
	Fit     fitCmd     `cmd:"" help:"Train a model from labelled data with no teacher (the same loop, alpha = 0)."`
	Logit   logitCmd   `cmd:"" name:"fit-logistic" help:"Fit a LogisticRegression (binary for 2 classes, multinomial softmax regression for more) from labelled data, e.g. as a teacher."`
	MoE     moeCmd     `cmd:"" name:"fit-moe" help:"Fit a MixtureOfExperts: LinearRegression experts trained with the gate (--experts N), or a gate over given experts (--expert FILE ...)."`
}

// dataFlags are the data and output options of every command.
type dataFlags struct {
	Data        string  `required:"" placeholder:"FILE" reads:"" help:"Training data: CSV (optionally gzip, header optional), .npy (features; --labels for labels) or .npz (X and optional y)."`
	LabelColumn string  `default:"-1" placeholder:"COL" help:"CSV label column: index from 0 (negative from the end), header name, or 'none' (default: the last column)."`
	Labels      string  `placeholder:"FILE" reads:"" help:"Labels (or fit-moe's regression targets), one per row: .npy for a .npy feature file, a one-column CSV/text file for a CSV one (whose columns are then all features)."`
	Scale       float64 `default:"1" help:"Multiply every feature by this factor first (e.g. 0.0625 for pixels 0..16); use the same value for teacher and student."`
	cli.OutputFlag
	ValSplit         float64 `default:"0.2" placeholder:"FRACTION" help:"Fraction of the rows held out for validation (stratified by label)."`
	SplitSeed        uint64  `default:"0" help:"Seed of the validation split (keep it equal for teacher and student, so the student is validated on rows the teacher never saw)."`
	Name             string  `help:"Model name in the metadata."`
	cli.CompressFlag `set:"compress=zstd"`
	Meta             []string `sep:"none" placeholder:"KEY=VALUE" help:"Set a custom metadata value (repeatable)."`
	JSON             bool     `name:"json" help:"Also print the final report as JSON on stdout (needs -o FILE, since stdout then carries the report)."`
}

// trainFlags are the options shared by distillation and fit.
type trainFlags struct {
	dataFlags
	Student    string  `required:"" placeholder:"ARCH|FILE" help:"Layer widths of a new model, e.g. 64-16-16-10, or an existing NeuralSequential .apr to start from."`
	Activation string  `default:"relu" enum:"relu,tanh,sigmoid,identity" help:"Hidden-layer activation of a new model (relu, tanh, sigmoid, identity)."`
	Epochs     int     `default:"20" help:"Training epochs (of the final stage)."`
	BatchSize  int     `default:"32" help:"Rows per mini-batch."`
	LR         float64 `name:"lr" default:"0.001" help:"Learning rate."`
	Optimizer  string  `default:"adam" enum:"adam,sgd" help:"Optimizer: adam or sgd."`
	Momentum   float64 `default:"0" help:"SGD momentum."`
	Seed       uint64  `default:"0" help:"Seed of the initialisation and the batch order."`
}

type distillCmd struct {
	Teachers []string `arg:"" name:"teacher" reads:"" help:"Teacher model files (.apr): NeuralSequential classifiers or LogisticRegression."`
	trainFlags
	Method      string    `default:"standard" enum:"standard,progressive,ensemble" help:"standard, progressive (hidden layers matched by --layer-map first) or ensemble (several teachers)."`
	Alpha       float64   `default:"0.7" help:"Weight of the soft-target term (1-alpha weighs the hard labels)."`
	Temperature float64   `short:"T" default:"3" help:"Softmax temperature of the soft targets."`
	LayerMap    string    `placeholder:"S:T,..." help:"progressive: student:teacher hidden-layer pairs, e.g. 0:0,1:2."`
	HintEpochs  int       `default:"0" help:"progressive: epochs of the hidden-layer stage (default: half of --epochs)."`
	Weights     []float64 `placeholder:"W,..." help:"ensemble: one weight per teacher (default: equal)."`
}

type fitCmd struct {
	trainFlags
}

func (c *fitCmd) Run(env *cli.Env) error {
	return train(env, nil, &c.trainFlags, distill.Fit, func(o *distill.Options) error { return nil })
}

func (c *distillCmd) Run(env *cli.Env) error {
	method, err := distill.ParseMethod(c.Method)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if len(c.Teachers) > 1 && method != distill.Ensemble {
		return cli.Usagef("%d teachers: use --method ensemble", len(c.Teachers))
	}
	if method == distill.Progressive && c.LayerMap == "" {
		return cli.Usagef("--method progressive needs --layer-map, e.g. 0:0,1:2")
	}
	if c.LayerMap != "" && method != distill.Progressive {
		return cli.Usagef("--layer-map is for --method progressive")
	}
	if len(c.Weights) > 0 && method != distill.Ensemble {
		return cli.Usagef("--weights is for --method ensemble")
	}
	layerMap, err := distill.ParseLayerMap(c.LayerMap)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	return train(env, c.Teachers, &c.trainFlags, method, func(o *distill.Options) error {
		o.Alpha, o.Temperature, o.LayerMap, o.HintEpochs, o.Weights = c.Alpha, c.Temperature, layerMap, c.HintEpochs, c.Weights
		return nil
	})
}

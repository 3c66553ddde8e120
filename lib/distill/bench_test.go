package distill

import (
	"testing"

	"github.com/apr-go/apr/lib/model"
)

// Benchmarks on the real digits training split (1347 rows, the 75/25
// split). Training benchmarks run benchEpochs epochs per operation and report
// ms/epoch and samples/s, so the once-per-run work (the teacher's soft targets
// for distillation, the final accuracy pass) is spread over them as in a real
// run. Run with -cpu 1,2 for one and two cores: training and inference use
// GOMAXPROCS goroutines, with the same results whatever the number.

const benchEpochs = 10

func benchTrain(b *testing.B, arch []int, method Method) {
	train, _ := digitsSplit(b)
	var teachers []*Teacher
	if method != Fit {
		tm, err := model.NewNeuralSequential([]int{64, 128, 128, 10}, model.ActReLU, model.ActSoftmax, 1)
		if err != nil {
			b.Fatal(err)
		}
		teachers = []*Teacher{teacherOf(b, tm)}
	}
	opt := DefaultOptions()
	opt.Method, opt.Epochs = method, benchEpochs
	b.ResetTimer()
	for b.Loop() {
		s, err := model.NewNeuralSequential(arch, model.ActReLU, model.ActSoftmax, 2)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(s, teachers, train, Data{}, opt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchEpochs*train.X.Rows)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N*benchEpochs), "ms/epoch")
}

// BenchmarkFitTeacher: epochs of the 64-128-128-10 teacher (Adam, batch 32).
func BenchmarkFitTeacher(b *testing.B) { benchTrain(b, []int{64, 128, 128, 10}, Fit) }

// BenchmarkDistillStudent: epochs of distilling 64-16-16-10 from a 64-128-128-10
// teacher (T=3, alpha=0.7), the teacher's soft targets included.
func BenchmarkDistillStudent(b *testing.B) { benchTrain(b, []int{64, 16, 16, 10}, Standard) }

// BenchmarkFitStudent: epochs of the student with no teacher.
func BenchmarkFitStudent(b *testing.B) { benchTrain(b, []int{64, 16, 16, 10}, Fit) }

func benchPredict(b *testing.B, arch []int, rows int) {
	train, _ := digitsSplit(b)
	m, err := model.NewNeuralSequential(arch, model.ActReLU, model.ActSoftmax, 1)
	if err != nil {
		b.Fatal(err)
	}
	x := model.Matrix{Rows: rows, Cols: 64, Data: train.X.Data[:rows*64]}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Predict(x); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "samples/s")
}

// Predict latency: one row, and throughput on a batch of 1024 rows.
func BenchmarkPredictTeacher1(b *testing.B)    { benchPredict(b, []int{64, 128, 128, 10}, 1) }
func BenchmarkPredictTeacher1024(b *testing.B) { benchPredict(b, []int{64, 128, 128, 10}, 1024) }
func BenchmarkPredictStudent1(b *testing.B)    { benchPredict(b, []int{64, 16, 16, 10}, 1) }
func BenchmarkPredictStudent1024(b *testing.B) { benchPredict(b, []int{64, 16, 16, 10}, 1024) }

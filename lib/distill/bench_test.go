package distill

import (
	"testing"

	"github.com/apr-go/apr/lib/model"
)

// Benchmarks on the real digits training split (1346 rows). Each reports
// samples/s; an epoch's time is 1346 / (samples/s). Run with -cpu 1,2 for one and
// two cores (training is single-threaded; the figures show the machine's noise).

func benchTrain(b *testing.B, arch []int, method Method, epochs int) {
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
	opt.Method, opt.Epochs = method, epochs
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
	b.ReportMetric(float64(b.N*epochs*train.X.Rows)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N*epochs), "ms/epoch")
}

// BenchmarkFitTeacher: one epoch of the 64-128-128-10 teacher (Adam, batch 32).
func BenchmarkFitTeacher(b *testing.B) { benchTrain(b, []int{64, 128, 128, 10}, Fit, 1) }

// BenchmarkDistillStudent: one epoch of distilling 64-16-16-10 from the teacher,
// including the teacher's soft targets for the epoch's data.
func BenchmarkDistillStudent(b *testing.B) { benchTrain(b, []int{64, 16, 16, 10}, Standard, 1) }

// BenchmarkFitStudent: one epoch of the student with no teacher.
func BenchmarkFitStudent(b *testing.B) { benchTrain(b, []int{64, 16, 16, 10}, Fit, 1) }

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

package distill

import (
	"testing"

	"github.com/apr-go/apr/lib/model"
)

func TestExpSeeds(t *testing.T) {
	d, _ := LoadData("../../testdata/digits/digits.csv.gz", LoadOptions{})
	for i := range d.X.Data {
		d.X.Data[i] /= 16
	}
	train, test, _ := Split(d, 0.25, 0)
	for seed := uint64(1); seed <= 4; seed++ {
		opt := DefaultOptions()
		opt.Epochs = 60
		opt.Method = Fit
		opt.Seed = seed
		teacher, _ := model.NewNeuralSequential([]int{64, 128, 128, 10}, model.ActReLU, model.ActSoftmax, seed)
		rt, _ := Run(teacher, nil, train, test, opt)
		tt, _ := NewTeacher(teacher)
		o := opt
		o.Method = Standard
		s, _ := model.NewNeuralSequential([]int{64, 16, 16, 10}, model.ActReLU, model.ActSoftmax, seed+100)
		rs, _ := Run(s, []*Teacher{tt}, train, test, o)
		o.Method = Fit
		s2, _ := model.NewNeuralSequential([]int{64, 16, 16, 10}, model.ActReLU, model.ActSoftmax, seed+100)
		rf, _ := Run(s2, nil, train, test, o)
		t.Logf("seed %d teacher %.4f student %.4f agree %.4f scratch %.4f", seed, rt.ValAccuracy, rs.ValAccuracy, rs.ValAgreement, rf.ValAccuracy)
	}
}

//go:build !amd64 || purego || noasm

package kernels

// Without the assembly the neighbour search is best's plain Go.
const iqAsm = false

func iqNearest8(lanes *uint8, ngroups int, q *[4]float32, x, w *float32) int {
	panic("kernels: iqNearest8 without assembly")
}

func iq1sRow(grp *iq1sScan, i1, n int) uint64 { panic("kernels: iq1sRow without assembly") }

func iq1mRow(grp *iq1mScan, i1, n int) uint64 { panic("kernels: iq1mRow without assembly") }

func iq2TrialLevels(grp *iq2Trials, ngroups, nvec int) {
	panic("kernels: iq2TrialLevels without assembly")
}

func iq2TrialFit(grp *iq2Trials, n, nvec int) { panic("kernels: iq2TrialFit without assembly") }

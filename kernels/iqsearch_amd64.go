//go:build amd64 && !purego && !noasm

package kernels

import "golang.org/x/sys/cpu"

// The grid quantizers' neighbour search in AVX2 (iqsearch_amd64.s), in plain
// and GOEXPERIMENT=simd builds alike, on CPUs that have it.
var iqAsm = cpu.X86.HasAVX2

// iqNearest8 is best over the list whose levels start at lanes (ngroups
// groups of 8, as iqSearch.lanes holds them), with the terms
// w[i]·(q[l] − x[i])² made as errTerms makes them: it returns the position
// in the list of the first smallest sum, or -1 when none is below
// MaxFloat32. Lane j of coordinate i takes the term of its level
// (VPERMPS), and the 8 coordinates are added in order, 0 first, as best
// adds them.
//
//go:noescape
func iqNearest8(lanes *uint8, ngroups int, q *[4]float32, x, w *float32) int

// iq1sRow and iq1mRow compute the scores of one row of IQ1_S's and IQ1_M's
// split searches (iq1split.go) into grp.qx and grp.q2, and return the lanes
// (bit j: i2 = i1+j, of 8·⌈n/8⌉) where some score beats grp.c's best.
//
//go:noescape
func iq1sRow(grp *iq1sScan, i1, n int) uint64

//go:noescape
func iq1mRow(grp *iq1mScan, i1, n int) uint64

// iq2TrialLevels sets grp.lv and grp.code for ngroups groups of 8 values
// under nvec vectors of 8 trials; iq2TrialFit sets grp.sqx and grp.sq2 of
// the first n values' levels (iq2trials.go).
//
//go:noescape
func iq2TrialLevels(grp *iq2Trials, ngroups, nvec int)

//go:noescape
func iq2TrialFit(grp *iq2Trials, n, nvec int)

//go:build amd64 && !purego && !noasm

package kernels

import "golang.org/x/sys/cpu"

// The grid quantizers' neighbour search in AVX2 (iqsearch_amd64.s), in plain
// and GOEXPERIMENT=simd builds alike, on CPUs that have it.
var iqAsm = cpu.X86.HasAVX2

// iqSums8 writes the sums of ngroups groups of 8 neighbours (lanes, as
// iqSearch.lanes holds them) to out: lane j of coordinate i takes
// e[i][level] (VPERMPS), and the 8 coordinates are added in order, 0 first,
// as best adds them.
//
//go:noescape
func iqSums8(lanes *uint8, ngroups int, e *[8][4]float32, out *float32)

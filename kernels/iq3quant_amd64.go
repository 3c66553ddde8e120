//go:build amd64 && !purego && !noasm

package kernels

import "golang.org/x/sys/cpu"

// The IQ3_XXS and IQ3_S trial searches in AVX2 assembly (iq3quant_amd64.s),
// in plain and GOEXPERIMENT=simd builds alike: iq3LanesGeneric with one
// trial scale per lane of 8, the lanes' neighbour lists walked together
// (each lane's list read by a masked gather, a lane past the end of its own
// list left as it is), each float32 operation the reference's in its order,
// without fused multiply-adds. TestIQ3Lanes compares it with
// iq3LanesGeneric, and TestIQ3SearchLanes searchLanes with search.
var iq3Asm = cpu.X86.HasAVX2

// iq3LanesAsm is iq3LanesGeneric for b with the tables' nbr and list.
//
//go:noescape
func iq3LanesAsm(b *iq3Lanes, nbr *uint32, list *uint16)

// lanes runs the lane kernel: the assembly on a CPU with AVX2.
func (t *iq3Tables) lanes(b *iq3Lanes) {
	if iq3Asm {
		iq3LanesAsm(b, &t.nbr[0], &t.list[0])
		return
	}
	t.iq3LanesGeneric(b)
}

//go:build amd64 && !purego && !noasm

#include "textflag.h"

// The neighbour search of the grid quantizers (see iqsearch_amd64.go).
// Operands as in asm_amd64.s: source first. Y8..Y15 hold the terms of the
// 8 coordinates (e[i][0..2] in lanes 0..2, the upper half zero); VPERMPS
// picks, per lane, the term of that lane's level. Two groups of 8 at a
// time, so that their chains of additions overlap.

// IQSTEP adds coordinate i (its term vector T) of both groups to sums A and B.
#define IQSTEP(off, T) \
	VPMOVZXBD off(SI), Y0 \
	VPMOVZXBD (64+off)(SI), Y1 \
	VPERMPS T, Y0, Y0 \
	VPERMPS T, Y1, Y1 \
	VADDPS Y0, Y2, Y2 \
	VADDPS Y1, Y3, Y3

// func iqSums8(lanes *uint8, ngroups int, e *[8][4]float32, out *float32)
TEXT ·iqSums8(SB), NOSPLIT, $0-32
	MOVQ lanes+0(FP), SI
	MOVQ ngroups+8(FP), CX
	MOVQ e+16(FP), DX
	MOVQ out+24(FP), DI
	VMOVUPS 0(DX), X8
	VMOVUPS 16(DX), X9
	VMOVUPS 32(DX), X10
	VMOVUPS 48(DX), X11
	VMOVUPS 64(DX), X12
	VMOVUPS 80(DX), X13
	VMOVUPS 96(DX), X14
	VMOVUPS 112(DX), X15

pair:
	CMPQ CX, $2
	JLT single
	VPMOVZXBD 0(SI), Y0
	VPMOVZXBD 64(SI), Y1
	VPERMPS Y8, Y0, Y2
	VPERMPS Y8, Y1, Y3
	IQSTEP(8, Y9)
	IQSTEP(16, Y10)
	IQSTEP(24, Y11)
	IQSTEP(32, Y12)
	IQSTEP(40, Y13)
	IQSTEP(48, Y14)
	IQSTEP(56, Y15)
	VMOVUPS Y2, 0(DI)
	VMOVUPS Y3, 32(DI)
	ADDQ $128, SI
	ADDQ $64, DI
	SUBQ $2, CX
	JMP pair

single:
	TESTQ CX, CX
	JZ done
	VPMOVZXBD 0(SI), Y0
	VPERMPS Y8, Y0, Y2
	VPMOVZXBD 8(SI), Y0
	VPERMPS Y9, Y0, Y0
	VADDPS Y0, Y2, Y2
	VPMOVZXBD 16(SI), Y0
	VPERMPS Y10, Y0, Y0
	VADDPS Y0, Y2, Y2
	VPMOVZXBD 24(SI), Y0
	VPERMPS Y11, Y0, Y0
	VADDPS Y0, Y2, Y2
	VPMOVZXBD 32(SI), Y0
	VPERMPS Y12, Y0, Y0
	VADDPS Y0, Y2, Y2
	VPMOVZXBD 40(SI), Y0
	VPERMPS Y13, Y0, Y0
	VADDPS Y0, Y2, Y2
	VPMOVZXBD 48(SI), Y0
	VPERMPS Y14, Y0, Y0
	VADDPS Y0, Y2, Y2
	VPMOVZXBD 56(SI), Y0
	VPERMPS Y15, Y0, Y0
	VADDPS Y0, Y2, Y2
	VMOVUPS Y2, 0(DI)

done:
	VZEROUPPER
	RET

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
// The split searches of IQ1_S and IQ1_M, one row (i1) at a time with i2 in
// the lanes (see iq1split.go). Operands as in asm_amd64.s: source first.
// Every sum is ggml's, operands in its order or commuted (exact); the
// comparison against the row's starting best only says which rows the Go
// scan must go through.

// IQ1CHECK sets M to the lanes where Q2 > 0 and QX·QX > best·Q2 (Y14: best,
// Y15: zero; Y12, Y13 scratch).
#define IQ1CHECK(QX, Q2, M) \
	VMULPS QX, QX, Y12 \
	VMULPS Q2, Y14, Y13 \
	VCMPPS $0x1e, Y13, Y12, Y12 \
	VCMPPS $0x1e, Y15, Q2, Y13 \
	VANDPS Y13, Y12, M

// iq1sScan: sumx 0, sumw 160, gx2 320 and 480, gw2 640 and 800, c 960,
// qx 1024 and 1184, q2 1344 and 1504.
// func iq1sRow(grp *iq1sScan, i1, n int) uint64
TEXT ·iq1sRow(SB), NOSPLIT, $0-32
	MOVQ grp+0(FP), DI
	MOVQ i1+8(FP), SI
	MOVQ n+16(FP), BX
	SHLQ $2, SI
	XORQ R10, R10
	XORQ AX, AX
	XORQ CX, CX
	VBROADCASTSS 960(DI), Y8  // gxp
	VBROADCASTSS 964(DI), Y9  // gwp
	VBROADCASTSS 968(DI), Y10 // gxm
	VBROADCASTSS 972(DI), Y11 // gwm
	VBROADCASTSS 976(DI), Y14 // best
	VBROADCASTSS 980(DI), Y5  // sumx[i1]
	VBROADCASTSS 984(DI), Y6  // sumw[i1]
	VBROADCASTSS 988(DI), Y7  // the middle level of shift +: 1/8
	VXORPS Y15, Y15, Y15

srow:
	MOVQ DI, R8
	ADDQ SI, R8
	MOVQ DI, R9
	ADDQ R10, R9
	VMOVUPS 0(R8), Y0
	VSUBPS Y5, Y0, Y0 // x1 = sumx[i2] - sumx[i1]
	VMOVUPS 160(R8), Y1
	VSUBPS Y6, Y1, Y1 // w1
	VMULPS Y7, Y0, Y0 // x1·p1 (x1·m1 is its negation)
	VMULPS Y7, Y1, Y1
	VMULPS Y7, Y1, Y1 // (w1·p1)·p1 = (w1·m1)·m1
	VADDPS Y0, Y8, Y2
	VADDPS 320(R8), Y2, Y2
	VADDPS Y1, Y9, Y3
	VADDPS 640(R8), Y3, Y3
	VMOVUPS Y2, 1024(R9)
	VMOVUPS Y3, 1344(R9)
	IQ1CHECK(Y2, Y3, Y4)
	VSUBPS Y0, Y10, Y2 // gxm + x1·m1
	VADDPS 480(R8), Y2, Y2
	VADDPS Y1, Y11, Y3
	VADDPS 800(R8), Y3, Y3
	VMOVUPS Y2, 1184(R9)
	VMOVUPS Y3, 1504(R9)
	IQ1CHECK(Y2, Y3, Y12)
	VORPS Y12, Y4, Y4
	VMOVMSKPS Y4, DX
	SHLQ CL, DX
	ORQ DX, AX
	ADDQ $8, CX
	ADDQ $32, SI
	ADDQ $32, R10
	SUBQ $8, BX
	JGT srow
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

// iq1mScan: px 0 and 96, w2 192, 288, 384, 480, c 576, qx 640, 736, 832,
// 928, q2 1024, 1120, 1216, 1312.
// func iq1mRow(grp *iq1mScan, i1, n int) uint64
TEXT ·iq1mRow(SB), NOSPLIT, $0-32
	MOVQ grp+0(FP), DI
	MOVQ i1+8(FP), SI
	MOVQ n+16(FP), BX
	SHLQ $2, SI
	XORQ R10, R10
	XORQ AX, AX
	XORQ CX, CX
	VBROADCASTSS 616(DI), Y14 // best
	VXORPS Y15, Y15, Y15

mrow:
	MOVQ DI, R8
	ADDQ SI, R8
	MOVQ DI, R9
	ADDQ R10, R9
	VBROADCASTSS 576(DI), Y0
	VADDPS 0(R8), Y0, Y0 // sx0 = px0[i1] + px0[i2]
	VBROADCASTSS 580(DI), Y1
	VADDPS 96(R8), Y1, Y1 // sx1
	VBROADCASTSS 584(DI), Y2
	VSUBPS Y0, Y2, Y2 // qxP0 = txp0 - sx0
	VBROADCASTSS 588(DI), Y3
	VSUBPS Y1, Y3, Y3 // qxP1
	VBROADCASTSS 592(DI), Y4
	VSUBPS Y0, Y4, Y4 // qxM0
	VBROADCASTSS 596(DI), Y5
	VSUBPS Y1, Y5, Y5 // qxM1
	VBROADCASTSS 600(DI), Y6
	VADDPS 192(R8), Y6, Y6 // q2P0 = w1p0 + w2p0[i2]
	VBROADCASTSS 604(DI), Y7
	VADDPS 288(R8), Y7, Y7 // q2P1
	VBROADCASTSS 608(DI), Y8
	VADDPS 384(R8), Y8, Y8 // q2M0
	VBROADCASTSS 612(DI), Y9
	VADDPS 480(R8), Y9, Y9 // q2M1
	VADDPS Y3, Y2, Y10 // shifts (+, +)
	VADDPS Y7, Y6, Y11
	VMOVUPS Y10, 640(R9)
	VMOVUPS Y11, 1024(R9)
	IQ1CHECK(Y10, Y11, Y0)
	VADDPS Y5, Y2, Y10 // (+, -)
	VADDPS Y9, Y6, Y11
	VMOVUPS Y10, 736(R9)
	VMOVUPS Y11, 1120(R9)
	IQ1CHECK(Y10, Y11, Y1)
	VORPS Y1, Y0, Y0
	VADDPS Y3, Y4, Y10 // (-, +)
	VADDPS Y7, Y8, Y11
	VMOVUPS Y10, 832(R9)
	VMOVUPS Y11, 1216(R9)
	IQ1CHECK(Y10, Y11, Y1)
	VORPS Y1, Y0, Y0
	VADDPS Y5, Y4, Y10 // (-, -)
	VADDPS Y9, Y8, Y11
	VMOVUPS Y10, 928(R9)
	VMOVUPS Y11, 1312(R9)
	IQ1CHECK(Y10, Y11, Y1)
	VORPS Y1, Y0, Y0
	VMOVMSKPS Y0, DX
	SHLQ CL, DX
	ORQ DX, AX
	ADDQ $8, CX
	ADDQ $32, SI
	ADDQ $32, R10
	SUBQ $8, BX
	JGT mrow
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

// The trial scales of IQ2_XXS, IQ2_XS and IQ2_S (iq2trials.go), 8 trials
// to a vector. iq2Trials: x 0, w 128, wx 256, id 384, lv 480 (value i at
// 96i), code 3552 (group k at 96k), sqx 3936, sq2 4032.
DATA iq2c<>+0x00(SB)/4, $0x3f800000 // 1.0
DATA iq2c<>+0x04(SB)/4, $0x3f000000 // 0.5
DATA iq2c<>+0x08(SB)/4, $0x4b400000 // 12582912.0 (nearest_int's 1.5·2^23)
DATA iq2c<>+0x0c(SB)/4, $0x007fffff // the mantissa
DATA iq2c<>+0x10(SB)/4, $0x00400000 // 2^22
DATA iq2c<>+0x14(SB)/4, $0x00000002 // the top level
DATA iq2c<>+0x18(SB)/4, $0x00000001 // 1
GLOBL iq2c<>(SB), RODATA|NOPTR, $0x1c

// IQ2LV does value i of a group: its level under the 8 trials' inverse
// scales (Y8), max(0, min(2, nearest_int(0.5·(id·x − 1)))), stored, and
// or-ed into the code (Y7) at bits 2i.
#define IQ2LV(i) \
	VBROADCASTSS (4*i)(SI), Y0 \
	VMULPS Y0, Y8, Y0 \
	VSUBPS Y15, Y0, Y0 \
	VMULPS Y14, Y0, Y0 \
	VADDPS Y13, Y0, Y0 \
	VPAND Y12, Y0, Y0 \
	VPSUBD Y11, Y0, Y0 \
	VPMINSD Y10, Y0, Y0 \
	VPMAXSD Y9, Y0, Y0 \
	VMOVDQU Y0, (96*i)(R8) \
	VPSLLD $(2*i), Y0, Y0 \
	VPOR Y0, Y7, Y7

// func iq2TrialLevels(grp *iq2Trials, ngroups, nvec int)
TEXT ·iq2TrialLevels(SB), NOSPLIT, $0-24
	MOVQ grp+0(FP), DI
	MOVQ ngroups+8(FP), DX
	MOVQ nvec+16(FP), CX
	VBROADCASTSS iq2c<>+0x00(SB), Y15
	VBROADCASTSS iq2c<>+0x04(SB), Y14
	VBROADCASTSS iq2c<>+0x08(SB), Y13
	VBROADCASTSS iq2c<>+0x0c(SB), Y12
	VBROADCASTSS iq2c<>+0x10(SB), Y11
	VBROADCASTSS iq2c<>+0x14(SB), Y10
	VPXOR Y9, Y9, Y9
	XORQ R11, R11 // 32·v

lvec:
	VMOVUPS 384(DI)(R11*1), Y8
	MOVQ DI, SI // x of group k
	LEAQ 480(DI)(R11*1), R8 // lv[8k][8v]
	LEAQ 3552(DI)(R11*1), R9 // code[k][8v]
	MOVQ DX, BX

lgroup:
	VPXOR Y7, Y7, Y7
	IQ2LV(0)
	IQ2LV(1)
	IQ2LV(2)
	IQ2LV(3)
	IQ2LV(4)
	IQ2LV(5)
	IQ2LV(6)
	IQ2LV(7)
	VMOVDQU Y7, (R9)
	ADDQ $32, SI
	ADDQ $768, R8
	ADDQ $96, R9
	DECQ BX
	JNZ lgroup
	ADDQ $32, R11
	DECQ CX
	JNZ lvec
	VZEROUPPER
	RET

// func iq2TrialFit(grp *iq2Trials, n, nvec int)
// Per trial: Σ (w·x)·q and Σ (w·q)·q over the n values, q = 2l+1, in order.
TEXT ·iq2TrialFit(SB), NOSPLIT, $0-24
	MOVQ grp+0(FP), DI
	MOVQ n+8(FP), DX
	MOVQ nvec+16(FP), CX
	VPBROADCASTD iq2c<>+0x18(SB), Y15
	XORQ R11, R11

fvec:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ DI, SI
	LEAQ 480(DI)(R11*1), R8
	MOVQ DX, BX

fval:
	VMOVDQU (R8), Y2
	VPSLLD $1, Y2, Y2
	VPADDD Y15, Y2, Y2
	VCVTDQ2PS Y2, Y2
	VBROADCASTSS 256(SI), Y3
	VMULPS Y2, Y3, Y3
	VADDPS Y3, Y0, Y0
	VBROADCASTSS 128(SI), Y4
	VMULPS Y2, Y4, Y4
	VMULPS Y2, Y4, Y4
	VADDPS Y4, Y1, Y1
	ADDQ $4, SI
	ADDQ $96, R8
	DECQ BX
	JNZ fval
	VMOVUPS Y0, 3936(DI)(R11*1)
	VMOVUPS Y1, 4032(DI)(R11*1)
	ADDQ $32, R11
	DECQ CX
	JNZ fvec
	VZEROUPPER
	RET

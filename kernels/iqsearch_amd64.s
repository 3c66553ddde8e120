//go:build amd64 && !purego && !noasm

#include "textflag.h"

// The neighbour search of the grid quantizers (see iqsearch_amd64.go).
// Operands as in asm_amd64.s: source first. The terms w·(q[l] − x)² of
// the 8 values are made in lanes, then transposed so that Y8..Y11 hold,
// per 128-bit half, the terms of levels 0..2 of coordinates 0..3 (low) and
// 4..7 (high); the lists store a level of coordinate i >= 4 as l+4, so
// VPERMPS picks, per lane, the term of that lane's level. Two groups of 8
// neighbours at a time, so that their chains of additions overlap; each
// lane keeps its first smallest sum (strict <) and where it was.

DATA iqc<>+0x00(SB)/4, $0x7f7fffff // math.MaxFloat32
DATA iqc<>+0x04(SB)/4, $0xffffffff // -1: no point yet
DATA iqc<>+0x08(SB)/4, $0x00000008 // 8: the next group's indices
DATA iqc<>+0x0c(SB)/4, $0x7fffffff // the largest index
DATA iqc<>+0x10(SB)/4, $0x00000000 // lane indices 0..7
DATA iqc<>+0x14(SB)/4, $0x00000001
DATA iqc<>+0x18(SB)/4, $0x00000002
DATA iqc<>+0x1c(SB)/4, $0x00000003
DATA iqc<>+0x20(SB)/4, $0x00000004
DATA iqc<>+0x24(SB)/4, $0x00000005
DATA iqc<>+0x28(SB)/4, $0x00000006
DATA iqc<>+0x2c(SB)/4, $0x00000007
GLOBL iqc<>(SB), RODATA|NOPTR, $0x30

// IQSTEP adds coordinate i (its terms T) of both groups to sums Y2 and Y3.
#define IQSTEP(off, T) \
	VPMOVZXBD off(SI), Y0 \
	VPMOVZXBD (64+off)(SI), Y1 \
	VPERMPS T, Y0, Y0 \
	VPERMPS T, Y1, Y1 \
	VADDPS Y0, Y2, Y2 \
	VADDPS Y1, Y3, Y3

// IQKEEP keeps, per lane, sum S and the index vector Y6 where S < best (Y4;
// indices Y5), then steps Y6 to the next group.
#define IQKEEP(S) \
	VCMPPS $0x11, Y4, S, Y12 \
	VBLENDVPS Y12, S, Y4, Y4 \
	VBLENDVPS Y12, Y6, Y5, Y5 \
	VPADDD Y7, Y6, Y6

// func iqNearest8(lanes *uint8, ngroups int, q *[4]float32, x, w *float32) int
TEXT ·iqNearest8(SB), NOSPLIT, $0-48
	MOVQ lanes+0(FP), SI
	MOVQ ngroups+8(FP), CX
	MOVQ q+16(FP), DX
	MOVQ x+24(FP), R8
	MOVQ w+32(FP), R9
	VMOVUPS (R8), Y0
	VMOVUPS (R9), Y1
	VBROADCASTSS 0(DX), Y2
	VSUBPS Y0, Y2, Y2 // q0 - x
	VMULPS Y2, Y1, Y13
	VMULPS Y2, Y13, Y13 // (w·d)·d
	VBROADCASTSS 4(DX), Y2
	VSUBPS Y0, Y2, Y2
	VMULPS Y2, Y1, Y14
	VMULPS Y2, Y14, Y14
	VBROADCASTSS 8(DX), Y2
	VSUBPS Y0, Y2, Y2
	VMULPS Y2, Y1, Y15
	VMULPS Y2, Y15, Y15
	VXORPS Y12, Y12, Y12
	VUNPCKLPS Y14, Y13, Y0 // e0 e1 of coordinates 0, 1 (4, 5)
	VUNPCKLPS Y12, Y15, Y1 // e2 0
	VUNPCKHPS Y14, Y13, Y2 // coordinates 2, 3 (6, 7)
	VUNPCKHPS Y12, Y15, Y3
	VSHUFPS $0x44, Y1, Y0, Y8
	VSHUFPS $0xee, Y1, Y0, Y9
	VSHUFPS $0x44, Y3, Y2, Y10
	VSHUFPS $0xee, Y3, Y2, Y11
	VBROADCASTSS iqc<>+0x00(SB), Y4
	VPBROADCASTD iqc<>+0x04(SB), Y5
	VMOVDQU iqc<>+0x10(SB), Y6
	VPBROADCASTD iqc<>+0x08(SB), Y7

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
	IQSTEP(32, Y8)
	IQSTEP(40, Y9)
	IQSTEP(48, Y10)
	IQSTEP(56, Y11)
	IQKEEP(Y2)
	IQKEEP(Y3)
	ADDQ $128, SI
	SUBQ $2, CX
	JMP pair

single:
	TESTQ CX, CX
	JZ reduce
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
	VPERMPS Y8, Y0, Y0
	VADDPS Y0, Y2, Y2
	VPMOVZXBD 40(SI), Y0
	VPERMPS Y9, Y0, Y0
	VADDPS Y0, Y2, Y2
	VPMOVZXBD 48(SI), Y0
	VPERMPS Y10, Y0, Y0
	VADDPS Y0, Y2, Y2
	VPMOVZXBD 56(SI), Y0
	VPERMPS Y11, Y0, Y0
	VADDPS Y0, Y2, Y2
	IQKEEP(Y2)

reduce:
	// The smallest of the lanes' sums (never NaN: each starts at
	// MaxFloat32 and takes only smaller values), then the least index of
	// the lanes holding it: -1 if no sum was below MaxFloat32.
	VPERM2F128 $1, Y4, Y4, Y0
	VMINPS Y0, Y4, Y0
	VPERMILPS $0x4e, Y0, Y1
	VMINPS Y1, Y0, Y0
	VPERMILPS $0xb1, Y0, Y1
	VMINPS Y1, Y0, Y0
	VCMPPS $0, Y0, Y4, Y12
	VPBROADCASTD iqc<>+0x0c(SB), Y1
	VBLENDVPS Y12, Y5, Y1, Y1
	VPERM2I128 $1, Y1, Y1, Y0
	VPMINSD Y0, Y1, Y1
	VPSHUFD $0x4e, Y1, Y0
	VPMINSD Y0, Y1, Y1
	VPSHUFD $0xb1, Y1, Y0
	VPMINSD Y0, Y1, Y1
	VMOVD X1, AX
	MOVLQSX AX, AX
	VZEROUPPER
	MOVQ AX, ret+40(FP)
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

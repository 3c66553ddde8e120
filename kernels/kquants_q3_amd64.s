//go:build amd64 && !purego && !noasm

#include "textflag.h"
#include "lanes_amd64.h"

// Q3_K in AVX2 (see kquants_q3_amd64.go): make_q3_quants with one sub-block
// per lane, and the final levels and their packing. Operands as in
// asm_amd64.s: source first, so "VSUBPS a, b, c" is c = b - a; every
// operation is the reference's, with its operands in the reference's order
// (which decides which NaN comes out where two meet).
//
// q3Asm's layout for Q3NC chains: xt at 0 (chain c at 512c, element i of
// its sub-block j at 32i + 4j), lv after it (as xt), sums (chain c: sumlx at
// 64c, suml2 at 64c + 32), flat (32c), changed (4c), scale and lt.
#define Q3NC 64
#define Q3LV (Q3NC*512)
#define Q3SUMS (Q3NC*1024)
#define Q3FLAT (Q3NC*1088)
#define Q3CHANGED (Q3NC*1120)
#define Q3SCALE (Q3NC*1124)
#define Q3LT (Q3NC*1140)

DATA q3c<>+0x00(SB)/4, $0x4b400000 // 12582912.0 (nearest_int's 1.5·2^23)
DATA q3c<>+0x04(SB)/4, $0x007fffff // the mantissa
DATA q3c<>+0x08(SB)/4, $0x00400000 // 2^22
DATA q3c<>+0x0c(SB)/4, $0xfffffffc // -4: the lowest level
DATA q3c<>+0x10(SB)/4, $0x00000003 // 3: the highest level
DATA q3c<>+0x14(SB)/4, $0x7fffffff // |x| mask
DATA q3c<>+0x18(SB)/4, $0x26901d7d // 1e-15 (groupMaxEps as float32)
DATA q3c<>+0x1c(SB)/4, $0xc0800000 // -4.0
DATA q3c<>+0x20(SB)/4, $0x00000004 // 4: the levels' offset
DATA q3c<>+0x24(SB)/4, $0x00000003 // the low two bits
DATA q3c<>+0x28(SB)/4, $0xc2000000 // -32.0
DATA q3c<>+0x2c(SB)/4, $0x3f800000 // 1.0
DATA q3c<>+0x30(SB)/4, $0xffffffe0 // -32: the lowest scale
DATA q3c<>+0x34(SB)/4, $0x0000001f // 31: the highest scale
DATA q3c<>+0x38(SB)/4, $0x00000020 // 32: the scales' offset
DATA q3c<>+0x3c(SB)/4, $0x0000000f // the low four bits
GLOBL q3c<>(SB), RODATA|NOPTR, $0x40

// Vectors for memory operands: the mantissa mask, 2^22, the lowest and
// the highest level, 8 of each.
DATA q3v<>+0x00(SB)/8, $0x007fffff007fffff
DATA q3v<>+0x08(SB)/8, $0x007fffff007fffff
DATA q3v<>+0x10(SB)/8, $0x007fffff007fffff
DATA q3v<>+0x18(SB)/8, $0x007fffff007fffff
DATA q3v<>+0x20(SB)/8, $0x0040000000400000
DATA q3v<>+0x28(SB)/8, $0x0040000000400000
DATA q3v<>+0x30(SB)/8, $0x0040000000400000
DATA q3v<>+0x38(SB)/8, $0x0040000000400000
DATA q3v<>+0x40(SB)/8, $0xfffffffcfffffffc
DATA q3v<>+0x48(SB)/8, $0xfffffffcfffffffc
DATA q3v<>+0x50(SB)/8, $0xfffffffcfffffffc
DATA q3v<>+0x58(SB)/8, $0xfffffffcfffffffc
DATA q3v<>+0x60(SB)/8, $0x0000000300000003
DATA q3v<>+0x68(SB)/8, $0x0000000300000003
DATA q3v<>+0x70(SB)/8, $0x0000000300000003
DATA q3v<>+0x78(SB)/8, $0x0000000300000003
GLOBL q3v<>(SB), RODATA|NOPTR, $128

// The VPERMD index that puts the dwords of a VPACKUSWB of two VPACKUSDW in
// order.
DATA q3perm<>+0x00(SB)/4, $0
DATA q3perm<>+0x04(SB)/4, $4
DATA q3perm<>+0x08(SB)/4, $1
DATA q3perm<>+0x0c(SB)/4, $5
DATA q3perm<>+0x10(SB)/4, $2
DATA q3perm<>+0x14(SB)/4, $6
DATA q3perm<>+0x18(SB)/4, $3
DATA q3perm<>+0x1c(SB)/4, $7
GLOBL q3perm<>(SB), RODATA|NOPTR, $32

// NEAREST is nearest_int(r) clamped to -4..3, in place, as the reference's
// bits: r + 1.5·2^23, its mantissa, minus 2^22. magic, mant and off are the
// registers that hold those constants.
#define NEAREST(r, magic, mant, off) \
	VADDPS  magic, r, r                 \
	VPAND   mant, r, r                  \
	VPSUBD  off, r, r                   \
	VPBROADCASTD q3c<>+0x0c(SB), Y11    \
	VPMAXSD Y11, r, r                   \
	VPBROADCASTD q3c<>+0x10(SB), Y11    \
	VPMINSD Y11, r, r

// func q3InitAVX2(grp *q3Asm, x *float32, nc int)
// For chains 0..nc-1 of 8 sub-blocks of 16 (128 values of x each): the
// transposition into g.xt, each sub-block's value of largest |x| (the first,
// by strict >), whether it is flat, and make_q3_quants' first levels from
// iscale = -4/max with their sums sumlx and suml2.
TEXT ·q3InitAVX2(SB), NOSPLIT, $0-24
	MOVQ grp+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ nc+16(FP), CX
	TESTQ CX, CX
	JEQ  q3idone
	XORQ DX, DX // 512c: chain c's xt and lv
	XORQ R9, R9 // 64c: its sums
	XORQ R10, R10 // 32c: its flat mask
q3ic:
	// elements 0..7 of the 8 sub-blocks (rows 64 bytes apart), then 8..15
	VMOVUPS 0(SI), Y0
	VMOVUPS 64(SI), Y1
	VMOVUPS 128(SI), Y2
	VMOVUPS 192(SI), Y3
	VMOVUPS 256(SI), Y4
	VMOVUPS 320(SI), Y5
	VMOVUPS 384(SI), Y6
	VMOVUPS 448(SI), Y7
	TRANSPOSE8X8
	VMOVUPS Y8, 0(DI)(DX*1)
	VMOVUPS Y9, 32(DI)(DX*1)
	VMOVUPS Y10, 64(DI)(DX*1)
	VMOVUPS Y11, 96(DI)(DX*1)
	VMOVUPS Y12, 128(DI)(DX*1)
	VMOVUPS Y13, 160(DI)(DX*1)
	VMOVUPS Y14, 192(DI)(DX*1)
	VMOVUPS Y15, 224(DI)(DX*1)
	VMOVUPS 32(SI), Y0
	VMOVUPS 96(SI), Y1
	VMOVUPS 160(SI), Y2
	VMOVUPS 224(SI), Y3
	VMOVUPS 288(SI), Y4
	VMOVUPS 352(SI), Y5
	VMOVUPS 416(SI), Y6
	VMOVUPS 480(SI), Y7
	TRANSPOSE8X8
	VMOVUPS Y8, 256(DI)(DX*1)
	VMOVUPS Y9, 288(DI)(DX*1)
	VMOVUPS Y10, 320(DI)(DX*1)
	VMOVUPS Y11, 352(DI)(DX*1)
	VMOVUPS Y12, 384(DI)(DX*1)
	VMOVUPS Y13, 416(DI)(DX*1)
	VMOVUPS Y14, 448(DI)(DX*1)
	VMOVUPS Y15, 480(DI)(DX*1)
	VPBROADCASTD q3c<>+0x00(SB), Y15 // magic
	VPBROADCASTD q3c<>+0x04(SB), Y14 // mant
	VPBROADCASTD q3c<>+0x08(SB), Y13 // off
	VPBROADCASTD q3c<>+0x14(SB), Y12 // |x| mask
	// Y0 amax, Y1 maxv: the first value of largest |x| (strict >, from +0)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	LEAQ   (DI)(DX*1), R8
	MOVQ   $16, AX
q3imax:
	VMOVUPS   (R8), Y2
	VPAND     Y12, Y2, Y3
	VCMPPS    $0x1e, Y0, Y3, Y4 // |v| > amax (ordered)
	VBLENDVPS Y4, Y3, Y0, Y0
	VBLENDVPS Y4, Y2, Y1, Y1
	ADDQ      $32, R8
	DECQ      AX
	JNZ       q3imax
	VBROADCASTSS q3c<>+0x18(SB), Y3
	VCMPPS    $0x11, Y3, Y0, Y3 // amax < eps (ordered): flat
	VMOVUPS   Y3, Q3FLAT(DI)(R10*1)
	VBROADCASTSS q3c<>+0x1c(SB), Y2
	VDIVPS    Y1, Y2, Y2 // iscale = -4 / maxv
	VXORPS    Y7, Y7, Y7 // sumlx
	VXORPS    Y8, Y8, Y8 // suml2
	LEAQ      (DI)(DX*1), R8
	MOVQ      $16, AX
q3isum:
	VMOVUPS   (R8), Y0
	VMULPS    Y0, Y2, Y3 // iscale·v
	NEAREST(Y3, Y15, Y14, Y13)
	VMOVDQU   Y3, Q3LV(R8)
	VMULPS    Y0, Y0, Y4 // w = v·v
	VCVTDQ2PS Y3, Y5
	VMULPS    Y0, Y4, Y6 // (w·v)·l
	VMULPS    Y5, Y6, Y6
	VADDPS    Y6, Y7, Y7
	VMULPS    Y5, Y4, Y6 // (w·l)·l
	VMULPS    Y5, Y6, Y6
	VADDPS    Y6, Y8, Y8
	ADDQ      $32, R8
	DECQ      AX
	JNZ       q3isum
	VMOVUPS   Y7, Q3SUMS(DI)(R9*1)
	VMOVUPS   Y8, Q3SUMS+32(DI)(R9*1)
	ADDQ      $512, SI
	ADDQ      $512, DX
	ADDQ      $64, R9
	ADDQ      $32, R10
	DECQ      CX
	JNZ       q3ic
q3idone:
	VZEROUPPER
	RET

// func q3PassAVX2(grp *q3Asm, first, n int)
// One pass of make_q3_quants' rmse loop over chains first..first+n-1:
// element by element, and for each element chain after chain (their steps
// are independent). A lane moves element i to the level that fits the sums
// without it, when that is a change and improves the fit; the lanes that
// move are ORed into changed[c] as bits. Each step is a long chain of
// dependent operations, so two chains' steps are written interleaved,
// instruction by instruction, for the core to run side by side; to fit
// both in 16 registers a step computes keep, the complement of the
// reference's condition (NGT_UQ is "not greater", true for NaNs as the
// reference's > is false), and blends the old values in from memory where
// it holds.
TEXT ·q3PassAVX2(SB), NOSPLIT, $0-24
	MOVQ grp+0(FP), DI
	MOVQ first+8(FP), DX
	MOVQ n+16(FP), CX
	TESTQ CX, CX
	JEQ  q3pdone
	VPBROADCASTD q3c<>+0x00(SB), Y15 // magic
	VXORPS       Y14, Y14, Y14
	MOVQ DX, SI
	SHLQ $9, SI
	ADDQ DI, SI // &xt[first]
	MOVQ DX, BX
	SHLQ $6, BX
	LEAQ Q3SUMS(DI)(BX*1), BX // &sums[first]
	LEAQ Q3CHANGED(DI)(DX*4), R11
	MOVQ $16, AX
q3pi:
	MOVQ SI, R8
	MOVQ BX, R9
	MOVQ R11, R12
	MOVQ CX, R13
	CMPQ R13, $2
	JLT  q3pone
q3ppair:
	VMOVUPS   0(R8), Y0
	VMOVUPS   512(R8), Y7
	VMULPS    Y0, Y0, Y1
	VMULPS    Y7, Y7, Y8
	VMULPS    Y0, Y1, Y2
	VMULPS    Y7, Y8, Y9
	VMOVDQU   Q3LV+0(R8), Y3
	VMOVDQU   Q3LV+512(R8), Y10
	VCVTDQ2PS Y3, Y4
	VCVTDQ2PS Y10, Y11
	VMULPS    Y4, Y2, Y5
	VMULPS    Y11, Y9, Y12
	VMOVUPS   0(R9), Y6
	VMOVUPS   64(R9), Y13
	VSUBPS    Y5, Y6, Y5
	VSUBPS    Y12, Y13, Y12
	VMULPS    Y4, Y1, Y6
	VMULPS    Y11, Y8, Y13
	VMULPS    Y4, Y6, Y6
	VMULPS    Y11, Y13, Y13
	VMOVUPS   32(R9), Y4
	VMOVUPS   96(R9), Y11
	VSUBPS    Y6, Y4, Y6
	VSUBPS    Y13, Y11, Y13
	VCMPPS    $0x1a, Y14, Y5, Y4
	VCMPPS    $0x1a, Y14, Y12, Y11
	VMULPS    Y6, Y0, Y0
	VMULPS    Y13, Y7, Y7
	VDIVPS    Y5, Y0, Y0
	VDIVPS    Y12, Y7, Y7
	VADDPS    Y15, Y0, Y0
	VADDPS    Y15, Y7, Y7
	VPAND     q3v<>+0x00(SB), Y0, Y0
	VPAND     q3v<>+0x00(SB), Y7, Y7
	VPSUBD    q3v<>+0x20(SB), Y0, Y0
	VPSUBD    q3v<>+0x20(SB), Y7, Y7
	VPMAXSD   q3v<>+0x40(SB), Y0, Y0
	VPMAXSD   q3v<>+0x40(SB), Y7, Y7
	VPMINSD   q3v<>+0x60(SB), Y0, Y0
	VPMINSD   q3v<>+0x60(SB), Y7, Y7
	VPCMPEQD  Y3, Y0, Y3
	VPCMPEQD  Y10, Y7, Y10
	VPOR      Y4, Y3, Y3
	VPOR      Y11, Y10, Y10
	VCVTDQ2PS Y0, Y4
	VCVTDQ2PS Y7, Y11
	VMULPS    Y4, Y2, Y2
	VMULPS    Y11, Y9, Y9
	VADDPS    Y2, Y5, Y5
	VADDPS    Y9, Y12, Y12
	VMULPS    Y4, Y1, Y1
	VMULPS    Y11, Y8, Y8
	VMULPS    Y4, Y1, Y1
	VMULPS    Y11, Y8, Y8
	VADDPS    Y1, Y6, Y6
	VADDPS    Y8, Y13, Y13
	VCMPPS    $0x1a, Y14, Y6, Y1
	VCMPPS    $0x1a, Y14, Y13, Y8
	VPOR      Y1, Y3, Y3
	VPOR      Y8, Y10, Y10
	VMULPS    Y5, Y5, Y1
	VMULPS    Y12, Y12, Y8
	VMULPS    32(R9), Y1, Y1
	VMULPS    96(R9), Y8, Y8
	VMOVUPS   0(R9), Y2
	VMOVUPS   64(R9), Y9
	VMULPS    Y2, Y2, Y2
	VMULPS    Y9, Y9, Y9
	VMULPS    Y6, Y2, Y2
	VMULPS    Y13, Y9, Y9
	VCMPPS    $0x1a, Y2, Y1, Y1
	VCMPPS    $0x1a, Y9, Y8, Y8
	VPOR      Y1, Y3, Y3
	VPOR      Y8, Y10, Y10
	VBLENDVPS Y3, Q3LV+0(R8), Y0, Y0
	VBLENDVPS Y10, Q3LV+512(R8), Y7, Y7
	VMOVDQU   Y0, Q3LV+0(R8)
	VMOVDQU   Y7, Q3LV+512(R8)
	VBLENDVPS Y3, 0(R9), Y5, Y5
	VBLENDVPS Y10, 64(R9), Y12, Y12
	VMOVUPS   Y5, 0(R9)
	VMOVUPS   Y12, 64(R9)
	VBLENDVPS Y3, 32(R9), Y6, Y6
	VBLENDVPS Y10, 96(R9), Y13, Y13
	VMOVUPS   Y6, 32(R9)
	VMOVUPS   Y13, 96(R9)
	VMOVMSKPS Y3, R10
	XORL      $0xff, R10
	ORL       R10, (R12)
	VMOVMSKPS Y10, R10
	XORL      $0xff, R10
	ORL       R10, 4(R12)
	ADDQ $1024, R8
	ADDQ $128, R9
	ADDQ $8, R12
	SUBQ $2, R13
	CMPQ R13, $2
	JGE  q3ppair
	TESTQ R13, R13
	JEQ  q3pnext
q3pone:
	VMOVUPS   0(R8), Y0
	VMULPS    Y0, Y0, Y1
	VMULPS    Y0, Y1, Y2
	VMOVDQU   Q3LV+0(R8), Y3
	VCVTDQ2PS Y3, Y4
	VMULPS    Y4, Y2, Y5
	VMOVUPS   0(R9), Y6
	VSUBPS    Y5, Y6, Y5
	VMULPS    Y4, Y1, Y6
	VMULPS    Y4, Y6, Y6
	VMOVUPS   32(R9), Y4
	VSUBPS    Y6, Y4, Y6
	VCMPPS    $0x1a, Y14, Y5, Y4
	VMULPS    Y6, Y0, Y0
	VDIVPS    Y5, Y0, Y0
	VADDPS    Y15, Y0, Y0
	VPAND     q3v<>+0x00(SB), Y0, Y0
	VPSUBD    q3v<>+0x20(SB), Y0, Y0
	VPMAXSD   q3v<>+0x40(SB), Y0, Y0
	VPMINSD   q3v<>+0x60(SB), Y0, Y0
	VPCMPEQD  Y3, Y0, Y3
	VPOR      Y4, Y3, Y3
	VCVTDQ2PS Y0, Y4
	VMULPS    Y4, Y2, Y2
	VADDPS    Y2, Y5, Y5
	VMULPS    Y4, Y1, Y1
	VMULPS    Y4, Y1, Y1
	VADDPS    Y1, Y6, Y6
	VCMPPS    $0x1a, Y14, Y6, Y1
	VPOR      Y1, Y3, Y3
	VMULPS    Y5, Y5, Y1
	VMULPS    32(R9), Y1, Y1
	VMOVUPS   0(R9), Y2
	VMULPS    Y2, Y2, Y2
	VMULPS    Y6, Y2, Y2
	VCMPPS    $0x1a, Y2, Y1, Y1
	VPOR      Y1, Y3, Y3
	VBLENDVPS Y3, Q3LV+0(R8), Y0, Y0
	VMOVDQU   Y0, Q3LV+0(R8)
	VBLENDVPS Y3, 0(R9), Y5, Y5
	VMOVUPS   Y5, 0(R9)
	VBLENDVPS Y3, 32(R9), Y6, Y6
	VMOVUPS   Y6, 32(R9)
	VMOVMSKPS Y3, R10
	XORL      $0xff, R10
	ORL       R10, (R12)
q3pnext:
	ADDQ $32, SI
	DECQ AX
	JNZ  q3pi
q3pdone:
	VZEROUPPER
	RET

// func q3FinishAVX2(grp *q3Asm, nc int)
// The results of chains 0..nc-1: scale sumlx/suml2 (0 where flat) to
// g.scale, and the levels plus 4 (0 where flat) back in x's order to g.lt.
TEXT ·q3FinishAVX2(SB), NOSPLIT, $0-16
	MOVQ grp+0(FP), DI
	MOVQ nc+8(FP), CX
	TESTQ CX, CX
	JEQ  q3fdone
	XORQ DX, DX // 512c
	XORQ R9, R9 // 64c
	XORQ R10, R10 // 32c
	LEAQ Q3LT(DI), SI
q3fc:
	VMOVUPS   Q3FLAT(DI)(R10*1), Y8
	VMOVUPS   Q3SUMS(DI)(R9*1), Y0
	VDIVPS    Q3SUMS+32(DI)(R9*1), Y0, Y0
	VANDNPS   Y0, Y8, Y0
	VMOVUPS   Y0, Q3SCALE(DI)(R10*1)
	MOVQ      $0, BX // half: elements 0..7, then 8..15
q3fh:
	LEAQ      Q3LV(DI)(DX*1), R8
	MOVQ      BX, R11
	SHLQ      $8, R11
	ADDQ      R11, R8
	VPBROADCASTD q3c<>+0x20(SB), Y9
	VMOVUPS   Q3FLAT(DI)(R10*1), Y10
	VPADDD    0(R8), Y9, Y0
	VPANDN    Y0, Y10, Y0
	VPADDD    32(R8), Y9, Y1
	VPANDN    Y1, Y10, Y1
	VPADDD    64(R8), Y9, Y2
	VPANDN    Y2, Y10, Y2
	VPADDD    96(R8), Y9, Y3
	VPANDN    Y3, Y10, Y3
	VPADDD    128(R8), Y9, Y4
	VPANDN    Y4, Y10, Y4
	VPADDD    160(R8), Y9, Y5
	VPANDN    Y5, Y10, Y5
	VPADDD    192(R8), Y9, Y6
	VPANDN    Y6, Y10, Y6
	VPADDD    224(R8), Y9, Y7
	VPANDN    Y7, Y10, Y7
	TRANSPOSE8X8
	// row j (sub-block j of the chain) to lt[128c + 16j + 8·half]
	MOVQ      BX, R11
	SHLQ      $5, R11
	ADDQ      SI, R11
	VMOVDQU   Y8, 0(R11)
	VMOVDQU   Y9, 64(R11)
	VMOVDQU   Y10, 128(R11)
	VMOVDQU   Y11, 192(R11)
	VMOVDQU   Y12, 256(R11)
	VMOVDQU   Y13, 320(R11)
	VMOVDQU   Y14, 384(R11)
	VMOVDQU   Y15, 448(R11)
	INCQ      BX
	CMPQ      BX, $2
	JNE       q3fh
	ADDQ      $512, SI
	ADDQ      $512, DX
	ADDQ      $64, R9
	ADDQ      $32, R10
	DECQ      CX
	JNZ       q3fc
q3fdone:
	VZEROUPPER
	RET

// HM ORs bit 2 of the levels of row k (lt[32k+l..], at byte offset
// 128k + o) into acc at bit k.
#define HM(o, k, acc) \
	VMOVDQU o(DI), Y9    \
	VPSRLD  $2, Y9, Y9   \
	VPSLLD  $k, Y9, Y9   \
	VPOR    Y9, acc, acc

// CRUMB ORs the low two bits of the levels at byte offset o into acc at
// bits s, s+1.
#define CRUMB(o, s, acc) \
	VPAND   o(DI), Y8, Y9 \
	VPSLLD  $s, Y9, Y9    \
	VPOR    Y9, acc, acc

// PACK4 stores the low bytes of the dwords of a, b, c, d (in that order)
// as 32 bytes at o(SI).
#define PACK4(a, b, c, d, o) \
	VPACKUSDW b, a, a   \
	VPACKUSDW d, c, c   \
	VPACKUSWB c, a, a   \
	VPERMD    a, Y10, a \
	VMOVDQU   a, o(SI)

// HMROW is hmask byte l..l+7 (from the levels at byte offset 4l of each
// row of 32) into acc.
#define HMROW(o, acc) \
	VPXOR acc, acc, acc \
	HM(o, 0, acc)       \
	HM(o+128, 1, acc)   \
	HM(o+256, 2, acc)   \
	HM(o+384, 3, acc)   \
	HM(o+512, 4, acc)   \
	HM(o+640, 5, acc)   \
	HM(o+768, 6, acc)   \
	HM(o+896, 7, acc)

// CRUMBROW is a crumb byte l..l+7 from the 4 rows from byte offset o.
#define CRUMBROW(o, acc) \
	VPXOR acc, acc, acc \
	CRUMB(o, 0, acc)     \
	CRUMB(o+128, 2, acc) \
	CRUMB(o+256, 4, acc) \
	CRUMB(o+384, 6, acc)

// func q3BlockAVX2(y *byte, x *float32, scales, dj *[16]float32, lt *int32)
// q3Scales, requantize16 and packQ3K for one block. The scales: the first
// of largest |s| (NaNs skipped, as the reference's strict > skips them;
// the largest |s| is an integer maximum of the |s| bits), iscale -32 over
// it, each scale nearest_int(iscale·s) kept to its low byte as int8,
// clamped to -32..31, plus 32, stored in 6 bits (low 4 bits in bytes 96..103,
// the high 2 in bytes 104..107), d = 1/iscale as f16 (VCVTPS2PH rounds to
// nearest even, as F32ToF16Bits; d is never a NaN), and the sub-blocks'
// scales dj = d·(l - 32) to dj; if every |s| is 0 or NaN, zeros and d 0
// (then every dj is -0). The levels: where dj is not ±0, nearest_int(x/dj)
// clamped to -4..3, plus 4, replace the search's in lt (the reference's
// division and bits); then the levels 0..7 of lt go to y as hmask (byte l,
// bit k: bit 2 of level 32k+l) and the crumbs (byte 32+l: the low bits of
// levels l, l+32, l+64, l+96 at bits 0, 2, 4, 6; byte 64+l: those of l+128
// .. l+224).
TEXT ·q3BlockAVX2(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), SI
	MOVQ x+8(FP), R8
	MOVQ scales+16(FP), DX
	MOVQ dj+24(FP), R9
	MOVQ lt+32(FP), DI
	VMOVUPS      (DX), Y0
	VMOVUPS      32(DX), Y1
	VPBROADCASTD q3c<>+0x14(SB), Y2
	VPAND        Y2, Y0, Y3 // |s|, NaN lanes 0
	VCMPPS       $0, Y3, Y3, Y5
	VPAND        Y5, Y3, Y3
	VPAND        Y2, Y1, Y4
	VCMPPS       $0, Y4, Y4, Y5
	VPAND        Y5, Y4, Y4
	VPMAXUD      Y4, Y3, Y5
	VPERM2I128   $0x01, Y5, Y5, Y6
	VPMAXUD      Y6, Y5, Y5
	VPSHUFD      $0x4e, Y5, Y6
	VPMAXUD      Y6, Y5, Y5
	VPSHUFD      $0xb1, Y5, Y6
	VPMAXUD      Y6, Y5, Y5 // amax in every lane
	VMOVD        X5, AX
	TESTL        AX, AX
	JEQ          q3bzero
	VPCMPEQD     Y5, Y3, Y6
	VPCMPEQD     Y5, Y4, Y7
	VMOVMSKPS    Y6, AX
	VMOVMSKPS    Y7, BX
	SHLL         $8, BX
	ORL          BX, AX
	BSFL         AX, AX
	VMOVSS       (DX)(AX*4), X6 // maxScale
	VMOVSS       q3c<>+0x28(SB), X7
	VDIVSS       X6, X7, X7 // iscale = -32 / maxScale
	VBROADCASTSS X7, Y8
	VPBROADCASTD q3c<>+0x00(SB), Y15 // magic
	VPBROADCASTD q3c<>+0x04(SB), Y14 // mant
	VPBROADCASTD q3c<>+0x08(SB), Y13 // off
	VPBROADCASTD q3c<>+0x30(SB), Y12 // -32
	VPBROADCASTD q3c<>+0x34(SB), Y11 // 31
	VPBROADCASTD q3c<>+0x38(SB), Y10 // 32
	VMULPS       Y0, Y8, Y0 // iscale·s
	VMULPS       Y1, Y8, Y1
	VADDPS       Y15, Y0, Y0
	VADDPS       Y15, Y1, Y1
	VPAND        Y14, Y0, Y0
	VPAND        Y14, Y1, Y1
	VPSUBD       Y13, Y0, Y0
	VPSUBD       Y13, Y1, Y1
	VPSLLD       $24, Y0, Y0 // int8
	VPSLLD       $24, Y1, Y1
	VPSRAD       $24, Y0, Y0
	VPSRAD       $24, Y1, Y1
	VPMAXSD      Y12, Y0, Y0
	VPMAXSD      Y12, Y1, Y1
	VPMINSD      Y11, Y0, Y0 // l - 32
	VPMINSD      Y11, Y1, Y1
	VPADDD       Y10, Y0, Y2 // l
	VPADDD       Y10, Y1, Y3
	// bytes 96..103: the low 4 bits of l[j] and l[j+8]; bytes 104..107:
	// the high 2 bits of l[m], l[m+4], l[m+8], l[m+12] at bits 0, 2, 4, 6
	VPBROADCASTD q3c<>+0x3c(SB), Y9
	VPAND        Y9, Y2, Y4
	VPAND        Y9, Y3, Y5
	VPSLLD       $4, Y5, Y5
	VPOR         Y5, Y4, Y4
	VPSRLD       $4, Y2, Y5
	VPSRLD       $4, Y3, Y6
	VPSLLD       $4, Y6, Y6
	VPOR         Y6, Y5, Y5
	VEXTRACTI128 $1, Y5, X6
	VPSLLD       $2, X6, X6
	VPOR         X6, X5, X5
	VEXTRACTI128 $1, Y4, X6
	VPACKUSDW    X6, X4, X4
	VPACKUSDW    X5, X5, X5
	VPACKUSWB    X5, X4, X4
	VMOVQ        X4, 96(SI)
	VPEXTRD      $2, X4, 104(SI)
	// d = 1/iscale as f16, and back
	VMOVSS       q3c<>+0x2c(SB), X8
	VDIVSS       X7, X8, X8
	VCVTPS2PH    $0, X8, X8
	VMOVD        X8, AX
	MOVW         AX, 108(SI)
	VCVTPH2PS    X8, X8
	VBROADCASTSS X8, Y8
	VCVTDQ2PS    Y0, Y0
	VCVTDQ2PS    Y1, Y1
	VMULPS       Y0, Y8, Y0 // d·(l - 32)
	VMULPS       Y1, Y8, Y1
	VMOVUPS      Y0, (R9)
	VMOVUPS      Y1, 32(R9)
	VPBROADCASTD q3c<>+0x20(SB), Y12 // 4
	XORQ AX, AX // 64j
	MOVQ DI, DX
q3lj:
	MOVL  (R9), BX
	ANDL  $0x7fffffff, BX
	JEQ   q3lskip
	VBROADCASTSS (R9), Y1
	VMOVUPS (R8)(AX*1), Y0
	VDIVPS  Y1, Y0, Y0
	NEAREST(Y0, Y15, Y14, Y13)
	VPADDD  Y12, Y0, Y0
	VMOVDQU Y0, (DX)
	VMOVUPS 32(R8)(AX*1), Y0
	VDIVPS  Y1, Y0, Y0
	NEAREST(Y0, Y15, Y14, Y13)
	VPADDD  Y12, Y0, Y0
	VMOVDQU Y0, 32(DX)
q3lskip:
	ADDQ $4, R9
	ADDQ $64, DX
	ADDQ $64, AX
	CMPQ AX, $1024
	JNE  q3lj
	JMP  q3bpack
q3bzero:
	MOVQ $0, 96(SI)
	MOVL $0, 104(SI)
	MOVW $0, 108(SI)
q3bpack:
	VPBROADCASTD q3c<>+0x24(SB), Y8 // 3
	VMOVDQU q3perm<>(SB), Y10
	HMROW(0, Y0)
	HMROW(32, Y1)
	HMROW(64, Y2)
	HMROW(96, Y3)
	PACK4(Y0, Y1, Y2, Y3, 0)
	CRUMBROW(0, Y0)
	CRUMBROW(32, Y1)
	CRUMBROW(64, Y2)
	CRUMBROW(96, Y3)
	PACK4(Y0, Y1, Y2, Y3, 32)
	CRUMBROW(512, Y0)
	CRUMBROW(544, Y1)
	CRUMBROW(576, Y2)
	CRUMBROW(608, Y3)
	PACK4(Y0, Y1, Y2, Y3, 64)
	VZEROUPPER
	RET

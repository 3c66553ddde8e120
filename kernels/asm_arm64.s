//go:build arm64 && !purego && !noasm

#include "textflag.h"

// NEON kernels for arm64; see asm_arm64.go for what each computes and why
// its bytes equal the Go reference's. Go's assembler has no mnemonics for
// the vector float instructions, so those are WORDs, each with the GNU
// syntax beside it. They run with Go's FPCR (round to nearest even, no
// flush to zero, NaNs propagated, IEEE half precision).

// func q8_0NEON(dst *byte, src *float32, nb int) (done int, maxBits uint32)
TEXT ·q8_0NEON(SB), NOSPLIT, $0-36
	MOVD  dst+0(FP), R0
	MOVD  src+8(FP), R1
	MOVD  nb+16(FP), R2
	MOVD  $0, R3          // blocks done
	MOVW  $0, R4          // largest |x| bits
	MOVW  $0x7fffffff, R5
	VDUP  R5, V31.S4      // |x| mask
	MOVW  $0x42fe0000, R5 // 127.0
	FMOVS R5, F30
	MOVW  $0x3f800000, R5 // 1.0
	FMOVS R5, F29
	MOVW  $0x7f800000, R8 // +inf bits
q8loop:
	CMP   R2, R3
	BGE   q8done
	ADD   $64, R1, R6
	VLD1  (R1), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1  (R6), [V4.S4, V5.S4, V6.S4, V7.S4]
	VAND  V31.B16, V0.B16, V8.B16
	VAND  V31.B16, V1.B16, V9.B16
	VAND  V31.B16, V2.B16, V10.B16
	VAND  V31.B16, V3.B16, V11.B16
	VAND  V31.B16, V4.B16, V12.B16
	VAND  V31.B16, V5.B16, V13.B16
	VAND  V31.B16, V6.B16, V14.B16
	VAND  V31.B16, V7.B16, V15.B16
	VUMAX V9.S4, V8.S4, V8.S4
	VUMAX V11.S4, V10.S4, V10.S4
	VUMAX V13.S4, V12.S4, V12.S4
	VUMAX V15.S4, V14.S4, V14.S4
	VUMAX V10.S4, V8.S4, V8.S4
	VUMAX V14.S4, V12.S4, V12.S4
	VUMAX V12.S4, V8.S4, V16.S4
	WORD  $0x6eb0aa11 // umaxv s17, v16.4s
	FMOVS F17, R7
	CMPW  R8, R7
	BHS   q8done      // NaN or infinity: the reference's block
	CMPW  R4, R7
	CSELW HI, R7, R4, R4
	FDIVS F30, F17, F18 // d = amax / 127
	FCVTSH F18, F19
	FMOVS F19, R9
	MOVH  R9, (R0)
	// id = 1/d, or 0 where that is +inf (d == 0, or d so small that its
	// inverse overflows): then the reference's roundf of x*id, of ±inf
	// or NaN, writes 0s, as FCVTAS of x*0 does.
	FDIVS F18, F29, F21
	FMOVS F21, R10
	CMPW  R8, R10
	CSELW EQ, ZR, R10, R10
	FMOVS R10, F21
	VDUP  V21.S[0], V22.S4
	WORD  $0x6e36dc00 // fmul v0.4s, v0.4s, v22.4s
	WORD  $0x6e36dc21 // fmul v1.4s, v1.4s, v22.4s
	WORD  $0x6e36dc42 // fmul v2.4s, v2.4s, v22.4s
	WORD  $0x6e36dc63 // fmul v3.4s, v3.4s, v22.4s
	WORD  $0x6e36dc84 // fmul v4.4s, v4.4s, v22.4s
	WORD  $0x6e36dca5 // fmul v5.4s, v5.4s, v22.4s
	WORD  $0x6e36dcc6 // fmul v6.4s, v6.4s, v22.4s
	WORD  $0x6e36dce7 // fmul v7.4s, v7.4s, v22.4s
	// roundf: to nearest, ties away from zero (|x*id| <= 127.00002)
	WORD  $0x4e21c800 // fcvtas v0.4s, v0.4s
	WORD  $0x4e21c821 // fcvtas v1.4s, v1.4s
	WORD  $0x4e21c842 // fcvtas v2.4s, v2.4s
	WORD  $0x4e21c863 // fcvtas v3.4s, v3.4s
	WORD  $0x4e21c884 // fcvtas v4.4s, v4.4s
	WORD  $0x4e21c8a5 // fcvtas v5.4s, v5.4s
	WORD  $0x4e21c8c6 // fcvtas v6.4s, v6.4s
	WORD  $0x4e21c8e7 // fcvtas v7.4s, v7.4s
	// low bytes of the 32 results, in order
	VUZP1 V1.H8, V0.H8, V0.H8
	VUZP1 V3.H8, V2.H8, V2.H8
	VUZP1 V5.H8, V4.H8, V4.H8
	VUZP1 V7.H8, V6.H8, V6.H8
	VUZP1 V2.B16, V0.B16, V24.B16
	VUZP1 V6.B16, V4.B16, V25.B16
	ADD   $2, R0, R11
	VST1  [V24.B16, V25.B16], (R11)
	ADD   $34, R0
	ADD   $128, R1
	ADD   $1, R3
	B     q8loop
q8done:
	MOVD  R3, done+24(FP)
	MOVW  R4, maxBits+32(FP)
	RET

// func f32ToF16NEON(dst *uint16, src *float32, n int)
// n is a multiple of 8. NaN lanes become the quiet NaN of their sign first,
// which FCVTN turns into the reference's 0x7e00|sign; other values convert
// with IEEE round to nearest even, as the reference.
TEXT ·f32ToF16NEON(SB), NOSPLIT, $0-24
	MOVD  dst+0(FP), R0
	MOVD  src+8(FP), R1
	MOVD  n+16(FP), R2
	LSR   $3, R2
	CBZ   R2, h16done
	MOVW  $0x80000000, R5
	VDUP  R5, V30.S4
	MOVW  $0x7fc00000, R5
	VDUP  R5, V29.S4
h16loop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	WORD  $0x4e20e402 // fcmeq v2.4s, v0.4s, v0.4s (not NaN)
	WORD  $0x4e21e423 // fcmeq v3.4s, v1.4s, v1.4s
	VAND  V30.B16, V0.B16, V4.B16
	VORR  V29.B16, V4.B16, V4.B16
	VAND  V30.B16, V1.B16, V5.B16
	VORR  V29.B16, V5.B16, V5.B16
	VBIF  V2.B16, V4.B16, V0.B16
	VBIF  V3.B16, V5.B16, V1.B16
	WORD  $0x0e216804 // fcvtn v4.4h, v0.4s
	WORD  $0x4e216824 // fcvtn2 v4.8h, v1.4s
	VST1.P [V4.H8], 16(R0)
	SUB   $1, R2
	CBNZ  R2, h16loop
h16done:
	RET

// func f16ToF32NEON(dst *float32, src *uint16, n int)
// n is a multiple of 8. FCVTL is exact, subnormals included; it sets the
// quiet bit of a signalling NaN, which the reference keeps as it was, so on
// NaN lanes that bit is taken back from the half's bit 9.
TEXT ·f16ToF32NEON(SB), NOSPLIT, $0-24
	MOVD  dst+0(FP), R0
	MOVD  src+8(FP), R1
	MOVD  n+16(FP), R2
	LSR   $3, R2
	CBZ   R2, f16done
	MOVW  $0x7c00, R5
	VDUP  R5, V31.S4
	MOVW  $0x3ff, R5
	VDUP  R5, V30.S4
	MOVW  $0x00400000, R5
	VDUP  R5, V29.S4
f16loop:
	VLD1.P 16(R1), [V0.H8]
	WORD  $0x0e217801 // fcvtl v1.4s, v0.4h
	WORD  $0x4e217802 // fcvtl2 v2.4s, v0.8h
	VUXTL  V0.H4, V3.S4
	VUXTL2 V0.H8, V4.S4
#define SNAN(h, f) \
	VAND   V31.B16, h.B16, V5.B16 \
	VCMEQ  V31.S4, V5.S4, V5.S4   \
	VCMTST V30.S4, h.S4, V6.S4    \
	VAND   V6.B16, V5.B16, V5.B16 \
	VAND   V29.B16, V5.B16, V5.B16 \
	VSHL   $13, h.S4, h.S4        \
	VBIT   V5.B16, h.B16, f.B16
	SNAN(V3, V1)
	SNAN(V4, V2)
#undef SNAN
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUB   $1, R2
	CBNZ  R2, f16loop
f16done:
	RET

// func f32ToBF16NEON(dst *uint16, src *float32, n int)
// n is a multiple of 8: the top halves of b + 0x7fff + (b>>16)&1, or of
// b | 0x00400000 (the top half's quiet bit 0x40) for NaN, as the reference.
TEXT ·f32ToBF16NEON(SB), NOSPLIT, $0-24
	MOVD  dst+0(FP), R0
	MOVD  src+8(FP), R1
	MOVD  n+16(FP), R2
	LSR   $3, R2
	CBZ   R2, b16done
	MOVW  $1, R5
	VDUP  R5, V31.S4
	MOVW  $0x7fff, R5
	VDUP  R5, V30.S4
	MOVW  $0x00400000, R5
	VDUP  R5, V29.S4
b16loop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	WORD  $0x4e20e404 // fcmeq v4.4s, v0.4s, v0.4s (not NaN)
	WORD  $0x4e21e425 // fcmeq v5.4s, v1.4s, v1.4s
#define BF16(x, t, q) \
	VUSHR $16, x.S4, t.S4         \
	VAND  V31.B16, t.B16, t.B16   \
	VADD  V30.S4, t.S4, t.S4      \
	VADD  x.S4, t.S4, t.S4        \
	VORR  V29.B16, x.B16, x.B16   \
	VBIF  q.B16, x.B16, t.B16
	BF16(V0, V2, V4)
	BF16(V1, V3, V5)
#undef BF16
	VUZP2 V3.H8, V2.H8, V6.H8
	VST1.P [V6.H8], 16(R0)
	SUB   $1, R2
	CBNZ  R2, b16loop
b16done:
	RET

// func bf16ToF32NEON(dst *float32, src *uint16, n int)
// n is a multiple of 8: each half becomes the top half of a word.
TEXT ·bf16ToF32NEON(SB), NOSPLIT, $0-24
	MOVD  dst+0(FP), R0
	MOVD  src+8(FP), R1
	MOVD  n+16(FP), R2
	LSR   $3, R2
	CBZ   R2, bfdone
	VEOR  V31.B16, V31.B16, V31.B16
bfloop:
	VLD1.P 16(R1), [V0.H8]
	VZIP1 V0.H8, V31.H8, V1.H8
	VZIP2 V0.H8, V31.H8, V2.H8
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUB   $1, R2
	CBNZ  R2, bfloop
bfdone:
	RET

// func dotNEON(a, b *float32, n int, s *[8]float32)
// n is a multiple of 8: s[j] = sum over i of a[8i+j]*b[8i+j], each product
// rounded before it is added (FMUL then FADD, never FMLA), as dotGeneric's
// eight partial sums.
TEXT ·dotNEON(SB), NOSPLIT, $0-32
	MOVD  a+0(FP), R0
	MOVD  b+8(FP), R1
	MOVD  n+16(FP), R2
	MOVD  s+24(FP), R3
	VEOR  V16.B16, V16.B16, V16.B16
	VEOR  V17.B16, V17.B16, V17.B16
	LSR   $3, R2
	CBZ   R2, dotdone
dotloop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	VLD1.P 32(R1), [V4.S4, V5.S4]
	WORD  $0x6e24dc02 // fmul v2.4s, v0.4s, v4.4s
	WORD  $0x6e25dc23 // fmul v3.4s, v1.4s, v5.4s
	WORD  $0x4e22d610 // fadd v16.4s, v16.4s, v2.4s
	WORD  $0x4e23d631 // fadd v17.4s, v17.4s, v3.4s
	SUB   $1, R2
	CBNZ  R2, dotloop
dotdone:
	VST1  [V16.S4, V17.S4], (R3)
	RET

// Byte indexes 0-31, for the first element of largest magnitude.
DATA idx32<>+0x00(SB)/8, $0x0706050403020100
DATA idx32<>+0x08(SB)/8, $0x0f0e0d0c0b0a0908
DATA idx32<>+0x10(SB)/8, $0x1716151413121110
DATA idx32<>+0x18(SB)/8, $0x1f1e1d1c1b1a1918
GLOBL idx32<>(SB), RODATA|NOPTR, $32

// BLOCKMAX4 loads the block of 32 at R1 into V0-V7 and its |x| bits into
// V8-V15, puts the largest |x| bits in R7 (and F17) and into the running
// largest R4, and jumps to done where they are a NaN's or an infinity's
// (R8: +inf bits), for the reference to do that block. Uses R6, V16, V17.
#define BLOCKMAX4(done) \
	ADD   $64, R1, R6 \
	VLD1  (R1), [V0.S4, V1.S4, V2.S4, V3.S4] \
	VLD1  (R6), [V4.S4, V5.S4, V6.S4, V7.S4] \
	VAND  V31.B16, V0.B16, V8.B16 \
	VAND  V31.B16, V1.B16, V9.B16 \
	VAND  V31.B16, V2.B16, V10.B16 \
	VAND  V31.B16, V3.B16, V11.B16 \
	VAND  V31.B16, V4.B16, V12.B16 \
	VAND  V31.B16, V5.B16, V13.B16 \
	VAND  V31.B16, V6.B16, V14.B16 \
	VAND  V31.B16, V7.B16, V15.B16 \
	VUMAX V9.S4, V8.S4, V16.S4 \
	VUMAX V11.S4, V10.S4, V17.S4 \
	VUMAX V17.S4, V16.S4, V16.S4 \
	VUMAX V13.S4, V12.S4, V17.S4 \
	VUMAX V17.S4, V16.S4, V16.S4 \
	VUMAX V15.S4, V14.S4, V17.S4 \
	VUMAX V17.S4, V16.S4, V16.S4 \
	WORD  $0x6eb0aa11 \
	FMOVS F17, R7 \
	CMPW  R8, R7 \
	BHS   done \
	CMPW  R4, R7 \
	CSELW HI, R7, R4, R4

// func q4_0NEON(dst *byte, src *float32, nb int) (done int, maxBits uint32)
// The scale is the first element of largest magnitude over -8 (the index
// is the smallest byte index whose |x| bits are the maximum: UMINV over
// index|not-hit), q = min(15, int(x*id + 8.5)) with FCVTZS (toward zero,
// as C's cast). Where 1/d overflows for a nonzero d, the reference's
// x*id + 8.5 is ±inf or NaN and its cast writes 0s: so does this kernel.
TEXT ·q4_0NEON(SB), NOSPLIT, $0-36
	MOVD  dst+0(FP), R0
	MOVD  src+8(FP), R1
	MOVD  nb+16(FP), R2
	MOVD  $0, R3          // blocks done
	MOVW  $0, R4          // largest |x| bits
	MOVW  $0x7fffffff, R5
	VDUP  R5, V31.S4      // |x| mask
	MOVW  $0x41080000, R5 // 8.5
	VDUP  R5, V27.S4
	MOVW  $15, R5
	VDUP  R5, V23.S4
	WORD  $0x4f07e7fa     // movi v26.16b, #0xff
	MOVD  $idx32<>(SB), R5
	VLD1  (R5), [V24.B16, V25.B16]
	MOVW  $0xbe000000, R5 // -0.125
	FMOVS R5, F28
	MOVW  $0x3f800000, R5 // 1.0
	FMOVS R5, F29
	MOVW  $0x7f800000, R8 // +inf bits
q40loop:
	CMP   R2, R3
	BGE   q40done
	BLOCKMAX4(q40done)
	MOVW  $0, R13      // +0 for an all-zero block
	CBZW  R7, q40scale
	VDUP  R7, V18.S4
	VCMEQ V18.S4, V8.S4, V8.S4
	VCMEQ V18.S4, V9.S4, V9.S4
	VCMEQ V18.S4, V10.S4, V10.S4
	VCMEQ V18.S4, V11.S4, V11.S4
	VCMEQ V18.S4, V12.S4, V12.S4
	VCMEQ V18.S4, V13.S4, V13.S4
	VCMEQ V18.S4, V14.S4, V14.S4
	VCMEQ V18.S4, V15.S4, V15.S4
	VUZP1 V9.H8, V8.H8, V8.H8
	VUZP1 V11.H8, V10.H8, V10.H8
	VUZP1 V13.H8, V12.H8, V12.H8
	VUZP1 V15.H8, V14.H8, V14.H8
	VUZP1 V10.B16, V8.B16, V8.B16
	VUZP1 V14.B16, V12.B16, V12.B16
	VEOR  V26.B16, V8.B16, V8.B16
	VORR  V24.B16, V8.B16, V8.B16
	VEOR  V26.B16, V12.B16, V12.B16
	VORR  V25.B16, V12.B16, V12.B16
	VUMIN V12.B16, V8.B16, V8.B16
	WORD  $0x6e31a913 // uminv b19, v8.16b
	FMOVS F19, R12
	MOVWU (R1)(R12<<2), R13
q40scale:
	FMOVS R13, F20
	FMULS F28, F20, F18 // d = max / -8 (exactly as the division)
	FCVTSH F18, F19
	FMOVS F19, R9
	MOVH  R9, (R0)
	ADD   $2, R0, R11
	FMOVS F18, R10
	LSLW  $1, R10, R10
	CBZW  R10, q40zero  // d == 0: id = 0
	FDIVS F18, F29, F21 // id = 1/d
	FMOVS F21, R10
	ANDW  $0x7fffffff, R10, R10
	CMPW  R8, R10
	BNE   q40id
	VEOR  V20.B16, V20.B16, V20.B16 // 1/d overflowed: 0s
	VST1  [V20.B16], (R11)
	B     q40next
q40zero:
	FMOVS ZR, F21
q40id:
	VDUP  V21.S[0], V22.S4
	WORD  $0x6e36dc00 // fmul v0.4s, v0.4s, v22.4s
	WORD  $0x6e36dc21 // fmul v1.4s, v1.4s, v22.4s
	WORD  $0x6e36dc42 // fmul v2.4s, v2.4s, v22.4s
	WORD  $0x6e36dc63 // fmul v3.4s, v3.4s, v22.4s
	WORD  $0x6e36dc84 // fmul v4.4s, v4.4s, v22.4s
	WORD  $0x6e36dca5 // fmul v5.4s, v5.4s, v22.4s
	WORD  $0x6e36dcc6 // fmul v6.4s, v6.4s, v22.4s
	WORD  $0x6e36dce7 // fmul v7.4s, v7.4s, v22.4s
	WORD  $0x4e3bd400 // fadd v0.4s, v0.4s, v27.4s
	WORD  $0x4e3bd421 // fadd v1.4s, v1.4s, v27.4s
	WORD  $0x4e3bd442 // fadd v2.4s, v2.4s, v27.4s
	WORD  $0x4e3bd463 // fadd v3.4s, v3.4s, v27.4s
	WORD  $0x4e3bd484 // fadd v4.4s, v4.4s, v27.4s
	WORD  $0x4e3bd4a5 // fadd v5.4s, v5.4s, v27.4s
	WORD  $0x4e3bd4c6 // fadd v6.4s, v6.4s, v27.4s
	WORD  $0x4e3bd4e7 // fadd v7.4s, v7.4s, v27.4s
	WORD  $0x4ea1b800 // fcvtzs v0.4s, v0.4s
	WORD  $0x4ea1b821 // fcvtzs v1.4s, v1.4s
	WORD  $0x4ea1b842 // fcvtzs v2.4s, v2.4s
	WORD  $0x4ea1b863 // fcvtzs v3.4s, v3.4s
	WORD  $0x4ea1b884 // fcvtzs v4.4s, v4.4s
	WORD  $0x4ea1b8a5 // fcvtzs v5.4s, v5.4s
	WORD  $0x4ea1b8c6 // fcvtzs v6.4s, v6.4s
	WORD  $0x4ea1b8e7 // fcvtzs v7.4s, v7.4s
	// min(15, q): q >= 0 here (x*id >= -8 within rounding), so unsigned
	VUMIN V23.S4, V0.S4, V0.S4
	VUMIN V23.S4, V1.S4, V1.S4
	VUMIN V23.S4, V2.S4, V2.S4
	VUMIN V23.S4, V3.S4, V3.S4
	VUMIN V23.S4, V4.S4, V4.S4
	VUMIN V23.S4, V5.S4, V5.S4
	VUMIN V23.S4, V6.S4, V6.S4
	VUMIN V23.S4, V7.S4, V7.S4
	// byte j: q[j] | q[j+16] << 4
	VSHL  $4, V4.S4, V4.S4
	VSHL  $4, V5.S4, V5.S4
	VSHL  $4, V6.S4, V6.S4
	VSHL  $4, V7.S4, V7.S4
	VORR  V4.B16, V0.B16, V0.B16
	VORR  V5.B16, V1.B16, V1.B16
	VORR  V6.B16, V2.B16, V2.B16
	VORR  V7.B16, V3.B16, V3.B16
	VUZP1 V1.H8, V0.H8, V0.H8
	VUZP1 V3.H8, V2.H8, V2.H8
	VUZP1 V2.B16, V0.B16, V20.B16
	VST1  [V20.B16], (R11)
q40next:
	ADD   $18, R0
	ADD   $128, R1
	ADD   $1, R3
	B     q40loop
q40done:
	MOVD  R3, done+24(FP)
	MOVW  R4, maxBits+32(FP)
	RET

// func q4_1NEON(dst *byte, src *float32, nb int) (done int, maxBits uint32)
// lo and hi are FMIN/FMAX reductions (exact for finite values); a zero
// extreme is the block's first ±0 (its smallest index among FCMEQ #0 hits),
// as the reference's strict comparisons keep it. q = min(15,
// int((x-lo)*id + 0.5)); d == 0 gives id 0, an overflowing 1/d writes 0s
// as the reference's cast of +inf/NaN does.
TEXT ·q4_1NEON(SB), NOSPLIT, $0-36
	MOVD  dst+0(FP), R0
	MOVD  src+8(FP), R1
	MOVD  nb+16(FP), R2
	MOVD  $0, R3          // blocks done
	MOVW  $0, R4          // largest |x| bits
	MOVW  $0x7fffffff, R5
	VDUP  R5, V31.S4      // |x| mask
	MOVW  $0x3f000000, R5 // 0.5
	VDUP  R5, V27.S4
	MOVW  $15, R5
	VDUP  R5, V23.S4
	WORD  $0x4f07e7fa     // movi v26.16b, #0xff
	MOVD  $idx32<>(SB), R5
	VLD1  (R5), [V24.B16, V25.B16]
	MOVW  $0x41700000, R5 // 15.0
	FMOVS R5, F28
	MOVW  $0x3f800000, R5 // 1.0
	FMOVS R5, F29
	MOVW  $0x7f800000, R8 // +inf bits
q41loop:
	CMP   R2, R3
	BGE   q41done
	BLOCKMAX4(q41done)
	WORD  $0x4ea1f410 // fmin v16.4s, v0.4s, v1.4s
	WORD  $0x4ea3f451 // fmin v17.4s, v2.4s, v3.4s
	WORD  $0x4eb1f610 // fmin v16.4s, v16.4s, v17.4s
	WORD  $0x4ea5f491 // fmin v17.4s, v4.4s, v5.4s
	WORD  $0x4eb1f610 // fmin v16.4s, v16.4s, v17.4s
	WORD  $0x4ea7f4d1 // fmin v17.4s, v6.4s, v7.4s
	WORD  $0x4eb1f610 // fmin v16.4s, v16.4s, v17.4s
	WORD  $0x6eb0fa12 // fminv s18, v16.4s
	WORD  $0x4e21f410 // fmax v16.4s, v0.4s, v1.4s
	WORD  $0x4e23f451 // fmax v17.4s, v2.4s, v3.4s
	WORD  $0x4e31f610 // fmax v16.4s, v16.4s, v17.4s
	WORD  $0x4e25f491 // fmax v17.4s, v4.4s, v5.4s
	WORD  $0x4e31f610 // fmax v16.4s, v16.4s, v17.4s
	WORD  $0x4e27f4d1 // fmax v17.4s, v6.4s, v7.4s
	WORD  $0x4e31f610 // fmax v16.4s, v16.4s, v17.4s
	WORD  $0x6e30fa14 // fmaxv s20, v16.4s
	FMOVS F18, R13 // lo
	FMOVS F20, R14 // hi
	LSLW  $1, R13, R15
	CBZW  R15, q41fix
	LSLW  $1, R14, R15
	CBNZW R15, q41ok
q41fix:
	WORD  $0x4ea0d808 // fcmeq v8.4s, v0.4s, #0.0
	WORD  $0x4ea0d829 // fcmeq v9.4s, v1.4s, #0.0
	WORD  $0x4ea0d84a // fcmeq v10.4s, v2.4s, #0.0
	WORD  $0x4ea0d86b // fcmeq v11.4s, v3.4s, #0.0
	WORD  $0x4ea0d88c // fcmeq v12.4s, v4.4s, #0.0
	WORD  $0x4ea0d8ad // fcmeq v13.4s, v5.4s, #0.0
	WORD  $0x4ea0d8ce // fcmeq v14.4s, v6.4s, #0.0
	WORD  $0x4ea0d8ef // fcmeq v15.4s, v7.4s, #0.0
	VUZP1 V9.H8, V8.H8, V8.H8
	VUZP1 V11.H8, V10.H8, V10.H8
	VUZP1 V13.H8, V12.H8, V12.H8
	VUZP1 V15.H8, V14.H8, V14.H8
	VUZP1 V10.B16, V8.B16, V8.B16
	VUZP1 V14.B16, V12.B16, V12.B16
	VEOR  V26.B16, V8.B16, V8.B16
	VORR  V24.B16, V8.B16, V8.B16
	VEOR  V26.B16, V12.B16, V12.B16
	VORR  V25.B16, V12.B16, V12.B16
	VUMIN V12.B16, V8.B16, V8.B16
	WORD  $0x6e31a913 // uminv b19, v8.16b
	FMOVS F19, R12
	MOVWU (R1)(R12<<2), R12 // the first ±0
	LSLW  $1, R13, R15
	CMPW  $0, R15
	CSELW EQ, R12, R13, R13
	LSLW  $1, R14, R15
	CMPW  $0, R15
	CSELW EQ, R12, R14, R14
	FMOVS R13, F18
	FMOVS R14, F20
q41ok:
	FSUBS F18, F20, F16
	FDIVS F28, F16, F16 // d = (hi - lo) / 15
	FCVTSH F16, F17
	FMOVS F17, R9
	MOVH  R9, (R0)
	FCVTSH F18, F17
	FMOVS F17, R9
	MOVH  R9, 2(R0)
	ADD   $4, R0, R11
	VDUP  V18.S[0], V21.S4 // lo
	FMOVS F16, R10
	LSLW  $1, R10, R10
	CBZW  R10, q41zero  // d == 0: id = 0
	FDIVS F16, F29, F19 // id = 1/d
	FMOVS F19, R10
	ANDW  $0x7fffffff, R10, R10
	CMPW  R8, R10
	BNE   q41id
	VEOR  V20.B16, V20.B16, V20.B16 // 1/d overflowed: 0s
	VST1  [V20.B16], (R11)
	B     q41next
q41zero:
	FMOVS ZR, F19
q41id:
	VDUP  V19.S[0], V22.S4
	WORD  $0x4eb5d400 // fsub v0.4s, v0.4s, v21.4s
	WORD  $0x4eb5d421 // fsub v1.4s, v1.4s, v21.4s
	WORD  $0x4eb5d442 // fsub v2.4s, v2.4s, v21.4s
	WORD  $0x4eb5d463 // fsub v3.4s, v3.4s, v21.4s
	WORD  $0x4eb5d484 // fsub v4.4s, v4.4s, v21.4s
	WORD  $0x4eb5d4a5 // fsub v5.4s, v5.4s, v21.4s
	WORD  $0x4eb5d4c6 // fsub v6.4s, v6.4s, v21.4s
	WORD  $0x4eb5d4e7 // fsub v7.4s, v7.4s, v21.4s
	WORD  $0x6e36dc00 // fmul v0.4s, v0.4s, v22.4s
	WORD  $0x6e36dc21 // fmul v1.4s, v1.4s, v22.4s
	WORD  $0x6e36dc42 // fmul v2.4s, v2.4s, v22.4s
	WORD  $0x6e36dc63 // fmul v3.4s, v3.4s, v22.4s
	WORD  $0x6e36dc84 // fmul v4.4s, v4.4s, v22.4s
	WORD  $0x6e36dca5 // fmul v5.4s, v5.4s, v22.4s
	WORD  $0x6e36dcc6 // fmul v6.4s, v6.4s, v22.4s
	WORD  $0x6e36dce7 // fmul v7.4s, v7.4s, v22.4s
	WORD  $0x4e3bd400 // fadd v0.4s, v0.4s, v27.4s
	WORD  $0x4e3bd421 // fadd v1.4s, v1.4s, v27.4s
	WORD  $0x4e3bd442 // fadd v2.4s, v2.4s, v27.4s
	WORD  $0x4e3bd463 // fadd v3.4s, v3.4s, v27.4s
	WORD  $0x4e3bd484 // fadd v4.4s, v4.4s, v27.4s
	WORD  $0x4e3bd4a5 // fadd v5.4s, v5.4s, v27.4s
	WORD  $0x4e3bd4c6 // fadd v6.4s, v6.4s, v27.4s
	WORD  $0x4e3bd4e7 // fadd v7.4s, v7.4s, v27.4s
	WORD  $0x4ea1b800 // fcvtzs v0.4s, v0.4s
	WORD  $0x4ea1b821 // fcvtzs v1.4s, v1.4s
	WORD  $0x4ea1b842 // fcvtzs v2.4s, v2.4s
	WORD  $0x4ea1b863 // fcvtzs v3.4s, v3.4s
	WORD  $0x4ea1b884 // fcvtzs v4.4s, v4.4s
	WORD  $0x4ea1b8a5 // fcvtzs v5.4s, v5.4s
	WORD  $0x4ea1b8c6 // fcvtzs v6.4s, v6.4s
	WORD  $0x4ea1b8e7 // fcvtzs v7.4s, v7.4s
	VUMIN V23.S4, V0.S4, V0.S4
	VUMIN V23.S4, V1.S4, V1.S4
	VUMIN V23.S4, V2.S4, V2.S4
	VUMIN V23.S4, V3.S4, V3.S4
	VUMIN V23.S4, V4.S4, V4.S4
	VUMIN V23.S4, V5.S4, V5.S4
	VUMIN V23.S4, V6.S4, V6.S4
	VUMIN V23.S4, V7.S4, V7.S4
	VSHL  $4, V4.S4, V4.S4
	VSHL  $4, V5.S4, V5.S4
	VSHL  $4, V6.S4, V6.S4
	VSHL  $4, V7.S4, V7.S4
	VORR  V4.B16, V0.B16, V0.B16
	VORR  V5.B16, V1.B16, V1.B16
	VORR  V6.B16, V2.B16, V2.B16
	VORR  V7.B16, V3.B16, V3.B16
	VUZP1 V1.H8, V0.H8, V0.H8
	VUZP1 V3.H8, V2.H8, V2.H8
	VUZP1 V2.B16, V0.B16, V20.B16
	VST1  [V20.B16], (R11)
q41next:
	ADD   $20, R0
	ADD   $128, R1
	ADD   $1, R3
	B     q41loop
q41done:
	MOVD  R3, done+24(FP)
	MOVW  R4, maxBits+32(FP)
	RET

// The K-quant sub-block searches (kquants_asm.go): 8 sub-blocks, one per
// lane, as the AVX2 kernels of asm_amd64.s do them, here in two passes of
// 4 lanes (R1 is the first lane's base: the struct, then 16 bytes on;
// element i of the pass's lanes is the vector at R1 + 32i). Every float
// operation is the reference's, in its order, one rounding each (FMUL then
// FADD, never FMLA); nearest_int is the reference's trick on the bits (x +
// 1.5·2^23, low 23 bits, minus 2^22); FSQRT rounds correctly as sqrtf.
// Comparisons are FCMGT/FCMEQ, false on NaN as the reference's.

// KXLEVELS: V1 = clamp(nearest_int((V1-V25)·V15), 0, nmax) as integers
// (V31 1.5·2^23, V30 the mantissa mask, V29 2^22, V26 0, V28 nmax). The
// product's operands are in the order Go compiles the reference's
// iscale*(v-minv) with: where both are NaN (a sub-block that starts with a
// NaN has a NaN iscale), ARM returns the first operand's, and the levels
// are the reference's only with v-minv first.
#define KXLEVELS \
	WORD  $0x4eb9d421 /* fsub v1.4s, v1.4s, v25.4s */ \
	WORD  $0x6e2fdc21 /* fmul v1.4s, v1.4s, v15.4s */ \
	WORD  $0x4e3fd421 /* fadd v1.4s, v1.4s, v31.4s */ \
	VAND  V30.B16, V1.B16, V1.B16 \
	VSUB  V29.S4, V1.S4, V1.S4 \
	WORD  $0x4eba6421 /* smax v1.4s, v1.4s, v26.4s */ \
	WORD  $0x4ebc6c21 /* smin v1.4s, v1.4s, v28.4s */

// KXERR adds a candidate's weighted errors to a sum: v1 holds the
// differences; squared (R9 == 0) or absolute (q2), times the weights at
// 2400(R2), added by faddw (fadd vS.4s, vS.4s, v1.4s), with labels abs and
// wt. Uses v1, v2.
#define KXERR(abs, wt, faddw) \
	CBNZW R9, abs \
	WORD  $0x6e21dc21 /* fmul v1.4s, v1.4s, v1.4s */ \
	B     wt \
abs: \
	WORD  $0x4ea0f821 /* fabs v1.4s, v1.4s */ \
wt: \
	FMOVQ 2400(R2), F2 \
	WORD  $0x6e21dc41 /* fmul v1.4s, v2.4s, v1.4s */ \
	WORD  faddw

// func kx2LanesNEON(grp *kx2Asm)
// make_qkx2_quants (or make_qkx3_quants, wgiven) on 8 sub-blocks of n, as
// kx2LanesAVX2: the first fit at nmax/(max-min), then the nstep+1
// candidates in order, each taken or not by a per-lane mask (a taken one
// changes the min the later ones use); the levels are recomputed at the end
// from the best numerator and the min it was tried with. kx2Asm's layout:
// xt at 0, num 1024, fmax 1280, n 1284, nmax 1288, nstep 1292, q2 1296,
// wgiven 1300, sigma2 1304, scale 1312, min 1344, lt 1376, w 2400, fl 3424,
// sw 4448. Per pass: V25 minv, V24 maxv, V23 sumW, V22 sumX, V21 flat
// (maxv == minv), V20 the first minv, V19 scale, V18 bestNum, V17 bestMin,
// V16 bestMad, V15 iscale, V14 the candidate's numerator.
TEXT ·kx2LanesNEON(SB), NOSPLIT, $0-8
	MOVD  grp+0(FP), R0
	MOVW  1284(R0), R4    // n
	LSL   $5, R4, R8      // n·32 bytes
	MOVWU 1296(R0), R9    // q2
	MOVWU 1300(R0), R11   // wgiven
	MOVW  1292(R0), R10
	ADD   $1, R10         // nstep+1 candidates
	MOVW  $0x4b400000, R5 // 1.5·2^23
	VDUP  R5, V31.S4
	MOVW  $0x007fffff, R5
	VDUP  R5, V30.S4
	MOVW  $0x00400000, R5
	VDUP  R5, V29.S4
	MOVW  1288(R0), R5
	VDUP  R5, V28.S4      // nmax
	MOVW  $0x7fffffff, R5
	VDUP  R5, V27.S4
	VEOR  V26.B16, V26.B16, V26.B16
	MOVD  R0, R1
	MOVD  $2, R7          // passes
kxpass:
	ADD   R8, R1, R3      // end of the pass's elements
	// Weights: avX + |v| with avX = sqrt(sum v·v / n), or |v| (q2);
	// wgiven 1: the caller's, in w; wgiven 2: w holds qw and becomes
	// qw·sqrt(sigma2 + v·v), as importance(), summed from 0 in order.
	CMPW  $2, R11
	BEQ   kximp
	CBNZW R11, kxmm0
	CBNZW R9, kxw
	VEOR  V0.B16, V0.B16, V0.B16
	MOVD  R1, R2
kxsq:
	FMOVQ (R2), F1
	WORD  $0x6e21dc21 // fmul v1.4s, v1.4s, v1.4s
	WORD  $0x4e21d400 // fadd v0.4s, v0.4s, v1.4s
	ADD   $32, R2
	CMP   R3, R2
	BNE   kxsq
	VDUP  R4, V1.S4
	WORD  $0x4e21d821 // scvtf v1.4s, v1.4s
	WORD  $0x6e21fc00 // fdiv v0.4s, v0.4s, v1.4s
	WORD  $0x6ea1f800 // fsqrt v0.4s, v0.4s
kxw:
	MOVD  R1, R2
kxwl:
	FMOVQ (R2), F1
	VAND  V27.B16, V1.B16, V1.B16
	CBNZW R9, kxwq
	WORD  $0x4e21d401 // fadd v1.4s, v0.4s, v1.4s
kxwq:
	FMOVQ F1, 2400(R2)
	ADD   $32, R2
	CMP   R3, R2
	BNE   kxwl
	B     kxmm0
kximp:
	ADD   $1304, R0, R12
	VLD1R (R12), [V0.S4]  // sigma2
	VEOR  V2.B16, V2.B16, V2.B16
	MOVD  R1, R2
kximpl:
	FMOVQ (R2), F1
	WORD  $0x6e21dc21 // fmul v1.4s, v1.4s, v1.4s
	WORD  $0x4e21d401 // fadd v1.4s, v0.4s, v1.4s
	WORD  $0x6ea1f821 // fsqrt v1.4s, v1.4s
	FMOVQ 2400(R2), F3
	WORD  $0x6e21dc61 // fmul v1.4s, v3.4s, v1.4s
	FMOVQ F1, 2400(R2)
	WORD  $0x4e21d442 // fadd v2.4s, v2.4s, v1.4s
	ADD   $32, R2
	CMP   R3, R2
	BNE   kximpl
	FMOVQ F2, 4448(R1)    // sw
kxmm0:
	// min and max (strict comparisons from v0), sumW, sumX
	FMOVQ (R1), F25
	VMOV  V25.B16, V24.B16
	FMOVQ 2400(R1), F23
	WORD  $0x6e39def6 // fmul v22.4s, v23.4s, v25.4s
	ADD   $32, R1, R2
kxmm:
	FMOVQ (R2), F1
	WORD  $0x6ea1e722 // fcmgt v2.4s, v25.4s, v1.4s
	VBIT  V2.B16, V1.B16, V25.B16 // v < minv
	WORD  $0x6eb8e422 // fcmgt v2.4s, v1.4s, v24.4s
	VBIT  V2.B16, V1.B16, V24.B16 // v > maxv
	FMOVQ 2400(R2), F2
	WORD  $0x4e22d6f7 // fadd v23.4s, v23.4s, v2.4s
	WORD  $0x6e21dc42 // fmul v2.4s, v2.4s, v1.4s
	WORD  $0x4e22d6d6 // fadd v22.4s, v22.4s, v2.4s
	ADD   $32, R2
	CMP   R3, R2
	BNE   kxmm
	WORD  $0x4ea0cb21 // fcmgt v1.4s, v25.4s, #0.0
	WORD  $0x4e611f39 // bic v25.16b, v25.16b, v1.16b
	WORD  $0x4e39e715 // fcmeq v21.4s, v24.4s, v25.4s
	VMOV  V25.B16, V20.B16
	// The first fit: iscale = fmax/(maxv-minv), scale = 1/iscale.
	ADD   $1280, R0, R12
	VLD1R (R12), [V18.S4] // bestNum = fmax
	VMOV  V25.B16, V17.B16
	WORD  $0x4eb9d701 // fsub v1.4s, v24.4s, v25.4s
	WORD  $0x6e21fe4f // fdiv v15.4s, v18.4s, v1.4s
	MOVW  $0x3f800000, R12
	VDUP  R12, V1.S4
	WORD  $0x6e2ffc33 // fdiv v19.4s, v1.4s, v15.4s
	VEOR  V16.B16, V16.B16, V16.B16
	MOVD  R1, R2
kxf0:
	FMOVQ (R2), F1
	VMOV  V1.B16, V3.B16
	KXLEVELS
	WORD  $0x4e21d821 // scvtf v1.4s, v1.4s
	WORD  $0x6e21de61 // fmul v1.4s, v19.4s, v1.4s
	WORD  $0x4e39d421 // fadd v1.4s, v1.4s, v25.4s
	WORD  $0x4ea3d421 // fsub v1.4s, v1.4s, v3.4s
	KXERR(kxf0a, kxf0w, $0x4e21d610) // into v16
	ADD   $32, R2
	CMP   R3, R2
	BNE   kxf0
	ADD   $1024, R0, R5
	MOVD  R10, R6
kxcand:
	VLD1R.P 4(R5), [V14.S4]
	WORD  $0x4eb9d701 // fsub v1.4s, v24.4s, v25.4s
	WORD  $0x6e21fdcf // fdiv v15.4s, v14.4s, v1.4s
	VEOR  V4.B16, V4.B16, V4.B16 // sumL
	VEOR  V5.B16, V5.B16, V5.B16 // sumL2
	VEOR  V6.B16, V6.B16, V6.B16 // sumXL
	MOVD  R1, R2
kxc1:
	FMOVQ (R2), F1
	VMOV  V1.B16, V3.B16
	KXLEVELS
	WORD  $0x4e21d821 // scvtf v1.4s, v1.4s
	FMOVQ F1, 3424(R2)
	FMOVQ 2400(R2), F2
	WORD  $0x6e21dc42 // fmul v2.4s, v2.4s, v1.4s
	WORD  $0x4e22d484 // fadd v4.4s, v4.4s, v2.4s
	WORD  $0x6e21dc47 // fmul v7.4s, v2.4s, v1.4s
	WORD  $0x4e27d4a5 // fadd v5.4s, v5.4s, v7.4s
	WORD  $0x6e23dc47 // fmul v7.4s, v2.4s, v3.4s
	WORD  $0x4e27d4c6 // fadd v6.4s, v6.4s, v7.4s
	ADD   $32, R2
	CMP   R3, R2
	BNE   kxc1
	// D = sumW·sumL2 - sumL·sumL, sc = (sumW·sumXL - sumX·sumL)/D,
	// mn = (sumL2·sumX - sumL·sumXL)/D; mn > 0: mn = 0, sc = sumXL/sumL2.
	WORD  $0x6e25dee7 // fmul v7.4s, v23.4s, v5.4s
	WORD  $0x6e24dc88 // fmul v8.4s, v4.4s, v4.4s
	WORD  $0x4ea8d4e7 // fsub v7.4s, v7.4s, v8.4s
	WORD  $0x6e26dee8 // fmul v8.4s, v23.4s, v6.4s
	WORD  $0x6e24dec9 // fmul v9.4s, v22.4s, v4.4s
	WORD  $0x4ea9d508 // fsub v8.4s, v8.4s, v9.4s
	WORD  $0x6e27fd08 // fdiv v8.4s, v8.4s, v7.4s
	WORD  $0x6e36dca9 // fmul v9.4s, v5.4s, v22.4s
	WORD  $0x6e26dc8a // fmul v10.4s, v4.4s, v6.4s
	WORD  $0x4eaad529 // fsub v9.4s, v9.4s, v10.4s
	WORD  $0x6e27fd29 // fdiv v9.4s, v9.4s, v7.4s
	WORD  $0x6e25fcca // fdiv v10.4s, v6.4s, v5.4s
	WORD  $0x4ea0c92b // fcmgt v11.4s, v9.4s, #0.0
	VBIT  V11.B16, V10.B16, V8.B16
	WORD  $0x4e6b1d29 // bic v9.16b, v9.16b, v11.16b
	VEOR  V12.B16, V12.B16, V12.B16 // mad
	MOVD  R1, R2
kxc2:
	FMOVQ 3424(R2), F1
	WORD  $0x6e21dd01 // fmul v1.4s, v8.4s, v1.4s
	WORD  $0x4e29d421 // fadd v1.4s, v1.4s, v9.4s
	FMOVQ (R2), F2
	WORD  $0x4ea2d421 // fsub v1.4s, v1.4s, v2.4s
	KXERR(kxc2a, kxc2w, $0x4e21d58c) // into v12
	ADD   $32, R2
	CMP   R3, R2
	BNE   kxc2
	// take = D > 0 && mad < bestMad
	WORD  $0x4ea0c8eb // fcmgt v11.4s, v7.4s, #0.0
	WORD  $0x6eace60d // fcmgt v13.4s, v16.4s, v12.4s
	VAND  V13.B16, V11.B16, V11.B16
	VBIT  V11.B16, V12.B16, V16.B16 // bestMad
	VBIT  V11.B16, V8.B16, V19.B16  // scale
	VBIT  V11.B16, V14.B16, V18.B16 // bestNum
	VBIT  V11.B16, V25.B16, V17.B16 // bestMin: the min this candidate used
	VBIT  V11.B16, V9.B16, V25.B16  // minv
	SUB   $1, R6
	CBNZ  R6, kxcand
	// Flat lanes: scale 0, -min of the first min, levels 0.
	WORD  $0x4e751e73 // bic v19.16b, v19.16b, v21.16b
	FMOVQ F19, 1312(R1)
	VBIT  V21.B16, V20.B16, V25.B16
	WORD  $0x6ea0fb39 // fneg v25.4s, v25.4s
	FMOVQ F25, 1344(R1)
	VMOV  V17.B16, V25.B16
	WORD  $0x4eb9d701 // fsub v1.4s, v24.4s, v25.4s
	WORD  $0x6e21fe4f // fdiv v15.4s, v18.4s, v1.4s (bestNum/(maxv-bestMin))
	MOVD  R1, R2
kxlev:
	FMOVQ (R2), F1
	KXLEVELS
	WORD  $0x4e751c21 // bic v1.16b, v1.16b, v21.16b
	FMOVQ F1, 1376(R2)
	ADD   $32, R2
	CMP   R3, R2
	BNE   kxlev
	ADD   $16, R1
	SUB   $1, R7
	CBNZ  R7, kxpass
	RET

#undef KXLEVELS

// QXSUM adds element R2's terms to V3 (sum of wv·fl) and V4 (sum of
// (w·fl)·fl), fl = clamp(nearest_int(V2·v), lo, hi) (V28 lo, V27 hi).
#define QXSUM \
	FMOVQ (R2), F0 \
	WORD  $0x6e20dc40 /* fmul v0.4s, v2.4s, v0.4s */ \
	WORD  $0x4e3fd400 /* fadd v0.4s, v0.4s, v31.4s */ \
	VAND  V30.B16, V0.B16, V0.B16 \
	VSUB  V29.S4, V0.S4, V0.S4 \
	WORD  $0x4ebc6400 /* smax v0.4s, v0.4s, v28.4s */ \
	WORD  $0x4ebb6c00 /* smin v0.4s, v0.4s, v27.4s */ \
	WORD  $0x4e21d800 /* scvtf v0.4s, v0.4s */ \
	FMOVQ 2048(R2), F5 \
	WORD  $0x6e20dca5 /* fmul v5.4s, v5.4s, v0.4s */ \
	WORD  $0x4e25d463 /* fadd v3.4s, v3.4s, v5.4s */ \
	FMOVQ 1024(R2), F9 \
	WORD  $0x6e20dd29 /* fmul v9.4s, v9.4s, v0.4s */ \
	WORD  $0x6e20dd29 /* fmul v9.4s, v9.4s, v0.4s */ \
	WORD  $0x4e29d484 /* fadd v4.4s, v4.4s, v9.4s */

// QXSUMS(loop): QXSUM over the n elements from R1 (to R3), the sums from 0.
#define QXSUMS(loop) \
	VEOR  V3.B16, V3.B16, V3.B16 \
	VEOR  V4.B16, V4.B16, V4.B16 \
	MOVD  R1, R2 \
loop: \
	QXSUM \
	ADD   $32, R2 \
	CMP   R3, R2 \
	BNE   loop

// func qxLanesNEON(grp *qxAsm)
// make_qx_quants on 8 sub-blocks of n, as qxLanesAVX2: weights v·v, the
// caller's (wgiven 1) or importance()'s from qw (wgiven 2); every lane tries
// the 18 scales after the first in order and keeps the best by the
// reference's comparisons. qxAsm's layout: xt at 0, w 1024, wv 2048, lt
// 3072, num 4096, scale 4168, n 4200, lo 4204, hi 4208, -nmax as a float
// 4212, nmax 4216, wgiven 4220, sigma2 4224, sw 4228. Per pass: V1 maxv,
// V2 iscale, V6 scale, V7 best, V8 bestIscale, V23 flat (amax < eps).
TEXT ·qxLanesNEON(SB), NOSPLIT, $0-8
	MOVD  grp+0(FP), R0
	MOVW  4200(R0), R4
	LSL   $5, R4, R8      // n·32 bytes
	MOVWU 4220(R0), R11   // wgiven
	MOVW  $0x4b400000, R5 // 1.5·2^23
	VDUP  R5, V31.S4
	MOVW  $0x007fffff, R5
	VDUP  R5, V30.S4
	MOVW  $0x00400000, R5
	VDUP  R5, V29.S4
	MOVW  4204(R0), R5
	VDUP  R5, V28.S4      // lo
	MOVW  4208(R0), R5
	VDUP  R5, V27.S4      // hi
	MOVW  $0x7fffffff, R5
	VDUP  R5, V26.S4
	ADD   $4224, R0, R12
	VLD1R (R12), [V25.S4] // sigma2
	MOVW  4216(R0), R5
	VDUP  R5, V24.S4      // nmax
	MOVW  $0x26901d7d, R5 // 1e-15 (groupMaxEps as float32)
	VDUP  R5, V22.S4
	ADD   $4212, R0, R12
	VLD1R (R12), [V21.S4] // -nmax
	MOVD  R0, R1
	MOVD  $2, R7          // passes
qxpass:
	ADD   R8, R1, R3      // end of the pass's elements
	// maxv: the first value of largest |x| (strict >, from +0), amax its
	// |x| (V0); w and wv per element, the weights' sums (V7).
	VEOR  V0.B16, V0.B16, V0.B16
	VEOR  V1.B16, V1.B16, V1.B16
	VEOR  V7.B16, V7.B16, V7.B16
	MOVD  R1, R2
qxmax:
	FMOVQ (R2), F2
	VAND  V26.B16, V2.B16, V3.B16
	WORD  $0x6ea0e464 // fcmgt v4.4s, v3.4s, v0.4s
	VBIT  V4.B16, V3.B16, V0.B16
	VBIT  V4.B16, V2.B16, V1.B16
	CBNZW R11, qxmaxw
	WORD  $0x6e22dc43 // fmul v3.4s, v2.4s, v2.4s
	FMOVQ F3, 1024(R2)
	B     qxmaxg
qxmaxw:
	FMOVQ 1024(R2), F3    // the caller's weights, or qw (wgiven 2)
	CMPW  $2, R11
	BNE   qxmaxg
	WORD  $0x6e22dc45 // fmul v5.4s, v2.4s, v2.4s
	WORD  $0x4e25d725 // fadd v5.4s, v25.4s, v5.4s
	WORD  $0x6ea1f8a5 // fsqrt v5.4s, v5.4s
	WORD  $0x6e25dc63 // fmul v3.4s, v3.4s, v5.4s
	FMOVQ F3, 1024(R2)
	WORD  $0x4e23d4e7 // fadd v7.4s, v7.4s, v3.4s
qxmaxg:
	WORD  $0x6e22dc63 // fmul v3.4s, v3.4s, v2.4s
	FMOVQ F3, 2048(R2)
	ADD   $32, R2
	CMP   R3, R2
	BNE   qxmax
	ADD   $4228, R1, R12
	VST1  [V7.S4], (R12)  // sw (wgiven 2; else 0)
	WORD  $0x6ea0e6d7 // fcmgt v23.4s, v22.4s, v0.4s
	// The first fit: iscale = -nmax/maxv; scale = sumlx/suml2, or 0
	// where suml2 == 0; best = scale·sumlx.
	WORD  $0x6e21fea2 // fdiv v2.4s, v21.4s, v1.4s
	QXSUMS(qxs0)
	WORD  $0x6e24fc66 // fdiv v6.4s, v3.4s, v4.4s
	WORD  $0x4ea0d885 // fcmeq v5.4s, v4.4s, #0.0
	WORD  $0x4e651cc6 // bic v6.16b, v6.16b, v5.16b
	WORD  $0x6e23dcc7 // fmul v7.4s, v6.4s, v3.4s
	VMOV  V2.B16, V8.B16
	ADD   $4096, R0, R5
	MOVD  $18, R6
qxcand:
	VLD1R.P 4(R5), [V2.S4]
	WORD  $0x6e21fc42 // fdiv v2.4s, v2.4s, v1.4s
	QXSUMS(qxs1)
	// take = suml2 > 0 && sumlx·sumlx > best·suml2
	WORD  $0x4ea0c880 // fcmgt v0.4s, v4.4s, #0.0
	WORD  $0x6e23dc65 // fmul v5.4s, v3.4s, v3.4s
	WORD  $0x6e24dce9 // fmul v9.4s, v7.4s, v4.4s
	WORD  $0x6ea9e4a5 // fcmgt v5.4s, v5.4s, v9.4s
	VAND  V5.B16, V0.B16, V0.B16
	WORD  $0x6e24fc65 // fdiv v5.4s, v3.4s, v4.4s
	VBIT  V0.B16, V5.B16, V6.B16 // scale
	WORD  $0x6e23dcc5 // fmul v5.4s, v6.4s, v3.4s
	VBIT  V0.B16, V5.B16, V7.B16 // best
	VBIT  V0.B16, V2.B16, V8.B16 // bestIscale
	SUB   $1, R6
	CBNZ  R6, qxcand
	// Flat lanes: scale 0 and levels 0; else levels at bestIscale, + nmax.
	WORD  $0x4e771cc6 // bic v6.16b, v6.16b, v23.16b
	ADD   $4168, R1, R12
	VST1  [V6.S4], (R12)
	MOVD  R1, R2
qxlev:
	FMOVQ (R2), F0
	WORD  $0x6e20dd00 // fmul v0.4s, v8.4s, v0.4s
	WORD  $0x4e3fd400 // fadd v0.4s, v0.4s, v31.4s
	VAND  V30.B16, V0.B16, V0.B16
	VSUB  V29.S4, V0.S4, V0.S4
	WORD  $0x4ebc6400 // smax v0.4s, v0.4s, v28.4s
	WORD  $0x4ebb6c00 // smin v0.4s, v0.4s, v27.4s
	VADD  V24.S4, V0.S4, V0.S4
	WORD  $0x4e771c00 // bic v0.16b, v0.16b, v23.16b
	FMOVQ F0, 3072(R2)
	ADD   $32, R2
	CMP   R3, R2
	BNE   qxlev
	ADD   $16, R1
	SUB   $1, R7
	CBNZ  R7, qxpass
	RET

#undef QXSUM

// func levelsNEON(dst *int32, x *float32, n int, d, dm float32, nmax int32)
// dst[i] = clamp(nearest_int((x[i] + dm) / d), 0, nmax) for n values (a
// multiple of 4), as the K-quants' last loop: FADD and FDIV round as the
// reference's float32 add and divide.
TEXT ·levelsNEON(SB), NOSPLIT, $0-36
	MOVD  dst+0(FP), R0
	MOVD  x+8(FP), R1
	MOVD  n+16(FP), R2
	FMOVS d+24(FP), F0
	VDUP  V0.S[0], V0.S4
	FMOVS dm+28(FP), F1
	VDUP  V1.S[0], V1.S4
	MOVW  nmax+32(FP), R3
	VDUP  R3, V2.S4
	MOVW  $0x4b400000, R5
	VDUP  R5, V3.S4
	MOVW  $0x007fffff, R5
	VDUP  R5, V4.S4
	MOVW  $0x00400000, R5
	VDUP  R5, V5.S4
	VEOR  V6.B16, V6.B16, V6.B16
	LSR   $2, R2
lvl:
	VLD1.P 16(R1), [V7.S4]
	WORD  $0x4e21d4e7 // fadd v7.4s, v7.4s, v1.4s
	WORD  $0x6e20fce7 // fdiv v7.4s, v7.4s, v0.4s
	WORD  $0x4e23d4e7 // fadd v7.4s, v7.4s, v3.4s
	VAND  V4.B16, V7.B16, V7.B16
	VSUB  V5.S4, V7.S4, V7.S4
	WORD  $0x4ea664e7 // smax v7.4s, v7.4s, v6.4s
	WORD  $0x4ea26ce7 // smin v7.4s, v7.4s, v2.4s
	VST1.P [V7.S4], 16(R0)
	SUB   $1, R2
	CBNZ  R2, lvl
	RET

//go:build amd64 && !purego && !noasm

#include "textflag.h"
#include "lanes_amd64.h"

// AVX2 (and F16C) kernels for plain builds; see asm_amd64.go for what each
// one computes and why its bytes equal the Go reference's. Only VEX-encoded
// instructions touch vector registers (no legacy SSE after the first AVX
// instruction), and every function ends with VZEROUPPER.
//
// Go's assembler takes operands source first, destination last: for the
// three-operand VEX forms "VSUBPS a, b, c" computes c = b - a.

DATA c32<>+0x00(SB)/4, $0x7fffffff // |x| mask
DATA c32<>+0x04(SB)/4, $0x80000000 // sign mask
DATA c32<>+0x08(SB)/4, $0x3f000000 // 0.5
DATA c32<>+0x0c(SB)/4, $0x3f800000 // 1.0
DATA c32<>+0x10(SB)/4, $0x42fe0000 // 127.0
DATA c32<>+0x14(SB)/4, $0x000000ff // low byte
DATA c32<>+0x18(SB)/4, $0xbe000000 // -0.125
DATA c32<>+0x1c(SB)/4, $0x41080000 // 8.5
DATA c32<>+0x20(SB)/4, $0x0000000f // 15 (integer)
DATA c32<>+0x24(SB)/4, $0x41700000 // 15.0
DATA c32<>+0x28(SB)/4, $0x7fc00000 // quiet NaN
DATA c32<>+0x2c(SB)/4, $0x00007fff // bf16 rounding bias, |h| mask
DATA c32<>+0x30(SB)/4, $0x00000001 // 1 (integer)
DATA c32<>+0x34(SB)/4, $0x7f800000 // +inf bits
DATA c32<>+0x38(SB)/4, $0x00000040 // bf16 quiet bit
DATA c32<>+0x3c(SB)/4, $0x00007c00 // half +inf bits
DATA c32<>+0x40(SB)/4, $0x00400000 // f32 quiet bit
GLOBL c32<>(SB), RODATA|NOPTR, $0x44

// VPERMD index that puts the dwords of a VPACKUSWB of two VPACKUSDW
// results (elements 0-3, 8-11, 16-19, 24-27 | 4-7, 12-15, 20-23, 28-31)
// back in order.
DATA permQ8<>+0x00(SB)/4, $0
DATA permQ8<>+0x04(SB)/4, $4
DATA permQ8<>+0x08(SB)/4, $1
DATA permQ8<>+0x0c(SB)/4, $5
DATA permQ8<>+0x10(SB)/4, $2
DATA permQ8<>+0x14(SB)/4, $6
DATA permQ8<>+0x18(SB)/4, $3
DATA permQ8<>+0x1c(SB)/4, $7
GLOBL permQ8<>(SB), RODATA|NOPTR, $32

// BLOCKMAX loads the block at SI into Y0-Y3, their |x| into Y4-Y7, and
// the largest |x| bits of the block into every lane of X8 (integer max of
// non-negative float bits orders as the values do). Uses X9.
#define BLOCKMAX \
	VMOVUPS 0(SI), Y0          \
	VMOVUPS 32(SI), Y1         \
	VMOVUPS 64(SI), Y2         \
	VMOVUPS 96(SI), Y3         \
	VPAND   Y15, Y0, Y4        \
	VPAND   Y15, Y1, Y5        \
	VPAND   Y15, Y2, Y6        \
	VPAND   Y15, Y3, Y7        \
	VPMAXUD Y5, Y4, Y8         \
	VPMAXUD Y7, Y6, Y9         \
	VPMAXUD Y9, Y8, Y8         \
	VEXTRACTI128 $1, Y8, X9    \
	VPMAXUD X9, X8, X8         \
	VPSHUFD $0x4e, X8, X9      \
	VPMAXUD X9, X8, X8         \
	VPSHUFD $0xb1, X8, X9      \
	VPMAXUD X9, X8, X8

// INVERSE sets X10 to 1/X9, or to 0 where X9 is zero (the reference's
// id = d != 0 ? 1/d : 0), and broadcasts it to Y10. Uses s and t.
#define INVERSE(s, t) \
	VBROADCASTSS c32<>+0x0c(SB), s \
	VDIVSS       X9, s, X10        \
	VXORPS       t, t, t           \
	VCMPPS       $4, t, X9, t      \
	VANDPS       t, X10, X10       \
	VBROADCASTSS X10, Y10

// PACK4 packs the low bytes of the dwords of four vectors of 8 (elements
// 0-7, 8-15, 16-23, 24-31) into the 32 bytes of the first, in order; Y13
// holds 0xff in every dword, Y14 permQ8. The values are masked to their low
// byte first, so the saturating packs keep them: the bytes equal the
// reference's byte(int8(q)) truncation.
#define PACK4(a, b, c, d) \
	VPAND     Y13, a, a    \
	VPAND     Y13, b, b    \
	VPAND     Y13, c, c    \
	VPAND     Y13, d, d    \
	VPACKUSDW b, a, a      \
	VPACKUSDW d, c, c      \
	VPACKUSWB c, a, a      \
	VPERMD    a, Y14, a

// PACKNIB packs a|b<<4 (elements 0-7 and 8-15 in a, 16-23 and 24-31 in b:
// low nibbles from the block's first half, high from its second) of
// dword vectors a, b, c, d: a|c<<4 and b|d<<4, into the 16 bytes of X of a.
// Y13 holds 0xff in every dword.
#define PACKNIB(a, b, c, d, xa, xb) \
	VPSLLD       $4, c, c  \
	VPSLLD       $4, d, d  \
	VPOR         c, a, a   \
	VPOR         d, b, b   \
	VPAND        Y13, a, a \
	VPAND        Y13, b, b \
	VPACKUSDW    b, a, a   \
	VPERMQ       $0xd8, a, a \
	VEXTRACTI128 $1, a, xb \
	VPACKUSWB    xb, xa, xa

// func q8_0AVX2(dst *byte, src *float32, nb int) (done int, maxBits uint32)
TEXT ·q8_0AVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	XORQ DX, DX
	VPBROADCASTD c32<>+0x00(SB), Y15
	VPBROADCASTD c32<>+0x14(SB), Y13
	VMOVDQU      permQ8<>(SB), Y14
	XORL         R12, R12      // running max of |x| bits
q8loop:
	CMPQ DX, CX
	JGE  q8done
	BLOCKMAX
	VMOVD X8, AX
	CMPL  AX, $0x7f800000
	JAE   q8done                 // NaN or infinity: the reference's block
	CMPL    AX, R12
	CMOVLHI AX, R12
	VDIVSS  c32<>+0x10(SB), X8, X9 // d = amax / 127
	VCVTPS2PH $0, X9, X11
	VMOVD     X11, AX
	MOVW      AX, 0(DI)
	INVERSE(X4, X5)
	VBROADCASTSS c32<>+0x08(SB), Y9 // 0.5
	VBROADCASTSS c32<>+0x0c(SB), Y11 // 1.0
	VBROADCASTSS c32<>+0x04(SB), Y8  // sign
	// q = roundf(x*id): truncate, then step away from zero by one where
	// the (exact) remainder is 0.5 or more in magnitude.
#define ROUNDAWAY(x, t) \
	VMULPS     Y10, x, x     \
	VROUNDPS   $3, x, t      \
	VSUBPS     t, x, Y12     \
	VPAND      Y15, Y12, Y12 \
	VCMPPS     $13, Y9, Y12, Y12 \
	VANDPS     Y8, x, x      \
	VORPS      Y11, x, x     \
	VANDPS     Y12, x, x     \
	VADDPS     x, t, t       \
	VCVTTPS2DQ t, t
	ROUNDAWAY(Y0, Y4)
	ROUNDAWAY(Y1, Y5)
	ROUNDAWAY(Y2, Y6)
	ROUNDAWAY(Y3, Y7)
#undef ROUNDAWAY
	PACK4(Y4, Y5, Y6, Y7)
	VMOVDQU Y4, 2(DI)
	ADDQ    $128, SI
	ADDQ    $34, DI
	INCQ    DX
	JMP     q8loop
q8done:
	MOVQ  DX, done+24(FP)
	MOVL  R12, maxBits+32(FP)
	VZEROUPPER
	RET

// FIRSTMAX sets AX to the bits of the first element of the block at SI
// whose |x| bits are those in every lane of X8 (nonzero; Y4-Y7 hold the
// |x| bits). Uses Y9, Y11, BX, R8.
#define FIRSTMAX \
	VPBROADCASTD X8, Y9           \
	VPCMPEQD     Y9, Y7, Y11      \
	VMOVMSKPS    Y11, BX          \
	SHLL         $8, BX           \
	VPCMPEQD     Y9, Y6, Y11      \
	VMOVMSKPS    Y11, R8          \
	ORL          R8, BX           \
	SHLL         $8, BX           \
	VPCMPEQD     Y9, Y5, Y11      \
	VMOVMSKPS    Y11, R8          \
	ORL          R8, BX           \
	SHLL         $8, BX           \
	VPCMPEQD     Y9, Y4, Y11      \
	VMOVMSKPS    Y11, R8          \
	ORL          R8, BX           \
	BSFL         BX, BX           \
	MOVL         (SI)(BX*4), AX

// func q4_0AVX2(dst *byte, src *float32, nb int) (done int, maxBits uint32)
TEXT ·q4_0AVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	XORQ DX, DX
	VPBROADCASTD c32<>+0x00(SB), Y15
	VPBROADCASTD c32<>+0x14(SB), Y13
	XORL         R12, R12 // running max of |x| bits
q40loop:
	CMPQ DX, CX
	JGE  q40done
	BLOCKMAX
	VMOVD X8, AX
	CMPL  AX, $0x7f800000
	JAE   q40done
	CMPL    AX, R12
	CMOVLHI AX, R12
	TESTL   AX, AX
	JZ      q40zero // an all-zero block: the reference's +0
	FIRSTMAX
q40zero:
	VMOVD   AX, X9
	VMULSS  c32<>+0x18(SB), X9, X9 // d = max / -8 (exactly as the division)
	VCVTPS2PH $0, X9, X11
	VMOVD     X11, AX
	MOVW      AX, 0(DI)
	INVERSE(X4, X5)
	VBROADCASTSS c32<>+0x1c(SB), Y9 // 8.5
	VPBROADCASTD c32<>+0x20(SB), Y8 // 15
	// q = min(15, int(x*id + 8.5))
#define Q4(x) \
	VMULPS     Y10, x, x \
	VADDPS     Y9, x, x  \
	VCVTTPS2DQ x, x      \
	VPMINSD    Y8, x, x
	Q4(Y0)
	Q4(Y1)
	Q4(Y2)
	Q4(Y3)
	PACKNIB(Y0, Y1, Y2, Y3, X0, X1)
	VMOVDQU X0, 2(DI)
	ADDQ    $128, SI
	ADDQ    $18, DI
	INCQ    DX
	JMP     q40loop
q40done:
	MOVQ  DX, done+24(FP)
	MOVL  R12, maxBits+32(FP)
	VZEROUPPER
	RET

// FIRSTZERO sets AX to the bits of the first ±0 among Y0-Y3 (there is
// one). Uses Y11, BX, R8.
#define FIRSTZERO \
	VXORPS    Y11, Y11, Y11 \
	VCMPPS    $0, Y11, Y3, Y9 \
	VMOVMSKPS Y9, BX        \
	SHLL      $8, BX        \
	VCMPPS    $0, Y11, Y2, Y9 \
	VMOVMSKPS Y9, R8        \
	ORL       R8, BX        \
	SHLL      $8, BX        \
	VCMPPS    $0, Y11, Y1, Y9 \
	VMOVMSKPS Y9, R8        \
	ORL       R8, BX        \
	SHLL      $8, BX        \
	VCMPPS    $0, Y11, Y0, Y9 \
	VMOVMSKPS Y9, R8        \
	ORL       R8, BX        \
	BSFL      BX, BX        \
	MOVL      (SI)(BX*4), AX

// func q4_1AVX2(dst *byte, src *float32, nb int) (done int, maxBits uint32)
TEXT ·q4_1AVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	XORQ DX, DX
	VPBROADCASTD c32<>+0x00(SB), Y15
	VPBROADCASTD c32<>+0x14(SB), Y13
	XORL         R12, R12 // running max of |x| bits
q41loop:
	CMPQ DX, CX
	JGE  q41done
	BLOCKMAX
	VMOVD X8, AX
	CMPL  AX, $0x7f800000
	JAE   q41done
	CMPL    AX, R12
	CMOVLHI AX, R12
	// lo and hi: exact minimum and maximum (finite values)
	VMINPS Y1, Y0, Y4
	VMINPS Y3, Y2, Y5
	VMINPS Y5, Y4, Y4
	VMAXPS Y1, Y0, Y6
	VMAXPS Y3, Y2, Y7
	VMAXPS Y7, Y6, Y6
	VEXTRACTI128 $1, Y4, X5
	VMINPS X5, X4, X4
	VEXTRACTI128 $1, Y6, X7
	VMAXPS X7, X6, X6
	VPSHUFD $0x4e, X4, X5
	VMINPS  X5, X4, X4
	VPSHUFD $0x4e, X6, X7
	VMAXPS  X7, X6, X6
	VPSHUFD $0xb1, X4, X5
	VMINPS  X5, X4, X4
	VPSHUFD $0xb1, X6, X7
	VMAXPS  X7, X6, X6
	// A zero extreme is the block's first zero, with its sign (the
	// reference's strict comparisons keep the first).
	VMOVD X4, R10 // lo
	VMOVD X6, R11 // hi
	MOVL  R10, AX
	SHLL  $1, AX
	JZ    q41fix
	MOVL  R11, AX
	SHLL  $1, AX
	JNZ   q41ok
q41fix:
	FIRSTZERO
	MOVL    R10, BX
	SHLL    $1, BX
	CMOVLEQ AX, R10
	MOVL    R11, BX
	SHLL    $1, BX
	CMOVLEQ AX, R11
	VMOVD   R10, X4
	VMOVD   R11, X6
q41ok:
	VSUBSS X4, X6, X9
	VDIVSS c32<>+0x24(SB), X9, X9 // d = (hi - lo) / 15
	VUNPCKLPS X4, X9, X11         // d, lo
	VCVTPS2PH $0, X11, X11
	VMOVD     X11, AX
	MOVL      AX, 0(DI)
	INVERSE(X5, X7)
	VBROADCASTSS X4, Y4             // lo
	VBROADCASTSS c32<>+0x08(SB), Y9 // 0.5
	VPBROADCASTD c32<>+0x20(SB), Y8 // 15
	// q = min(15, int((x-lo)*id + 0.5))
#define Q41(x) \
	VSUBPS     Y4, x, x  \
	VMULPS     Y10, x, x \
	VADDPS     Y9, x, x  \
	VCVTTPS2DQ x, x      \
	VPMINSD    Y8, x, x
	Q41(Y0)
	Q41(Y1)
	Q41(Y2)
	Q41(Y3)
	PACKNIB(Y0, Y1, Y2, Y3, X0, X1)
	VMOVDQU X0, 4(DI)
	ADDQ    $128, SI
	ADDQ    $20, DI
	INCQ    DX
	JMP     q41loop
q41done:
	MOVQ  DX, done+24(FP)
	MOVL  R12, maxBits+32(FP)
	VZEROUPPER
	RET

// func f32ToF16F16C(dst *uint16, src *float32, n int)
// n is a multiple of 8. NaN lanes are replaced by the quiet NaN of their
// sign first, which VCVTPS2PH turns into the reference's 0x7e00|sign;
// every other value converts with IEEE round-to-nearest-even as the
// reference does (subnormal halves included).
TEXT ·f32ToF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   h16done
	VBROADCASTSS c32<>+0x04(SB), Y15 // sign
	VBROADCASTSS c32<>+0x28(SB), Y14 // quiet NaN
h16loop:
	VMOVUPS   (SI), Y0
	VCMPPS    $3, Y0, Y0, Y1 // unordered: NaN
	VANDPS    Y15, Y0, Y2
	VORPS     Y14, Y2, Y2
	VBLENDVPS Y1, Y2, Y0, Y0
	VCVTPS2PH $0, Y0, X0
	VMOVDQU   X0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       h16loop
h16done:
	VZEROUPPER
	RET

// func f16ToF32F16C(dst *float32, src *uint16, n int)
// n is a multiple of 8. VCVTPH2PS is exact, subnormals included; it sets
// the quiet bit of a signalling NaN, which the reference keeps as it was,
// so that bit is put back from the half's bit 9 on NaN lanes.
TEXT ·f16ToF32F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   f16done
	VPBROADCASTD c32<>+0x2c(SB), Y15 // 0x7fff
	VPBROADCASTD c32<>+0x3c(SB), Y14 // 0x7c00
	VPBROADCASTD c32<>+0x40(SB), Y13 // 0x00400000
f16loop:
	VCVTPH2PS (SI), Y0
	VPMOVZXWD (SI), Y1
	VPAND     Y15, Y1, Y2
	VPCMPGTD  Y14, Y2, Y2 // |h| > inf: NaN
	VPAND     Y13, Y2, Y2
	VPSLLD    $13, Y1, Y1
	VPANDN    Y2, Y1, Y2  // NaN lanes whose half had bit 9 clear
	VPANDN    Y0, Y2, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       f16loop
f16done:
	VZEROUPPER
	RET

// func f32ToBF16AVX2(dst *uint16, src *float32, n int)
// n is a multiple of 16: (b + 0x7fff + (b>>16)&1) >> 16, or b>>16 | 0x40
// for NaN, in integer lanes as the reference.
TEXT ·f32ToBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   b16done
	VPBROADCASTD c32<>+0x00(SB), Y15 // |x| mask
	VPBROADCASTD c32<>+0x2c(SB), Y14 // 0x7fff
	VPBROADCASTD c32<>+0x30(SB), Y13 // 1
	VPBROADCASTD c32<>+0x34(SB), Y12 // inf
	VPBROADCASTD c32<>+0x38(SB), Y11 // 0x40
#define BF16(x, t, u) \
	VPSRLD    $16, x, t   \
	VPAND     Y13, t, u   \
	VPADDD    Y14, u, u   \
	VPADDD    x, u, u     \
	VPSRLD    $16, u, u   \
	VPOR      Y11, t, t   \
	VPAND     Y15, x, x   \
	VPCMPGTD  Y12, x, x   \
	VPBLENDVB x, t, u, u
b16loop:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	BF16(Y0, Y2, Y3)
	BF16(Y1, Y4, Y5)
	VPACKUSDW Y5, Y3, Y3
	VPERMQ    $0xd8, Y3, Y3
	VMOVDQU   Y3, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       b16loop
#undef BF16
b16done:
	VZEROUPPER
	RET

// func bf16ToF32AVX2(dst *float32, src *uint16, n int)
// n is a multiple of 8.
TEXT ·bf16ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   bfdone
bfloop:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       bfloop
bfdone:
	VZEROUPPER
	RET

// func bf16ToF16F16C(dst, src *uint16, n int) (maxBits uint32)
// n is a multiple of 8. Each bf16 widens exactly to its float32 (the bits
// shifted up by 16), which VCVTPS2PH converts as f32ToF16F16C does; the
// largest |x| comes back as float32 bits. A caller hands any chunk with a
// NaN, an infinity or a value too large to the reference, so NaN lanes
// need no care here.
TEXT ·bf16ToF16F16C(SB), NOSPLIT, $0-28
	MOVQ  dst+0(FP), DI
	MOVQ  src+8(FP), SI
	MOVQ  n+16(FP), CX
	VPXOR Y9, Y9, Y9
	SHRQ  $3, CX
	JZ    bhdone
	VPBROADCASTD c32<>+0x00(SB), Y15 // |x| mask
bhloop:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VPAND     Y15, Y0, Y1
	VPMAXUD   Y1, Y9, Y9
	VCVTPS2PH $0, Y0, X0
	VMOVDQU   X0, (DI)
	ADDQ      $16, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       bhloop
bhdone:
	VEXTRACTI128 $1, Y9, X1
	VPMAXUD      X1, X9, X9
	VPSHUFD      $0x4e, X9, X1
	VPMAXUD      X1, X9, X9
	VPSHUFD      $0xb1, X9, X1
	VPMAXUD      X1, X9, X9
	VMOVD        X9, AX
	MOVL         AX, maxBits+24(FP)
	VZEROUPPER
	RET

// func dotAVX2Asm(a, b *float32, n int, s *[8]float32)
// n is a multiple of 8: s[j] = sum over i of a[8i+j]*b[8i+j], each product
// rounded before it is added (VMULPS then VADDPS, never fused), as
// dotGeneric's eight partial sums.
TEXT ·dotAVX2Asm(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ s+24(FP), DX
	VXORPS Y0, Y0, Y0
	SHRQ   $3, CX
	JZ     dotdone
dotloop:
	VMOVUPS (SI), Y1
	VMULPS  (DI), Y1, Y1
	VADDPS  Y1, Y0, Y0
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     dotloop
dotdone:
	VMOVUPS Y0, (DX)
	VZEROUPPER
	RET

// func axpyAVX2Asm(y, x *float32, n int, alpha float32)
// n is a multiple of 8: y[i] += float32(alpha*x[i]).
TEXT ·axpyAVX2Asm(SB), NOSPLIT, $0-28
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS alpha+24(FP), Y0
	SHRQ $3, CX
	JZ   axdone
axloop:
	VMULPS  (SI), Y0, Y1
	VADDPS  (DI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     axloop
axdone:
	VZEROUPPER
	RET

// func qxLanesAVX2(grp *qxAsm)
// make_qx_quants on 8 sub-blocks of n (16 or 32), one per lane, as the
// reference makeQXQuants (nmax 32,
// Q6_K's sub-block fit; weights v·v) or makeQXQuantsW (any nmax; the
// caller's weights, wgiven): every lane tries the 19 scales in order and
// keeps the best by the reference's comparisons. nearest_int is the
// reference's trick on the bits (x + 1.5·2^23, low 23 bits, minus 2^22).
// qxAsm's layout: xt at 0 (element i of sub-block j at 8i+j), w at 1024,
// wv (w·v) at 2048, lt at 3072, num at 4096, scale at 4168, n 4200, lo
// (-nmax) 4204, hi (nmax-1) 4208, -nmax as a float 4212, nmax 4216, wgiven
// 4220 (1: w is the caller's, wv computed; 2: w holds qw and becomes
// qw·sqrt(sigma2 + v·v), their sums to sw), sigma2 4224, sw 4228.
DATA qxc<>+0x00(SB)/4, $0x4b400000 // 12582912.0
DATA qxc<>+0x04(SB)/4, $0x007fffff
DATA qxc<>+0x08(SB)/4, $0x00400000
DATA qxc<>+0x14(SB)/4, $0x7fffffff
DATA qxc<>+0x1c(SB)/4, $0x26901d7d // 1e-15 (groupMaxEps as float32)
GLOBL qxc<>(SB), RODATA|NOPTR, $0x24

// QXSUMS(loop): Y3 = sum of wv·fl, Y4 = sum of (w·fl)·fl over the n
// elements, fl = clamp(nearest_int(Y2·v), lo, hi), added in order from 0.
// Uses AX, Y0, Y5, Y9.
#define QXSUMS(loop) \
	VXORPS     Y3, Y3, Y3 \
	VXORPS     Y4, Y4, Y4 \
	XORQ       AX, AX \
loop: \
	VMULPS     (DI)(AX*1), Y2, Y0 \
	VADDPS     Y15, Y0, Y0 \
	VPAND      Y14, Y0, Y0 \
	VPSUBD     Y13, Y0, Y0 \
	VPMAXSD    Y12, Y0, Y0 \
	VPMINSD    Y11, Y0, Y0 \
	VCVTDQ2PS  Y0, Y0 \
	VMULPS     2048(DI)(AX*1), Y0, Y5 \
	VADDPS     Y5, Y3, Y3 \
	VMULPS     1024(DI)(AX*1), Y0, Y9 \
	VMULPS     Y0, Y9, Y9 \
	VADDPS     Y9, Y4, Y4 \
	ADDQ       $32, AX \
	CMPQ       AX, R8 \
	JNE        loop

TEXT ·qxLanesAVX2(SB), NOSPLIT, $32-8
	MOVQ grp+0(FP), DI
	VPBROADCASTD qxc<>+0x00(SB), Y15
	VPBROADCASTD qxc<>+0x04(SB), Y14
	VPBROADCASTD qxc<>+0x08(SB), Y13
	VPBROADCASTD 4204(DI), Y12 // lo
	VPBROADCASTD 4208(DI), Y11 // hi
	MOVLQSX      4200(DI), R8
	SHLQ         $5, R8        // n·32 bytes
	MOVL         4220(DI), R11 // wgiven
	VBROADCASTSS 4224(DI), Y8  // sigma2 (wgiven 2)
	VPBROADCASTD qxc<>+0x14(SB), Y10
	// maxv: the first value of largest |x| (strict >, from +0), amax its
	// |x|; w and wv per element.
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y7, Y7, Y7
	XORQ   AX, AX
qxmax:
	VMOVUPS   (DI)(AX*1), Y2
	VPAND     Y10, Y2, Y3
	VCMPPS    $0x1e, Y0, Y3, Y4 // |v| > amax (ordered)
	VBLENDVPS Y4, Y3, Y0, Y0
	VBLENDVPS Y4, Y2, Y1, Y1
	TESTL     R11, R11
	JNZ       qxmaxw
	VMULPS    Y2, Y2, Y3
	VMOVUPS   Y3, 1024(DI)(AX*1)
	VMULPS    Y2, Y3, Y3
	VMOVUPS   Y3, 2048(DI)(AX*1)
	JMP       qxmaxn
qxmaxw:
	VMOVUPS   1024(DI)(AX*1), Y3 // the caller's weights, or qw (wgiven 2)
	CMPL      R11, $2
	JNE       qxmaxg
	VMULPS    Y2, Y2, Y5 // qw·sqrt(sigma2 + v·v), as importance()
	VADDPS    Y5, Y8, Y5
	VSQRTPS   Y5, Y5
	VMULPS    Y5, Y3, Y3
	VMOVUPS   Y3, 1024(DI)(AX*1)
	VADDPS    Y3, Y7, Y7 // the weights' sums, from 0 in order
qxmaxg:
	VMULPS    Y2, Y3, Y3 // w·v
	VMOVUPS   Y3, 2048(DI)(AX*1)
qxmaxn:
	ADDQ      $32, AX
	CMPQ      AX, R8
	JNE       qxmax
	VMOVUPS   Y7, 4228(DI) // sw (wgiven 2; else 0)
	VBROADCASTSS qxc<>+0x1c(SB), Y3
	VCMPPS    $0x11, Y3, Y0, Y3 // amax < eps (ordered): flat
	VMOVUPS   Y3, 0(SP)
	// The first fit: iscale = -32 / maxv.
	VBROADCASTSS 4212(DI), Y2
	VDIVPS    Y1, Y2, Y2
	QXSUMS(qxs0)
	VDIVPS    Y4, Y3, Y6 // scale = sumlx / suml2, or 0 where suml2 == 0
	VXORPS    Y5, Y5, Y5
	VCMPPS    $0, Y5, Y4, Y5
	VANDNPS   Y6, Y5, Y6
	VMULPS    Y3, Y6, Y7 // best = scale * sumlx
	VMOVUPS   Y2, Y8     // bestIscale
	XORQ      CX, CX
qxcand:
	VBROADCASTSS 4096(DI)(CX*4), Y2
	VDIVPS    Y1, Y2, Y2 // iscale = num / maxv
	QXSUMS(qxs1)
	// take = suml2 > 0 && sumlx*sumlx > best*suml2
	VXORPS    Y0, Y0, Y0
	VCMPPS    $0x1e, Y0, Y4, Y0
	VMULPS    Y3, Y3, Y5
	VMULPS    Y4, Y7, Y9
	VCMPPS    $0x1e, Y9, Y5, Y5
	VANDPS    Y5, Y0, Y0
	VDIVPS    Y4, Y3, Y5
	VBLENDVPS Y0, Y5, Y6, Y6 // scale
	VMULPS    Y3, Y6, Y5
	VBLENDVPS Y0, Y5, Y7, Y7 // best
	VBLENDVPS Y0, Y2, Y8, Y8 // bestIscale
	INCQ      CX
	CMPQ      CX, $18
	JNE       qxcand
	// Flat lanes: scale 0 and levels 0; else levels at bestIscale, + 32.
	VMOVUPS   0(SP), Y10
	VANDNPS   Y6, Y10, Y6
	VMOVUPS   Y6, 4168(DI)
	VPBROADCASTD 4216(DI), Y9
	XORQ      AX, AX
qxlev:
	VMULPS    (DI)(AX*1), Y8, Y0
	VADDPS    Y15, Y0, Y0
	VPAND     Y14, Y0, Y0
	VPSUBD    Y13, Y0, Y0
	VPMAXSD   Y12, Y0, Y0
	VPMINSD   Y11, Y0, Y0
	VPADDD    Y9, Y0, Y0
	VPANDN    Y0, Y10, Y0
	VMOVDQU   Y0, 3072(DI)(AX*1)
	ADDQ      $32, AX
	CMPQ      AX, R8
	JNE       qxlev
	VZEROUPPER
	RET

// func kx2LanesAVX2(grp *kx2Asm)
// make_qkx2_quants on 8 sub-blocks of n (32 for Q4_K and Q5_K, 16 for
// Q2_K), one per lane, as the reference makeQKX2Quants: the first fit at nmax/(max-min), then the
// nstep+1 candidates in order, each accepted or not by a per-lane mask
// (an accepted one changes the min the later ones use). Weights are the
// RMS plus |x| with squared errors, or |x| with absolute errors (q2).
// kx2Asm's layout: xt at 0, num at 1024, fmax 1280, n 1284, nmax 1288,
// nstep 1292, q2 1296, wgiven 1300 (1: w is the caller's; 2: w holds the
// importance qw and becomes qw·sqrt(sigma2 + v·v), their sums to sw), sigma2
// 1304, scale 1312, min 1344, lt 1376, w 2400, fl 3424, sw 4448.
// Locals: flat at 0(SP), minv0 32, scale 64, bestNum 96, bestMin 128.
DATA kxc<>+0x00(SB)/4, $0x4b400000 // 12582912.0
DATA kxc<>+0x04(SB)/4, $0x007fffff
DATA kxc<>+0x08(SB)/4, $0x00400000
DATA kxc<>+0x0c(SB)/4, $0x7fffffff
DATA kxc<>+0x10(SB)/4, $0x3f800000 // 1.0
DATA kxc<>+0x14(SB)/4, $0x80000000
GLOBL kxc<>(SB), RODATA|NOPTR, $0x18

DATA zero32<>+0x00(SB)/8, $0
DATA zero32<>+0x08(SB)/8, $0
DATA zero32<>+0x10(SB)/8, $0
DATA zero32<>+0x18(SB)/8, $0
GLOBL zero32<>(SB), RODATA|NOPTR, $32

// KXLEVELS: t = clamp(nearest_int(Y4·(t-Y9)), 0, nmax) as floats; t holds v.
#define KXLEVELS(t) \
	VSUBPS     Y9, t, t     \
	VMULPS     Y4, t, t     \
	VADDPS     Y15, t, t    \
	VPAND      Y14, t, t    \
	VPSUBD     Y13, t, t    \
	VPMAXSD    zero32<>(SB), t, t \
	VPMINSD    Y12, t, t    \
	VCVTDQ2PS  t, t

TEXT ·kx2LanesAVX2(SB), NOSPLIT, $160-8
	MOVQ grp+0(FP), DI
	MOVLQSX 1284(DI), R8 // n
	SHLQ    $5, R8       // n·32 bytes
	MOVL    1296(DI), R9 // q2
	MOVL    1300(DI), R11 // wgiven
	MOVLQSX 1292(DI), R10
	INCQ    R10          // nstep+1 candidates
	VPBROADCASTD kxc<>+0x00(SB), Y15
	VPBROADCASTD kxc<>+0x04(SB), Y14
	VPBROADCASTD kxc<>+0x08(SB), Y13
	VPBROADCASTD 1288(DI), Y12 // nmax
	VPBROADCASTD kxc<>+0x0c(SB), Y11
	// Weights: w = avX + |v| with avX = sqrt(sum v·v / n), or |v| (q2).
	// wgiven 1: the caller's weights are in w already (make_qkx3_quants).
	VXORPS Y0, Y0, Y0
	CMPL   R11, $2
	JEQ    kximp0
	TESTL  R11, R11
	JNZ    kxmm0
	TESTL  R9, R9
	JNZ    kxw
	XORQ   AX, AX
kxsq:
	VMOVUPS (DI)(AX*1), Y1
	VMULPS  Y1, Y1, Y1
	VADDPS  Y1, Y0, Y0
	ADDQ    $32, AX
	CMPQ    AX, R8
	JNE     kxsq
	VPBROADCASTD 1284(DI), Y1
	VCVTDQ2PS Y1, Y1
	VDIVPS  Y1, Y0, Y0
	VSQRTPS Y0, Y0
kxw:
	XORQ AX, AX
kxwl:
	VMOVUPS (DI)(AX*1), Y1
	VANDPS  Y11, Y1, Y1
	VADDPS  Y1, Y0, Y1 // avX + |v| (q2: 0 + |v|, exact)
	VMOVUPS Y1, 2400(DI)(AX*1)
	ADDQ    $32, AX
	CMPQ    AX, R8
	JNE     kxwl
	JMP     kxmm0
	// wgiven 2: w holds the importance qw; w = qw·sqrt(sigma2 + v·v), as
	// importance() (VSQRTPS rounds correctly, as sqrtf).
kximp0:
	VBROADCASTSS 1304(DI), Y0 // sigma2
	VXORPS  Y2, Y2, Y2        // the weights' sums, from 0 in order
	XORQ    AX, AX
kximp:
	VMOVUPS (DI)(AX*1), Y1
	VMULPS  Y1, Y1, Y1
	VADDPS  Y1, Y0, Y1
	VSQRTPS Y1, Y1
	VMULPS  2400(DI)(AX*1), Y1, Y1
	VMOVUPS Y1, 2400(DI)(AX*1)
	VADDPS  Y1, Y2, Y2
	ADDQ    $32, AX
	CMPQ    AX, R8
	JNE     kximp
	VMOVUPS Y2, 4448(DI) // sw
kxmm0:
	// min, max (strict comparisons from v0), sumW, sumX
	VMOVUPS (DI), Y9        // minv
	VMOVUPS Y9, Y10         // maxv
	VMOVUPS 2400(DI), Y8    // sumW
	VMULPS  Y9, Y8, Y7      // sumX
	MOVQ    $32, AX
kxmm:
	VMOVUPS   (DI)(AX*1), Y1
	VCMPPS    $0x11, Y9, Y1, Y2 // v < minv
	VBLENDVPS Y2, Y1, Y9, Y9
	VCMPPS    $0x1e, Y10, Y1, Y2 // v > maxv
	VBLENDVPS Y2, Y1, Y10, Y10
	VMOVUPS   2400(DI)(AX*1), Y2
	VADDPS    Y2, Y8, Y8
	VMULPS    Y1, Y2, Y2
	VADDPS    Y2, Y7, Y7
	ADDQ      $32, AX
	CMPQ      AX, R8
	JNE       kxmm
	VXORPS    Y1, Y1, Y1
	VCMPPS    $0x1e, Y1, Y9, Y1 // minv > 0: 0
	VANDNPS   Y9, Y1, Y9
	VCMPPS    $0, Y9, Y10, Y1   // flat: maxv == minv
	VMOVUPS   Y1, 0(SP)
	VMOVUPS   Y9, 32(SP)
	// first fit: iscale = fmax/(maxv-minv), scale = 1/iscale
	VBROADCASTSS 1280(DI), Y3
	VMOVUPS   Y3, 96(SP)   // bestNum = fmax
	VMOVUPS   Y9, 128(SP)  // bestMin = minv
	VSUBPS    Y9, Y10, Y1
	VDIVPS    Y1, Y3, Y4   // iscale
	VBROADCASTSS kxc<>+0x10(SB), Y1
	VDIVPS    Y4, Y1, Y5   // scale
	VMOVUPS   Y5, 64(SP)
	VXORPS    Y6, Y6, Y6   // bestMad
	XORQ      AX, AX
kxf0:
	VMOVUPS   (DI)(AX*1), Y1
	VMOVUPS   Y1, Y3
	KXLEVELS(Y1)
	VMULPS    Y1, Y5, Y1 // scale·l
	VADDPS    Y9, Y1, Y1 // + minv
	VSUBPS    Y3, Y1, Y1 // - v
	TESTL     R9, R9
	JZ        kxf0sq
	VANDPS    Y11, Y1, Y1
	JMP       kxf0w
kxf0sq:
	VMULPS    Y1, Y1, Y1
kxf0w:
	VMULPS    2400(DI)(AX*1), Y1, Y1
	VADDPS    Y1, Y6, Y6
	ADDQ      $32, AX
	CMPQ      AX, R8
	JNE       kxf0
	XORQ      CX, CX
kxcand:
	VBROADCASTSS 1024(DI)(CX*4), Y4
	VSUBPS    Y9, Y10, Y1
	VDIVPS    Y1, Y4, Y4 // iscale = num/(maxv-minv)
	VXORPS    Y0, Y0, Y0 // sumL
	VXORPS    Y1, Y1, Y1 // sumL2
	VXORPS    Y2, Y2, Y2 // sumXL
	XORQ      AX, AX
kxc1:
	VMOVUPS   (DI)(AX*1), Y3
	KXLEVELS(Y3)
	VMOVUPS   Y3, 3424(DI)(AX*1)
	VMULPS    2400(DI)(AX*1), Y3, Y5 // wfl = w·fl
	VADDPS    Y5, Y0, Y0
	VMULPS    Y3, Y5, Y3
	VADDPS    Y3, Y1, Y1
	VMULPS    (DI)(AX*1), Y5, Y5
	VADDPS    Y5, Y2, Y2
	ADDQ      $32, AX
	CMPQ      AX, R8
	JNE       kxc1
	VMULPS    Y1, Y8, Y3 // D = sumW·sumL2 - sumL·sumL
	VMULPS    Y0, Y0, Y4
	VSUBPS    Y4, Y3, Y3
	VMULPS    Y2, Y8, Y4 // sc = (sumW·sumXL - sumX·sumL) / D
	VMULPS    Y0, Y7, Y5
	VSUBPS    Y5, Y4, Y4
	VDIVPS    Y3, Y4, Y4
	VMULPS    Y7, Y1, Y5 // mn = (sumL2·sumX - sumL·sumXL) / D
	VMULPS    Y2, Y0, Y0
	VSUBPS    Y0, Y5, Y5
	VDIVPS    Y3, Y5, Y5
	VDIVPS    Y1, Y2, Y0 // sumXL / sumL2
	VXORPS    Y2, Y2, Y2
	VCMPPS    $0x1e, Y2, Y5, Y1 // mn > 0: mn = 0, sc = sumXL/sumL2
	VBLENDVPS Y1, Y0, Y4, Y4
	VANDNPS   Y5, Y1, Y5
	VXORPS    Y0, Y0, Y0 // mad
	XORQ      AX, AX
kxc2:
	VMULPS    3424(DI)(AX*1), Y4, Y1
	VADDPS    Y5, Y1, Y1
	VSUBPS    (DI)(AX*1), Y1, Y1
	TESTL     R9, R9
	JZ        kxc2sq
	VANDPS    Y11, Y1, Y1
	JMP       kxc2w
kxc2sq:
	VMULPS    Y1, Y1, Y1
kxc2w:
	VMULPS    2400(DI)(AX*1), Y1, Y1
	VADDPS    Y1, Y0, Y0
	ADDQ      $32, AX
	CMPQ      AX, R8
	JNE       kxc2
	// take = D > 0 && mad < bestMad
	VXORPS    Y1, Y1, Y1
	VCMPPS    $0x1e, Y1, Y3, Y1
	VCMPPS    $0x11, Y6, Y0, Y2
	VANDPS    Y2, Y1, Y1
	VBLENDVPS Y1, Y0, Y6, Y6 // bestMad
	VMOVUPS   64(SP), Y2
	VBLENDVPS Y1, Y4, Y2, Y2
	VMOVUPS   Y2, 64(SP)     // scale
	VBROADCASTSS 1024(DI)(CX*4), Y0
	VMOVUPS   96(SP), Y2
	VBLENDVPS Y1, Y0, Y2, Y2
	VMOVUPS   Y2, 96(SP)     // bestNum
	VMOVUPS   128(SP), Y2
	VBLENDVPS Y1, Y9, Y2, Y2
	VMOVUPS   Y2, 128(SP)    // bestMin (the min before this candidate)
	VBLENDVPS Y1, Y5, Y9, Y9 // minv
	INCQ      CX
	CMPQ      CX, R10
	JNE       kxcand
	// Flat lanes: scale 0, min as found, levels 0.
	VMOVUPS   0(SP), Y3
	VMOVUPS   64(SP), Y2
	VANDNPS   Y2, Y3, Y2
	VMOVUPS   Y2, 1312(DI)
	VMOVUPS   32(SP), Y2
	VBLENDVPS Y3, Y2, Y9, Y9
	VBROADCASTSS kxc<>+0x14(SB), Y2
	VXORPS    Y2, Y9, Y9
	VMOVUPS   Y9, 1344(DI) // -min
	VMOVUPS   128(SP), Y9  // bestMin
	VSUBPS    Y9, Y10, Y1
	VMOVUPS   96(SP), Y4
	VDIVPS    Y1, Y4, Y4   // bestNum/(maxv-bestMin)
	XORQ      AX, AX
kxlev:
	VMOVUPS   (DI)(AX*1), Y1
	KXLEVELS(Y1)
	VCVTPS2DQ Y1, Y1 // exact: small integers
	VPANDN    Y1, Y3, Y1
	VMOVDQU   Y1, 1376(DI)(AX*1)
	ADDQ      $32, AX
	CMPQ      AX, R8
	JNE       kxlev
	VZEROUPPER
	RET

// func levelsAVX2(dst *int32, x *float32, n int, d, dm float32, nmax int32)
// dst[i] = clamp(nearest_int((x[i] + dm) / d), 0, nmax) for n values (a
// multiple of 8), as the K-quants' last loop: VADDPS and VDIVPS round as
// the reference's float32 add and divide, nearest_int is its trick on the
// bits.
TEXT ·levelsAVX2(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS d+24(FP), Y0
	VBROADCASTSS dm+28(FP), Y1
	MOVL         nmax+32(FP), AX
	VMOVD        AX, X2
	VPBROADCASTD X2, Y2
	VPBROADCASTD kxc<>+0x00(SB), Y3
	VPBROADCASTD kxc<>+0x04(SB), Y4
	VPBROADCASTD kxc<>+0x08(SB), Y5
	VPXOR        Y6, Y6, Y6
lvl:
	VMOVUPS (SI), Y7
	VADDPS  Y1, Y7, Y7
	VDIVPS  Y0, Y7, Y7
	VADDPS  Y3, Y7, Y7
	VPAND   Y4, Y7, Y7
	VPSUBD  Y5, Y7, Y7
	VPMAXSD Y6, Y7, Y7
	VPMINSD Y2, Y7, Y7
	VMOVDQU Y7, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     lvl
	VZEROUPPER
	RET

// func requant16AVX2(lt *int32, x *float32, d *float32, nmax int32)
// requantize16's loop: the 256 values of a block, sub-block j (16 values)
// at scale d[j], each to clamp(nearest_int(x / d[j]), -nmax, nmax-1) + nmax
// (an IEEE division, then the reference's nearest_int on the bits).
TEXT ·requant16AVX2(SB), NOSPLIT, $0-28
	MOVQ         lt+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         d+16(FP), DX
	MOVL         nmax+24(FP), AX
	VMOVD        AX, X6
	VPBROADCASTD X6, Y6 // nmax
	LEAL         -1(AX), BX
	VMOVD        BX, X5
	VPBROADCASTD X5, Y5 // nmax-1
	NEGL         AX
	VMOVD        AX, X4
	VPBROADCASTD X4, Y4 // -nmax
	VPBROADCASTD kxc<>+0x00(SB), Y3
	VPBROADCASTD kxc<>+0x04(SB), Y2
	VPBROADCASTD kxc<>+0x08(SB), Y1
	MOVQ         $16, CX
rq16:
	VBROADCASTSS (DX), Y0
	VMOVUPS      (SI), Y7
	VMOVUPS      32(SI), Y8
	VDIVPS       Y0, Y7, Y7
	VDIVPS       Y0, Y8, Y8
	VADDPS       Y3, Y7, Y7
	VADDPS       Y3, Y8, Y8
	VPAND        Y2, Y7, Y7
	VPAND        Y2, Y8, Y8
	VPSUBD       Y1, Y7, Y7
	VPSUBD       Y1, Y8, Y8
	VPMAXSD      Y4, Y7, Y7
	VPMAXSD      Y4, Y8, Y8
	VPMINSD      Y5, Y7, Y7
	VPMINSD      Y5, Y8, Y8
	VPADDD       Y6, Y7, Y7
	VPADDD       Y6, Y8, Y8
	VMOVDQU      Y7, (DI)
	VMOVDQU      Y8, 32(DI)
	ADDQ         $64, SI
	ADDQ         $64, DI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          rq16
	VZEROUPPER
	RET

// LOAD8(base, stride) loads 8 rows of 32 bytes at base(SI),
// base+stride(SI), ... into Y0-Y7.
#define LOAD8(base, stride) \
	VMOVUPS base+(0*stride)(SI), Y0 \
	VMOVUPS base+(1*stride)(SI), Y1 \
	VMOVUPS base+(2*stride)(SI), Y2 \
	VMOVUPS base+(3*stride)(SI), Y3 \
	VMOVUPS base+(4*stride)(SI), Y4 \
	VMOVUPS base+(5*stride)(SI), Y5 \
	VMOVUPS base+(6*stride)(SI), Y6 \
	VMOVUPS base+(7*stride)(SI), Y7

// STORE8(base, R) stores Y8-Y15 as 8 rows of 32 bytes from base(R).
#define STORE8(base, R) \
	VMOVUPS Y8, base+0(R)    \
	VMOVUPS Y9, base+32(R)   \
	VMOVUPS Y10, base+64(R)  \
	VMOVUPS Y11, base+96(R)  \
	VMOVUPS Y12, base+128(R) \
	VMOVUPS Y13, base+160(R) \
	VMOVUPS Y14, base+192(R) \
	VMOVUPS Y15, base+224(R)

// func intoLanesAVX2(dst *uint32, src *float32, n int)
// The 8 rows of n values at src (8 sub-blocks of n, n 16 or 32) as n rows
// of 8 at dst: element i of row j at 8i+j (intoLanes), 8 columns at a time.
TEXT ·intoLanesAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	LEAQ (CX*4), R8      // a row: 4n bytes
	LEAQ (R8)(R8*2), R9
	SHRQ $3, CX
inl:
	LEAQ    (SI)(R8*4), R10
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (R10), Y4
	VMOVUPS (R10)(R8*1), Y5
	VMOVUPS (R10)(R8*2), Y6
	VMOVUPS (R10)(R9*1), Y7
	TRANSPOSE8X8
	STORE8(0, DI)
	ADDQ $32, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  inl
	VZEROUPPER
	RET

// PACKROW(j, Yb, at): row j's 16 levels, the first 8 at 32j(SP) and the
// last 8 in Yb (int32, 0..127), as 16 bytes at at. Uses Y0.
#define PACKROW(j, Yb, at) \
	VMOVDQU   (32*j)(SP), Y0 \
	VPACKSSDW Yb, Y0, Y0     \
	VPERMQ    $0xd8, Y0, Y0  \
	VPACKSSWB Y0, Y0, Y0     \
	VPERMQ    $0x08, Y0, Y0  \
	VMOVDQU   X0, at

// func outOfLanesAVX2(dst *byte, src *int32, n int)
// intoLanesAVX2 backwards for levels: the n rows of 8 int32 at src as 8
// rows of n bytes at dst (outOfLanes), 16 columns at a time; the levels are
// 0..127, so the saturating packs keep them.
TEXT ·outOfLanesAVX2(SB), NOSPLIT, $256-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), R8    // a row: n bytes
	LEAQ (R8)(R8*2), R9
	MOVQ R8, CX
	SHRQ $4, CX
outl:
	LOAD8(0, 32)
	TRANSPOSE8X8
	STORE8(0, SP)
	LOAD8(256, 32)
	TRANSPOSE8X8
	LEAQ (DI)(R8*4), R10
	PACKROW(0, Y8, (DI))
	PACKROW(1, Y9, (DI)(R8*1))
	PACKROW(2, Y10, (DI)(R8*2))
	PACKROW(3, Y11, (DI)(R9*1))
	PACKROW(4, Y12, (R10))
	PACKROW(5, Y13, (R10)(R8*1))
	PACKROW(6, Y14, (R10)(R8*2))
	PACKROW(7, Y15, (R10)(R9*1))
	ADDQ $512, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  outl
	VZEROUPPER
	RET

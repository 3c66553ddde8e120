//go:build amd64 && !purego && !noasm

#include "textflag.h"

// iq3LanesAsm: see iq3quant_amd64.go and iq3LanesGeneric. Operands are
// source first, destination last ("VSUBPS a, b, c" is c = b - a; "VCMPPS $1,
// a, b, c" is c = b < a; "VBLENDVPS m, a, b, c" is c = m ? a : b).

// Constants, each in 8 lanes of 32 bytes.

DATA iq3k<>+0x0(SB)/8, $0x3f8000003f800000 // 1.0
DATA iq3k<>+0x8(SB)/8, $0x3f8000003f800000
DATA iq3k<>+0x10(SB)/8, $0x3f8000003f800000
DATA iq3k<>+0x18(SB)/8, $0x3f8000003f800000
DATA iq3k<>+0x20(SB)/8, $0x3f0000003f000000 // 0.5
DATA iq3k<>+0x28(SB)/8, $0x3f0000003f000000
DATA iq3k<>+0x30(SB)/8, $0x3f0000003f000000
DATA iq3k<>+0x38(SB)/8, $0x3f0000003f000000
DATA iq3k<>+0x40(SB)/8, $0x4b4000004b400000 // 12582912.0 (nearest_int's magic)
DATA iq3k<>+0x48(SB)/8, $0x4b4000004b400000
DATA iq3k<>+0x50(SB)/8, $0x4b4000004b400000
DATA iq3k<>+0x58(SB)/8, $0x4b4000004b400000
DATA iq3k<>+0x60(SB)/8, $0x7fffff007fffff // mantissa mask
DATA iq3k<>+0x68(SB)/8, $0x7fffff007fffff
DATA iq3k<>+0x70(SB)/8, $0x7fffff007fffff
DATA iq3k<>+0x78(SB)/8, $0x7fffff007fffff
DATA iq3k<>+0x80(SB)/8, $0x40000000400000 // 0x400000
DATA iq3k<>+0x88(SB)/8, $0x40000000400000
DATA iq3k<>+0x90(SB)/8, $0x40000000400000
DATA iq3k<>+0x98(SB)/8, $0x40000000400000
DATA iq3k<>+0xa0(SB)/8, $0x700000007 // 7 (integer)
DATA iq3k<>+0xa8(SB)/8, $0x700000007
DATA iq3k<>+0xb0(SB)/8, $0x700000007
DATA iq3k<>+0xb8(SB)/8, $0x700000007
DATA iq3k<>+0xc0(SB)/8, $0x100000001 // 1 (integer)
DATA iq3k<>+0xc8(SB)/8, $0x100000001
DATA iq3k<>+0xd0(SB)/8, $0x100000001
DATA iq3k<>+0xd8(SB)/8, $0x100000001
DATA iq3k<>+0xe0(SB)/8, $0x7f7fffff7f7fffff // math.MaxFloat32
DATA iq3k<>+0xe8(SB)/8, $0x7f7fffff7f7fffff
DATA iq3k<>+0xf0(SB)/8, $0x7f7fffff7f7fffff
DATA iq3k<>+0xf8(SB)/8, $0x7f7fffff7f7fffff
DATA iq3k<>+0x100(SB)/8, $0xff000000ff // 255 (integer)
DATA iq3k<>+0x108(SB)/8, $0xff000000ff
DATA iq3k<>+0x110(SB)/8, $0xff000000ff
DATA iq3k<>+0x118(SB)/8, $0xff000000ff
DATA iq3k<>+0x120(SB)/8, $0x0000ffff0000ffff // 0xffff (integer)
DATA iq3k<>+0x128(SB)/8, $0x0000ffff0000ffff
DATA iq3k<>+0x130(SB)/8, $0x0000ffff0000ffff
DATA iq3k<>+0x138(SB)/8, $0x0000ffff0000ffff
DATA iq3k<>+0x140(SB)/8, $0x0000000e0000000e // 14 (integer)
DATA iq3k<>+0x148(SB)/8, $0x0000000e0000000e
DATA iq3k<>+0x150(SB)/8, $0x0000000e0000000e
DATA iq3k<>+0x158(SB)/8, $0x0000000e0000000e
GLOBL iq3k<>(SB), RODATA|NOPTR, $352

#define K_ONE   iq3k<>+0(SB)
#define K_HALF  iq3k<>+32(SB)
#define K_MAGIC iq3k<>+64(SB)
#define K_MANT  iq3k<>+96(SB)
#define K_Q400  iq3k<>+128(SB)
#define K_SEVEN iq3k<>+160(SB)
#define K_IONE  iq3k<>+192(SB)
#define K_FMAX  iq3k<>+224(SB)
#define K_255   iq3k<>+256(SB)
#define K_FFFF  iq3k<>+288(SB)
#define K_E     iq3k<>+320(SB)

// Offsets in iq3Lanes.
#define O_X     0
#define O_WA    128
#define O_W     256
#define O_WX    384
#define O_ID    512
#define O_S     544
#define O_CODE  576
#define O_NN    832
#define O_SUMQX 1088
#define O_SUMQ2 1120
#define O_OFF   1152

// Registers: DI the state, SI nbr, DX list, BX 16·k (group k's values),
// R8 32·k (its row of code and nn); Y15 id, Y14 s, Y13 sumqx, Y12 sumq2;
// Y2 zero while the levels are made.

// LEVEL(c) ors level c of group k (nearest_int(0.5·(id·x − 1)) clamped to
// 0..7, the bits of x + 12582912 as ggml's nearest_int) shifted by 3c into Y0.
#define LEVEL(c)                            \
	VBROADCASTSS (4*c)(DI)(BX*1), Y1    \
	VMULPS       Y15, Y1, Y1            \
	VSUBPS       K_ONE, Y1, Y1          \
	VMULPS       K_HALF, Y1, Y1         \
	VADDPS       K_MAGIC, Y1, Y1        \
	VPAND        K_MANT, Y1, Y1         \
	VPSUBD       K_Q400, Y1, Y1         \
	VPMAXSD      Y2, Y1, Y1             \
	VPMINSD      K_SEVEN, Y1, Y1        \
	VPSLLD       $(3*c), Y1, Y1         \
	VPOR         Y1, Y0, Y0

// QOF(op, n, src, dst): dst = float(2l+1) for a level of the codes in src,
// "op $n" shifting it to bits 1-3 (level c: VPSLLD $1 for c 0, else VPSRLD
// $(3c-1)).
#define QOF(op, n, src, dst)                \
	op        $n, src, dst              \
	VPAND     K_E, dst, dst             \
	VPOR      K_IONE, dst, dst          \
	VCVTDQ2PS dst, dst

// TERM(c, op, n) is w·(s·q − x)² of coordinate c for the neighbours in Y1, in Y3
// (ggml's (w·d)·d, each product rounded). Uses Y10.
#define TERM(c, op, n)                      \
	QOF(op, n, Y1, Y3)                  \
	VMULPS       Y14, Y3, Y3            \
	VBROADCASTSS (O_X+4*c)(DI)(BX*1), Y10 \
	VSUBPS       Y10, Y3, Y3            \
	VBROADCASTSS (O_WA+4*c)(DI)(BX*1), Y10 \
	VMULPS       Y3, Y10, Y10           \
	VMULPS       Y3, Y10, Y3

// STEP compares the neighbours in Y1 (lanes Y9) with the best so far: Y2
// their d2, in ggml's order; a strictly smaller d2 (ordered: never a NaN)
// takes the lane's best d2 (Y7) and code (Y6).
#define STEP                                \
	TERM(0, VPSLLD, 1)                  \
	VMOVAPS   Y3, Y2                    \
	TERM(1, VPSRLD, 2)                  \
	VADDPS    Y3, Y2, Y2                \
	TERM(2, VPSRLD, 5)                  \
	VADDPS    Y3, Y2, Y2                \
	TERM(3, VPSRLD, 8)                  \
	VADDPS    Y3, Y2, Y2                \
	VCMPPS    $1, Y7, Y2, Y3            \
	VANDPS    Y9, Y3, Y3                \
	VBLENDVPS Y3, Y2, Y7, Y7            \
	VBLENDVPS Y3, Y1, Y6, Y6            \
	VPADDD    K_IONE, Y8, Y8

// GATHER loads the neighbours j and j+1 (Y8 even) of the lanes whose list is
// longer than j into Y0 (codes of 16 bits: j low, j+1 high; the list has a
// 0 after its last, so j+1 is in bounds), Y9 those lanes, and jumps to done
// where there is none. Y1 gets neighbour j.
#define GATHER(done)                        \
	VPCMPGTD   Y8, Y4, Y9               \
	VMOVMSKPS  Y9, AX                   \
	TESTL      AX, AX                   \
	JZ         done                     \
	VPADDD     Y8, Y5, Y10              \
	VMOVDQU    Y9, Y11                  \
	VPGATHERDD Y11, (DX)(Y10*2), Y0     \
	VPAND      K_FFFF, Y0, Y1

// SECOND makes Y1 neighbour j+1 and Y9 the lanes that have it.
#define SECOND                              \
	VPCMPGTD Y8, Y4, Y9                 \
	VPSRLD   $16, Y0, Y1

// SUMS(c, op, n) adds value c of group k at the levels in Y6 to the sums.
#define SUMS(c, op, n)                      \
	QOF(op, n, Y6, Y3)                  \
	VBROADCASTSS (O_WX+4*c)(DI)(BX*1), Y10 \
	VMULPS       Y3, Y10, Y10           \
	VADDPS       Y10, Y13, Y13          \
	VBROADCASTSS (O_W+4*c)(DI)(BX*1), Y10 \
	VMULPS       Y3, Y10, Y10           \
	VMULPS       Y3, Y10, Y10           \
	VADDPS       Y10, Y12, Y12

// func iq3LanesAsm(b *iq3Lanes, nbr *uint32, list *uint16)
//
// First every group's code and list (branch-free), then the lists: the
// loop over a list ends on its count, known well before, so a mispredicted
// exit costs little.
TEXT ·iq3LanesAsm(SB), NOSPLIT, $0-24
	MOVQ    b+0(FP), DI
	MOVQ    nbr+8(FP), SI
	MOVQ    list+16(FP), DX
	VMOVUPS O_ID(DI), Y15
	VMOVUPS O_S(DI), Y14
	VXORPS  Y13, Y13, Y13
	VXORPS  Y12, Y12, Y12
	XORQ    BX, BX
	XORQ    R8, R8

codes:
	// The group's code in each lane, and its entry in nbr: the list's
	// length (nn) and offset (off).
	VPXOR      Y2, Y2, Y2
	VPXOR      Y0, Y0, Y0
	LEVEL(0)
	LEVEL(1)
	LEVEL(2)
	LEVEL(3)
	VPCMPEQD   Y11, Y11, Y11
	VPGATHERDD Y11, (SI)(Y0*4), Y3
	VPAND      K_255, Y3, Y4
	VPSRLD     $8, Y3, Y5
	VMOVDQU    Y0, O_CODE(DI)(R8*1)
	VMOVDQU    Y4, O_NN(DI)(R8*1)
	VMOVDQU    Y5, O_OFF(DI)(R8*1)
	ADDQ       $16, BX
	ADDQ       $32, R8
	CMPQ       BX, $128
	JB         codes

	XORQ BX, BX
	XORQ R8, R8

group:
	VMOVDQU O_CODE(DI)(R8*1), Y6
	VMOVDQU O_NN(DI)(R8*1), Y4
	VMOVDQU O_OFF(DI)(R8*1), Y5
	VMOVUPS K_FMAX, Y7
	VPXOR   Y8, Y8, Y8

	// A lane with a list starts from its first neighbour (what it keeps
	// when no d2 is below math.MaxFloat32).
	GATHER(done)
	VBLENDVPS Y9, Y1, Y6, Y6
	STEP
	SECOND
	STEP

next:
	GATHER(done)
	STEP
	SECOND
	STEP
	JMP next

done:
	VMOVDQU Y6, O_CODE(DI)(R8*1)
	SUMS(0, VPSLLD, 1)
	SUMS(1, VPSRLD, 2)
	SUMS(2, VPSRLD, 5)
	SUMS(3, VPSRLD, 8)
	ADDQ    $16, BX
	ADDQ    $32, R8
	CMPQ    BX, $128
	JB      group

	VMOVUPS Y13, O_SUMQX(DI)
	VMOVUPS Y12, O_SUMQ2(DI)
	VZEROUPPER
	RET

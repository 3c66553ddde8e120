// Macros shared by the amd64 assembly (asm_amd64.s, kquants_q3_amd64.s).

// TRANSPOSE8X8 transposes the 8x8 matrix of 32-bit elements in Y0-Y7
// (row k in Yk) into Y8-Y15 (column k in Y(8+k)). Uses Y0-Y15.
#define TRANSPOSE8X8 \
	VUNPCKLPS  Y1, Y0, Y8         \
	VUNPCKHPS  Y1, Y0, Y9         \
	VUNPCKLPS  Y3, Y2, Y10        \
	VUNPCKHPS  Y3, Y2, Y11        \
	VUNPCKLPS  Y5, Y4, Y12        \
	VUNPCKHPS  Y5, Y4, Y13        \
	VUNPCKLPS  Y7, Y6, Y14        \
	VUNPCKHPS  Y7, Y6, Y15        \
	VSHUFPS    $0x44, Y10, Y8, Y0 \
	VSHUFPS    $0xee, Y10, Y8, Y1 \
	VSHUFPS    $0x44, Y11, Y9, Y2 \
	VSHUFPS    $0xee, Y11, Y9, Y3 \
	VSHUFPS    $0x44, Y14, Y12, Y4 \
	VSHUFPS    $0xee, Y14, Y12, Y5 \
	VSHUFPS    $0x44, Y15, Y13, Y6 \
	VSHUFPS    $0xee, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8  \
	VPERM2F128 $0x20, Y5, Y1, Y9  \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15

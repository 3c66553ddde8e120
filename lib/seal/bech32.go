package seal

import (
	"strings"
)

// Bech32 (BIP 173), as used by age for its key strings. Unlike BIP 173 no
// 90-character limit is applied (age does not apply it either), but input is
// capped at maxBech32Len to keep hostile input cheap.

const bech32Charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

const maxBech32Len = 1024

var bech32Rev = func() [128]int8 {
	var t [128]int8
	for i := range t {
		t[i] = -1
	}
	for i, c := range bech32Charset {
		t[c] = int8(i)
	}
	return t
}()

func bech32Polymod(values []byte) uint32 {
	gen := [5]uint32{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3}
	chk := uint32(1)
	for _, v := range values {
		top := chk >> 25
		chk = (chk&0x1ffffff)<<5 ^ uint32(v)
		for i := range 5 {
			if (top>>i)&1 == 1 {
				chk ^= gen[i]
			}
		}
	}
	return chk
}

func bech32HRPExpand(hrp string) []byte {
	out := make([]byte, 0, 2*len(hrp)+1)
	for i := 0; i < len(hrp); i++ {
		out = append(out, hrp[i]>>5)
	}
	out = append(out, 0)
	for i := 0; i < len(hrp); i++ {
		out = append(out, hrp[i]&31)
	}
	return out
}

// convertBits regroups bits; with pad=false it rejects leftover bits that
// are too many or not zero.
func convertBits(data []byte, from, to uint, pad bool) ([]byte, bool) {
	var acc uint32
	var bits uint
	maxv := uint32(1)<<to - 1
	out := make([]byte, 0, len(data)*int(from)/int(to)+1)
	for _, v := range data {
		if uint32(v)>>from != 0 {
			return nil, false
		}
		acc = acc<<from | uint32(v)
		bits += from
		for bits >= to {
			bits -= to
			out = append(out, byte(acc>>bits&maxv))
		}
	}
	if pad {
		if bits > 0 {
			out = append(out, byte(acc<<(to-bits)&maxv))
		}
	} else if bits >= from || acc<<(to-bits)&maxv != 0 {
		return nil, false
	}
	return out, true
}

// bech32Encode encodes data under hrp (lower case); upper selects the
// all-upper-case form (used for age secret keys).
func bech32Encode(hrp string, data []byte, upper bool) string {
	hrp = strings.ToLower(hrp)
	values, _ := convertBits(data, 8, 5, true)
	poly := bech32Polymod(append(append(bech32HRPExpand(hrp), values...), 0, 0, 0, 0, 0, 0)) ^ 1
	var b strings.Builder
	b.WriteString(hrp)
	b.WriteByte('1')
	for _, v := range values {
		b.WriteByte(bech32Charset[v])
	}
	for i := range 6 {
		b.WriteByte(bech32Charset[(poly>>(5*(5-i)))&31])
	}
	if upper {
		return strings.ToUpper(b.String())
	}
	return b.String()
}

// bech32Decode returns the lower-case HRP and the 8-bit data. Mixed-case
// strings, bad characters and bad checksums are errors wrapping ErrMalformed.
func bech32Decode(s string) (string, []byte, error) {
	if len(s) > maxBech32Len {
		return "", nil, malformed("bech32 string longer than %d characters", maxBech32Len)
	}
	lower, upper := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 33 || c > 126 {
			return "", nil, malformed("bech32 string contains an invalid character at position %d", i)
		}
		if c >= 'a' && c <= 'z' {
			lower = true
		}
		if c >= 'A' && c <= 'Z' {
			upper = true
		}
	}
	if lower && upper {
		return "", nil, malformed("bech32 string mixes upper and lower case")
	}
	s = strings.ToLower(s)
	pos := strings.LastIndexByte(s, '1')
	if pos < 1 || pos+7 > len(s) {
		return "", nil, malformed("bech32 string has no valid separator")
	}
	hrp := s[:pos]
	values := make([]byte, 0, len(s)-pos-1)
	for i := pos + 1; i < len(s); i++ {
		v := bech32Rev[s[i]]
		if v < 0 {
			return "", nil, malformed("bech32 string contains an invalid data character %q", s[i])
		}
		values = append(values, byte(v))
	}
	if bech32Polymod(append(bech32HRPExpand(hrp), values...)) != 1 {
		return "", nil, malformed("bech32 checksum mismatch")
	}
	data, ok := convertBits(values[:len(values)-6], 5, 8, false)
	if !ok {
		return "", nil, malformed("bech32 data has invalid padding")
	}
	return hrp, data, nil
}

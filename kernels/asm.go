//go:build (amd64 || arm64) && !purego && !noasm

package kernels

// asmBlocks drives a block kernel: run quantizes up to nb blocks and stops
// before a block with a NaN or infinity, which the reference quantizes
// here. The result is the largest |x| of src as float32 bits (NaN above
// infinity above any finite value), for QuantizeChecked.
func asmBlocks(run func(dst *byte, src *float32, nb int) (int, uint32), ref func([]byte, []float32), bs int) func([]byte, []float32) uint32 {
	return func(dst []byte, src []float32) uint32 {
		var m uint32
		for {
			nb := min(len(src)/qk, len(dst)/bs)
			if nb == 0 {
				return m
			}
			k, km := run(&dst[0], &src[0], nb)
			m = max(m, km)
			src, dst = src[k*qk:], dst[k*bs:]
			if k < nb {
				m = max(m, absMaxBits(src[:qk]))
				ref(dst[:bs], src[:qk])
				src, dst = src[qk:], dst[bs:]
			}
		}
	}
}

func dropMaxBits(f func([]byte, []float32) uint32) func([]byte, []float32) {
	return func(dst []byte, src []float32) { f(dst, src) }
}

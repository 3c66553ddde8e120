//go:build amd64 && !purego && !noasm

package kernels

import (
	"testing"
	"unsafe"
)

// TestAsmLayout checks the field offsets that the lane kernels use.
func TestAsmLayout(t *testing.T) {
	var k kx2Asm
	var q qxAsm
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"kx2Asm.num", unsafe.Offsetof(k.num), 1024}, {"kx2Asm.fmax", unsafe.Offsetof(k.fmax), 1280},
		{"kx2Asm.n", unsafe.Offsetof(k.n), 1284}, {"kx2Asm.nmax", unsafe.Offsetof(k.nmax), 1288},
		{"kx2Asm.nstep", unsafe.Offsetof(k.nstep), 1292}, {"kx2Asm.q2", unsafe.Offsetof(k.q2), 1296},
		{"kx2Asm.wgiven", unsafe.Offsetof(k.wgiven), 1300}, {"kx2Asm.sigma2", unsafe.Offsetof(k.sigma2), 1304},
		{"kx2Asm.scale", unsafe.Offsetof(k.scale), 1312}, {"kx2Asm.min", unsafe.Offsetof(k.min), 1344},
		{"kx2Asm.lt", unsafe.Offsetof(k.lt), 1376}, {"kx2Asm.w", unsafe.Offsetof(k.w), 2400},
		{"kx2Asm.fl", unsafe.Offsetof(k.fl), 3424}, {"kx2Asm.sw", unsafe.Offsetof(k.sw), 4448},
		{"qxAsm.w", unsafe.Offsetof(q.w), 1024}, {"qxAsm.wv", unsafe.Offsetof(q.wv), 2048},
		{"qxAsm.lt", unsafe.Offsetof(q.lt), 3072}, {"qxAsm.num", unsafe.Offsetof(q.num), 4096},
		{"qxAsm.scale", unsafe.Offsetof(q.scale), 4168}, {"qxAsm.n", unsafe.Offsetof(q.n), 4200},
		{"qxAsm.lo", unsafe.Offsetof(q.lo), 4204}, {"qxAsm.hi", unsafe.Offsetof(q.hi), 4208},
		{"qxAsm.fnum0", unsafe.Offsetof(q.fnum0), 4212}, {"qxAsm.nmax", unsafe.Offsetof(q.nmax), 4216},
		{"qxAsm.wgiven", unsafe.Offsetof(q.wgiven), 4220}, {"qxAsm.sigma2", unsafe.Offsetof(q.sigma2), 4224},
		{"qxAsm.sw", unsafe.Offsetof(q.sw), 4228},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, the assembly uses %d", c.name, c.got, c.want)
		}
	}
}

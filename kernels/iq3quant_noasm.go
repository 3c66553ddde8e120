//go:build !amd64 || purego || noasm

package kernels

// Without the assembly the IQ3 searches are the reference's (iq3Asm is
// false); this keeps iq3Tables.lanes compiling.

const iq3Asm = false

func iq3LanesAsm(b *iq3Lanes, nbr *uint32, list *uint16) {
	panic("kernels: no IQ3 lane assembly in this build")
}

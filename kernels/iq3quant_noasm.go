//go:build !amd64 || purego || noasm

package kernels

// Without the assembly the IQ3 searches are the reference's (fit calls
// search); searchLanes, which the tests compare with it, runs the lane
// kernel's Go model.

const iq3Asm = false

func (t *iq3Tables) lanes(b *iq3Lanes) { t.iq3LanesGeneric(b) }

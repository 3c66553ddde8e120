package aprender

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"sort"
)

// This file holds test-only writers of aprender's two layouts, built from the byte
// descriptions in testdata/aprender/README.md (no aprender code involved).

// apr0Tensor is one tensor for buildAPR0.
type apr0Tensor struct {
	name string
	code byte
	dims []uint64
	data []byte
}

// apr0Opts lets a test break one rule of the layout.
type apr0Opts struct {
	flags    uint16 // default: LAYOUT_ROW_MAJOR
	noSort   bool   // keep the given tensor order in the index
	version  [2]byte
	mutateIx func(ix []byte) []byte
}

func pad64(b []byte) []byte {
	for len(b)%64 != 0 {
		b = append(b, 0)
	}
	return b
}

// buildAPR0 writes an APR\0 file: 64-byte header, metadata JSON padded to 64, the
// index sorted by name padded to 64, each tensor's data padded to 64, CRC32 footer.
func buildAPR0(meta string, tensors []apr0Tensor, o apr0Opts) []byte {
	ts := append([]apr0Tensor(nil), tensors...)
	if !o.noSort {
		sort.Slice(ts, func(a, b int) bool { return ts[a].name < ts[b].name })
	}
	var ix, dat []byte
	for _, t := range ts {
		ix = binary.LittleEndian.AppendUint16(ix, uint16(len(t.name)))
		ix = append(ix, t.name...)
		ix = append(ix, t.code, byte(len(t.dims)))
		for _, d := range t.dims {
			ix = binary.LittleEndian.AppendUint64(ix, d)
		}
		ix = binary.LittleEndian.AppendUint64(ix, uint64(len(dat)))
		ix = binary.LittleEndian.AppendUint64(ix, uint64(len(t.data)))
		dat = pad64(append(dat, t.data...))
	}
	if o.mutateIx != nil {
		ix = o.mutateIx(ix)
	}
	metaPadded := pad64([]byte(meta))
	ixPadded := pad64(append([]byte(nil), ix...))
	flags := o.flags
	if flags == 0 {
		flags = apr0FlagRowMajor
	}
	ver := o.version
	if ver == [2]byte{} {
		ver = [2]byte{2, 0}
	}
	h := make([]byte, 64)
	copy(h, "APR\x00")
	h[4], h[5] = ver[0], ver[1]
	binary.LittleEndian.PutUint16(h[6:], flags)
	binary.LittleEndian.PutUint32(h[8:], uint32(len(ts)))
	binary.LittleEndian.PutUint64(h[12:], 64)
	binary.LittleEndian.PutUint32(h[20:], uint32(len(meta)))
	indexOff := uint64(64 + len(metaPadded))
	binary.LittleEndian.PutUint64(h[24:], indexOff)
	binary.LittleEndian.PutUint64(h[32:], indexOff+uint64(len(ixPadded)))
	setAPR0HeaderCRC(h)
	out := append(h, metaPadded...)
	out = append(out, ixPadded...)
	out = append(out, dat...)
	return appendCRC(out)
}

func setAPR0HeaderCRC(h []byte) {
	c := crc32.NewIEEE()
	c.Write(h[:40])
	c.Write(h[44:64])
	binary.LittleEndian.PutUint32(h[40:], c.Sum32())
}

func appendCRC(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// refooter recomputes the header CRC and the footer CRC of an APR\0 file after a
// test edited it, so that the structural checks are what catches the edit.
func refooter(b []byte) []byte {
	out := append([]byte(nil), b[:len(b)-4]...)
	setAPR0HeaderCRC(out[:64])
	return appendCRC(out)
}

// buildAPRN writes an APRN v1 file: 32-byte header, metadata, payload, optional
// signature block, CRC32 of everything before it.
func buildAPRN(typ uint16, meta, payload []byte, rawSize uint32, compression, flags byte, sig []byte) []byte {
	h := make([]byte, 32)
	copy(h, "APRN")
	h[4] = 1
	binary.LittleEndian.PutUint16(h[6:], typ)
	binary.LittleEndian.PutUint32(h[8:], uint32(len(meta)))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[16:], rawSize)
	h[20] = compression
	h[21] = flags
	out := append(h, meta...)
	out = append(out, payload...)
	out = append(out, sig...)
	return appendCRC(out)
}

func f32bytes(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// bincodeLinear is aprender's LinearRegression in bincode 1.x.
func bincodeLinear(coef []float32, intercept float32, fitIntercept bool) []byte {
	b := []byte{1}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(coef)))
	b = append(b, f32bytes(coef...)...)
	b = append(b, f32bytes(intercept)...)
	if fitIntercept {
		return append(b, 1)
	}
	return append(b, 0)
}

// bincodeLogistic is aprender's LogisticRegression in bincode 1.x (0.11 layout).
func bincodeLogistic(coef []float32, intercept, lr float32, maxIter uint64, tol float32) []byte {
	b := []byte{1}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(coef)))
	b = append(b, f32bytes(coef...)...)
	b = append(b, f32bytes(intercept, lr)...)
	b = binary.LittleEndian.AppendUint64(b, maxIter)
	return append(b, f32bytes(tol)...)
}

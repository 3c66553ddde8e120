package aprender

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strconv"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// APRN v1 header fields (32 bytes, little-endian).
const (
	aprnHeaderSize = 32
	aprnSigSize    = 64 + 32 // Ed25519 signature + public key, before the CRC

	aprnFlagEncrypted    = 1 << 0
	aprnFlagSigned       = 1 << 1
	aprnFlagStreaming    = 1 << 2
	aprnFlagLicensed     = 1 << 3
	aprnFlagTruenoNative = 1 << 4
	aprnFlagQuantized    = 1 << 5
	aprnFlagModelCard    = 1 << 6
)

func aprnErr(off int64, field, format string, args ...any) error {
	return &FormatError{Layout: LayoutAPRN, Offset: off, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func aprnShort(off int64, field string, need, have int) error {
	return &FormatError{Layout: LayoutAPRN, Offset: off, Field: field,
		Msg: fmt.Sprintf("needs %d bytes, file has %d", need, have), Err: ErrTruncated}
}

func readAPRN(data []byte) (*File, error) {
	if len(data) < 5 {
		return nil, aprnShort(0, "header", aprnHeaderSize, len(data))
	}
	if data[4] != 1 {
		if data[4] == 2 {
			return nil, &UnsupportedError{Layout: LayoutAPRN, Feature: "major version 2 at offset 4: this is apr's own APRN v2 format, not an aprender file (aprender supports version 1)"}
		}
		return nil, &UnsupportedError{Layout: LayoutAPRN, Feature: fmt.Sprintf("major version %d at offset 4, expected 1", data[4])}
	}
	if len(data) < aprnHeaderSize+4 {
		return nil, aprnShort(0, "header", aprnHeaderSize+4, len(data))
	}
	h := data[:aprnHeaderSize]
	minor := h[5]
	typ := modeltype.Type(binary.LittleEndian.Uint16(h[6:]))
	metaSize := uint64(binary.LittleEndian.Uint32(h[8:]))
	payloadSize := uint64(binary.LittleEndian.Uint32(h[12:]))
	rawSize := uint64(binary.LittleEndian.Uint32(h[16:]))
	compression := h[20]
	flags := h[21]

	// Sizes first: the file must be exactly header + metadata + payload
	// (+ signature) + CRC. All in uint64: no sum of u32s overflows.
	total := uint64(aprnHeaderSize) + metaSize + payloadSize + 4
	if flags&aprnFlagSigned != 0 {
		total += aprnSigSize
	}
	if total != uint64(len(data)) {
		f := &FormatError{Layout: LayoutAPRN, Offset: 8, Field: "header.metadata_size+payload_size",
			Msg: fmt.Sprintf("metadata %d + payload %d bytes make a %d-byte file, the file has %d bytes", metaSize, payloadSize, total, len(data))}
		if total > uint64(len(data)) {
			f.Err = ErrTruncated
		}
		return nil, f
	}
	crcAt := len(data) - 4
	want := binary.LittleEndian.Uint32(data[crcAt:])
	if got := crc32.ChecksumIEEE(data[:crcAt]); got != want {
		return nil, &ChecksumError{Layout: LayoutAPRN, Offset: int64(crcAt), What: "CRC32 of all preceding bytes", Expected: want, Actual: got}
	}

	// The CRC holds; now the header's meaning.
	if !typ.Known() {
		return nil, aprnErr(6, "header.model_type", "unknown model type 0x%04X", uint16(typ))
	}
	if flags&aprnFlagEncrypted != 0 {
		return nil, &UnsupportedError{Layout: LayoutAPRN, Feature: "encrypted file (flags bit 0 at offset 21); unseal it with aprender first"}
	}
	if flags&aprnFlagLicensed != 0 {
		return nil, &UnsupportedError{Layout: LayoutAPRN, Feature: "licensed file (flags bit 3 at offset 21): its license block layout is not supported"}
	}
	if flags&aprnFlagQuantized != 0 {
		return nil, &UnsupportedError{Layout: LayoutAPRN, Feature: "quantized payload (flags bit 5 at offset 21)"}
	}
	if flags&0x80 != 0 {
		return nil, aprnErr(21, "header.flags", "unknown flag bit 7 set (0x%02x); known bits are 0-6", flags)
	}
	_ = aprnFlagStreaming | aprnFlagTruenoNative | aprnFlagModelCard // accepted: no effect on the bytes read here

	metaOff := int64(aprnHeaderSize)
	meta, err := decodeMsgpackMap(data[metaOff:metaOff+int64(metaSize)], metaOff)
	if err != nil {
		return nil, err
	}
	payOff := metaOff + int64(metaSize)
	payload := data[payOff : payOff+int64(payloadSize)]
	raw, err := decompressAPRN(payload, payOff, compression, rawSize)
	if err != nil {
		return nil, err
	}
	f := &File{
		Layout:    LayoutAPRN,
		Version:   fmt.Sprintf("1.%d", minor),
		ModelType: typ,
		Metadata:  meta,
		Flags:     uint16(flags),
		Signed:    flags&aprnFlagSigned != 0,
	}
	// Offsets inside a compressed payload are reported relative to the decompressed
	// bytes; for a plain payload they are file offsets.
	base := payOff
	if compression != 0 {
		base = 0
	}
	b := &fields{b: raw, base: base, layout: LayoutAPRN, prefix: "payload.", left: "in the payload"}
	if compression != 0 {
		b.suffix = " (offset within the decompressed payload)"
	}
	switch typ {
	case modeltype.LogisticRegression:
		err = decodeLogisticPayload(b, f)
	case modeltype.LinearRegression:
		err = decodeLinearPayload(b, f)
	default:
		// Carried, not interpreted: the bincode payload as one opaque tensor.
		f.Tensors = []tensor.Tensor{{Name: "payload", DType: dtype.U8, Shape: []int64{int64(len(raw))}, Data: raw}}
		f.Config = map[string]any{"aprender_payload": "bincode"}
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

func decompressAPRN(payload []byte, off int64, compression byte, rawSize uint64) ([]byte, error) {
	switch compression {
	case 0:
		if rawSize != uint64(len(payload)) {
			return nil, aprnErr(16, "header.uncompressed_size", "%d, expected the payload size %d for an uncompressed payload", rawSize, len(payload))
		}
		return payload, nil
	case 1, 2, 3:
	default:
		return nil, aprnErr(20, "header.compression", "unknown compression %d, expected 0 (none), 1-2 (zstd) or 3 (LZ4)", compression)
	}
	if rawSize > MaxUncompressed {
		return nil, aprnErr(16, "header.uncompressed_size", "%d bytes, more than the cap of %d", rawSize, MaxUncompressed)
	}
	if compression == 3 {
		if len(payload) < 4 {
			return nil, &FormatError{Layout: LayoutAPRN, Offset: off, Field: "payload.lz4_size", Msg: "LZ4 payload shorter than its 4-byte size prefix", Err: ErrTruncated}
		}
		prefix := uint64(binary.LittleEndian.Uint32(payload))
		if prefix != rawSize {
			return nil, aprnErr(off, "payload.lz4_size", "%d, expected the header's uncompressed size %d", prefix, rawSize)
		}
		block := payload[4:]
		// An LZ4 block expands at most 255:1; a larger claim cannot be honest, and
		// checking it first bounds the allocation by the bytes present.
		if rawSize > 255*uint64(len(block))+16 {
			return nil, aprnErr(16, "header.uncompressed_size", "%d bytes cannot come from a %d-byte LZ4 block", rawSize, len(block))
		}
		out := make([]byte, rawSize)
		n, err := lz4.UncompressBlock(block, out)
		if err != nil {
			return nil, aprnErr(off+4, "payload", "LZ4 block: %v", err)
		}
		if uint64(n) != rawSize {
			return nil, aprnErr(off+4, "payload", "LZ4 block decoded to %d bytes, expected %d", n, rawSize)
		}
		return out, nil
	}
	// zstd's densest encoding (an RLE block: 4 bytes for 128 KiB) bounds the ratio
	// at 32768:1; a larger claim cannot be honest.
	if rawSize > 32768*uint64(len(payload))+1<<17 {
		return nil, aprnErr(16, "header.uncompressed_size", "%d bytes cannot come from a %d-byte zstd payload", rawSize, len(payload))
	}
	zr, err := zstd.NewReader(bytes.NewReader(payload), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(max(rawSize, 1<<10)), zstd.WithDecoderMaxWindow(max(rawSize, 1<<10)))
	if err != nil {
		return nil, aprnErr(off, "payload", "zstd: %v", err)
	}
	defer zr.Close()
	// Read through a limit one past the claim: memory grows with the real output,
	// never with the claim alone.
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(zr, int64(rawSize)+1))
	if err != nil {
		return nil, aprnErr(off, "payload", "zstd: %v", err)
	}
	if uint64(n) != rawSize {
		return nil, aprnErr(off, "payload", "zstd payload decoded to %d bytes or more, expected the header's uncompressed size %d", n, rawSize)
	}
	return buf.Bytes(), nil
}

// The payload is bincode 1.x's default encoding: little-endian fixed-width integers,
// u64 lengths, Option as a 0/1 tag byte, bool as one 0/1 byte, enum variants as u32.

func (r *fields) f32(field string) (float32, error) {
	u, err := r.u32(field)
	return math.Float32frombits(u), err
}

func (r *fields) boolean(field string) (bool, error) {
	return r.zeroOne(field, "bool byte %d, expected 0 or 1")
}

// zeroOne reads a byte that must be 0 or 1 (a bool, an Option's tag); bad names the
// byte in an error.
func (r *fields) zeroOne(field, bad string) (bool, error) {
	at := r.pos
	v, err := r.u8(field)
	if err != nil {
		return false, err
	}
	if v > 1 {
		r.pos = at
		return false, r.err(field, bad, v)
	}
	return v == 1, nil
}

// f32Vec reads a Vec<f32> (u64 length then the values), returning the raw bytes.
func (r *fields) f32Vec(field string) ([]byte, int64, error) {
	at := r.pos
	n, err := r.u64(field + ".len")
	if err != nil {
		return nil, 0, err
	}
	if n > uint64(len(r.b)-r.pos)/4 {
		left := len(r.b) - r.pos
		r.pos = at
		msg := fmt.Sprintf("%d f32 values overflow", n)
		if n <= math.MaxUint64/4 {
			msg = fmt.Sprintf("%d f32 values need %d bytes, %d left in the payload", n, n*4, left)
		}
		e := r.err(field+".len", "%s", msg).(*FormatError)
		e.Err = ErrTruncated
		return nil, 0, e
	}
	s, err := r.take(field, n*4)
	if err != nil {
		return nil, 0, err
	}
	return s, int64(n), nil
}

// optionTag reads an Option's tag byte.
func (r *fields) optionTag(field string) (bool, error) {
	return r.zeroOne(field, "Option tag %d, expected 0 (None) or 1 (Some)")
}

func (r *fields) end() error {
	if r.pos != len(r.b) {
		return r.err("end", "%d bytes after the last field, expected none", len(r.b)-r.pos)
	}
	return nil
}

// shortFloat renders an f32 hyperparameter as the float64 closest to its shortest
// decimal form (0.01f32 becomes 0.01, not 0.009999999776).
func shortFloat(f float32) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	if err != nil {
		return float64(f)
	}
	return v
}

func (r *fields) coefficients() ([]byte, int64, error) {
	some, err := r.optionTag("coefficients")
	if err != nil {
		return nil, 0, err
	}
	if !some {
		return nil, 0, r.err("coefficients", "None: the model was saved unfitted and has no coefficients")
	}
	return r.f32Vec("coefficients")
}

// coefficientsIntercept reads the two fields every linear model of aprender starts
// with: coefficients Option<Vector<f32>> and intercept f32.
func (r *fields) coefficientsIntercept() (coef []byte, n int64, icpt float32, err error) {
	if coef, n, err = r.coefficients(); err != nil {
		return nil, 0, 0, err
	}
	if icpt, err = r.f32("intercept"); err != nil {
		return nil, 0, 0, err
	}
	return coef, n, icpt, nil
}

func coefTensors(coef []byte, n int64, intercept float32) []tensor.Tensor {
	ib := make([]byte, 4)
	binary.LittleEndian.PutUint32(ib, math.Float32bits(intercept))
	return []tensor.Tensor{
		{Name: "coefficients", DType: dtype.F32, Shape: []int64{n}, Data: coef},
		{Name: "intercept", DType: dtype.F32, Shape: []int64{1}, Data: ib},
	}
}

// decodeLogisticPayload reads aprender's LogisticRegression: coefficients
// Option<Vector<f32>>, intercept f32, learning_rate f32, max_iter usize (u64), tol
// f32; newer aprender versions append class_weight (enum ClassWeight { Uniform,
// Balanced, Manual(Vec<f32>) }) and l2_penalty f32.
func decodeLogisticPayload(r *fields, f *File) error {
	coef, n, icpt, err := r.coefficientsIntercept()
	if err != nil {
		return err
	}
	lr, err := r.f32("learning_rate")
	if err != nil {
		return err
	}
	at := r.pos
	maxIter, err := r.u64("max_iter")
	if err != nil {
		return err
	}
	if maxIter > math.MaxInt32 {
		r.pos = at
		return r.err("max_iter", "%d, expected at most %d", maxIter, math.MaxInt32)
	}
	tol, err := r.f32("tol")
	if err != nil {
		return err
	}
	cfg := map[string]any{
		"learning_rate": shortFloat(lr),
		"max_iter":      int64(maxIter),
		"tol":           shortFloat(tol),
		"n_features":    n,
	}
	if r.pos < len(r.b) { // the newer layout
		at := r.pos
		variant, err := r.u32("class_weight")
		if err != nil {
			return err
		}
		switch variant {
		case 0:
			cfg["class_weight"] = "uniform"
		case 1:
			cfg["class_weight"] = "balanced"
		case 2:
			w, k, err := r.f32Vec("class_weight.manual")
			if err != nil {
				return err
			}
			ws := make([]any, k)
			for i := range ws {
				ws[i] = shortFloat(math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])))
			}
			cfg["class_weight"] = ws
		default:
			r.pos = at
			return r.err("class_weight", "enum variant %d, expected 0 (Uniform), 1 (Balanced) or 2 (Manual)", variant)
		}
		l2, err := r.f32("l2_penalty")
		if err != nil {
			return err
		}
		cfg["l2_penalty"] = shortFloat(l2)
	}
	if err := r.end(); err != nil {
		return err
	}
	for k, v := range cfg {
		if x, ok := v.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return r.err(k, "%v, expected a finite number", x)
		}
	}
	f.Config = cfg
	f.Tensors = coefTensors(coef, n, icpt)
	return nil
}

// decodeLinearPayload reads aprender's LinearRegression: coefficients
// Option<Vector<f32>>, intercept f32, fit_intercept bool.
func decodeLinearPayload(r *fields, f *File) error {
	coef, n, icpt, err := r.coefficientsIntercept()
	if err != nil {
		return err
	}
	fi, err := r.boolean("fit_intercept")
	if err != nil {
		return err
	}
	if err := r.end(); err != nil {
		return err
	}
	f.Config = map[string]any{"fit_intercept": fi, "n_features": n}
	f.Tensors = coefTensors(coef, n, icpt)
	return nil
}

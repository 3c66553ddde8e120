package aprender

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

var update = flag.Bool("update", false, "rewrite golden files") // testdata/aprender/apr0_worked_example.apr

var testdata = filepath.Join("..", "..", "testdata", "aprender")

func readMNIST(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, "mnist_784x2.apr"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 3248 {
		t.Fatalf("mnist_784x2.apr: %d bytes, README says 3248", len(b))
	}
	return b
}

func TestMNIST(t *testing.T) {
	data := readMNIST(t)
	if l, ok := Detect(data[:5]); !ok || l != LayoutAPRN {
		t.Fatalf("Detect: %q %v", l, ok)
	}
	f, err := Read(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Layout != LayoutAPRN || f.Version != "1.0" || f.ModelType != modeltype.LogisticRegression || f.Signed || f.Flags != 0 {
		t.Errorf("header: %+v", f)
	}
	if got := binary.LittleEndian.Uint32(data[len(data)-4:]); got != 0xF38814FE {
		t.Errorf("stored CRC 0x%08X, README says 0xF38814FE", got)
	}
	if f.Metadata["created_at"] != "1764278947" || f.Metadata["aprender_version"] != "0.11.0" || len(f.Metadata) != 2 {
		t.Errorf("metadata %v", f.Metadata)
	}
	if len(f.Tensors) != 2 {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	coef, err := f.Tensors[0].Float32s()
	if err != nil || f.Tensors[0].Name != "coefficients" || len(coef) != 784 || f.Tensors[0].Shape[0] != 784 {
		t.Fatalf("coefficients: %v %v %v", f.Tensors[0].Name, f.Tensors[0].Shape, err)
	}
	var sum float64
	for _, c := range coef {
		sum += float64(c)
	}
	if math.Abs(sum-4.3759893) > 5e-7 {
		t.Errorf("sum of coefficients %.9f, README says 4.3759893", sum)
	}
	if coef[0] != float32(0.0025542672) {
		t.Errorf("first coefficient %v, README says 0.0025542672", coef[0])
	}
	icpt, err := f.Tensors[1].Float32s()
	if err != nil || f.Tensors[1].Name != "intercept" || len(icpt) != 1 || icpt[0] != float32(0.011170970) {
		t.Errorf("intercept %v %v", icpt, err)
	}
	if f.Config["learning_rate"] != 0.01 || f.Config["max_iter"] != int64(100) || f.Config["tol"] != 1e-4 {
		t.Errorf("config %v", f.Config)
	}

	m, err := decodeModel(f)
	if err != nil {
		t.Fatal(err)
	}
	lr := m.(*model.LogisticRegressionModel)
	if lr.LearningRate != 0.01 || lr.MaxIter != 100 || lr.Tol != 1e-4 || len(lr.Coefficients) != 784 {
		t.Errorf("decoded model %+v", lr)
	}
	// A blank image scores σ(intercept); an image of ones σ(intercept + Σw).
	x, _ := model.NewMatrix(2, 784, append(make([]float64, 784), ones(784)...))
	p, err := lr.PredictProba(x)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p[0]-model.Sigmoid(float64(icpt[0]))) > 1e-12 || math.Abs(p[1]-model.Sigmoid(float64(icpt[0])+sum)) > 1e-9 {
		t.Errorf("probabilities %v", p)
	}
}

func ones(n int) []float64 {
	o := make([]float64, n)
	for i := range o {
		o[i] = 1
	}
	return o
}

// Every prefix of the file is an error, never a panic and never a model.
func TestMNISTTruncations(t *testing.T) {
	data := readMNIST(t)
	for n := 0; n < len(data); n++ {
		if f, err := Read(data[:n]); err == nil {
			t.Fatalf("prefix of %d bytes read as %+v", n, f)
		}
	}
	_, err := Read(data[:len(data)-1])
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "3247") {
		t.Errorf("truncated by one byte: %v", err)
	}
}

// Every single-bit flip of the file is detected.
func TestMNISTBitFlips(t *testing.T) {
	data := readMNIST(t)
	buf := make([]byte, len(data))
	for i := range data {
		for bit := 0; bit < 8; bit++ {
			copy(buf, data)
			buf[i] ^= 1 << bit
			if _, err := Read(buf); err == nil {
				t.Fatalf("flip of bit %d of byte %d not detected", bit, i)
			}
		}
	}
	// A flip in the payload is a checksum mismatch carrying both values.
	copy(buf, data)
	buf[100] ^= 0x10
	var ce *ChecksumError
	if _, err := Read(buf); !errors.As(err, &ce) || ce.Expected != 0xF38814FE || ce.Actual == ce.Expected || ce.Offset != 3244 {
		t.Errorf("payload flip: %v", err)
	}
}

func TestMNISTAppended(t *testing.T) {
	data := readMNIST(t)
	for _, extra := range [][]byte{{0}, []byte("trailing garbage")} {
		_, err := Read(append(append([]byte(nil), data...), extra...))
		if err == nil || !strings.Contains(err.Error(), "payload_size") {
			t.Errorf("%d appended bytes: %v", len(extra), err)
		}
	}
}

// mnistParts splits the real file into its metadata and payload.
func mnistParts(t *testing.T) (meta, payload []byte) {
	data := readMNIST(t)
	return data[32 : 32+47], data[32+47 : len(data)-4]
}

func TestAPRNCompressed(t *testing.T) {
	meta, payload := mnistParts(t)
	want, err := Read(readMNIST(t))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		t.Fatal(err)
	}
	zs := enc.EncodeAll(payload, nil)
	enc.Close()
	lzb := make([]byte, lz4.CompressBlockBound(len(payload)))
	var c lz4.Compressor
	n, err := c.CompressBlock(payload, lzb)
	if err != nil || n == 0 {
		t.Fatalf("lz4: %d %v", n, err)
	}
	lzPayload := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	lzPayload = append(lzPayload, lzb[:n]...)
	for _, c := range []struct {
		name string
		code byte
		body []byte
	}{{"zstd level 3", 1, zs}, {"zstd level 19", 2, zs}, {"lz4", 3, lzPayload}} {
		file := buildAPRN(2, meta, c.body, uint32(len(payload)), c.code, 0, nil)
		got, err := Read(file)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !bytes.Equal(got.Tensors[0].Data, want.Tensors[0].Data) || !bytes.Equal(got.Tensors[1].Data, want.Tensors[1].Data) {
			t.Errorf("%s: tensors differ from the uncompressed file", c.name)
		}
		// A wrong uncompressed size is refused, whatever the codec.
		for _, claim := range []uint32{uint32(len(payload)) - 1, uint32(len(payload)) + 1, 1 << 31} {
			bad := buildAPRN(2, meta, c.body, claim, c.code, 0, nil)
			if _, err := Read(bad); err == nil {
				t.Errorf("%s: uncompressed size %d accepted", c.name, claim)
			}
		}
		// Every truncation of the compressed file fails.
		for k := 0; k < len(file); k++ {
			if _, err := Read(file[:k]); err == nil {
				t.Fatalf("%s: prefix %d accepted", c.name, k)
			}
		}
	}
	// Garbage that passes the CRC but not the codec.
	junk := bytes.Repeat([]byte{0xAB}, 40)
	for code := byte(1); code <= 3; code++ {
		body := junk
		if code == 3 {
			body = append(binary.LittleEndian.AppendUint32(nil, 100), junk...)
		}
		if _, err := Read(buildAPRN(2, meta, body, 100, code, 0, nil)); err == nil || !strings.Contains(err.Error(), "payload") {
			t.Errorf("compression %d: junk accepted: %v", code, err)
		}
	}
	// A claim beyond what the payload could expand to is refused before decoding.
	if _, err := Read(buildAPRN(2, meta, zs, 1<<29, 1, 0, nil)); err == nil || !strings.Contains(err.Error(), "cannot come from") {
		t.Errorf("zstd claim of 512 MiB from %d bytes: %v", len(zs), err)
	}
	if _, err := Read(buildAPRN(2, meta, lzPayload, 1<<29, 3, 0, nil)); err == nil || !strings.Contains(err.Error(), "lz4_size") {
		t.Errorf("lz4 claim of 512 MiB: %v", err)
	}
	if _, err := Read(buildAPRN(2, meta, payload, uint32(len(payload)), 9, 0, nil)); err == nil || !strings.Contains(err.Error(), "compression 9") {
		t.Errorf("compression 9: %v", err)
	}
}

func TestAPRNLinearRegression(t *testing.T) {
	meta := []byte("\x81\xa4name\xa3lin")
	payload := bincodeLinear([]float32{1.5, -2, 0.25}, 3, true)
	f, err := Read(buildAPRN(1, meta, payload, uint32(len(payload)), 0, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	if f.ModelType != modeltype.LinearRegression || f.Metadata["name"] != "lin" || f.Config["fit_intercept"] != true {
		t.Errorf("%+v", f)
	}
	m, err := decodeModel(f)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := model.NewMatrix(1, 3, []float64{2, 1, 4})
	p, err := m.(*model.LinearRegressionModel).Predict(x)
	if err != nil || p[0] != 1.5*2-2+1+3 {
		t.Errorf("predict %v %v", p, err)
	}
	bad := append(bincodeLinear([]float32{1}, 0, true)[:17], 2) // fit_intercept byte 2
	if _, err := Read(buildAPRN(1, meta, bad, uint32(len(bad)), 0, 0, nil)); err == nil || !strings.Contains(err.Error(), "fit_intercept") {
		t.Errorf("bool 2: %v", err)
	}
}

func TestAPRNPayloadErrors(t *testing.T) {
	meta := []byte{0x80}
	good := bincodeLogistic([]float32{1, 2}, 0.5, 0.01, 10, 1e-4)
	huge := append([]byte{1}, binary.LittleEndian.AppendUint64(nil, 1<<61)...)
	overflow := append([]byte{1}, binary.LittleEndian.AppendUint64(nil, math.MaxUint64)...)
	newer := append(append([]byte(nil), good...), 2, 0, 0, 0) // ClassWeight::Manual
	newer = binary.LittleEndian.AppendUint64(newer, 2)
	newer = append(newer, f32bytes(1, 3, 0.001)...)
	cases := []struct {
		name    string
		typ     uint16
		payload []byte
		flags   byte
		want    string
	}{
		{"None coefficients", 2, []byte{0}, 0, "unfitted"},
		{"option tag 7", 2, []byte{7}, 0, "Option tag 7"},
		{"claimed 2^61 coefficients", 2, huge, 0, "need 9223372036854775808 bytes"},
		{"claimed 2^64-1 coefficients", 2, overflow, 0, "overflow"},
		{"missing tol", 2, good[:len(good)-4], 0, "payload.tol"},
		{"trailing bytes", 2, append(append([]byte(nil), good...), 0, 0, 0, 0, 1, 2, 3, 4, 5), 0, "after the last field"},
		{"class_weight variant 9", 2, append(append([]byte(nil), good...), 9, 0, 0, 0, 0, 0, 0, 0), 0, "variant 9"},
		{"max_iter 2^40", 2, func() []byte { b := append([]byte(nil), good...); b[len(b)-8] = 0; b[len(b)-6] = 1; return b }(), 0, "max_iter"},
		{"unknown model type", 0x77, good, 0, "unknown model type 0x0077"},
		{"encrypted", 2, good, aprnFlagEncrypted, "encrypted"},
		{"licensed", 2, good, aprnFlagLicensed, "licensed"},
		{"quantized", 2, good, aprnFlagQuantized, "quantized"},
		{"flag bit 7", 2, good, 0x80, "bit 7"},
	}
	for _, c := range cases {
		_, err := Read(buildAPRN(c.typ, meta, c.payload, uint32(len(c.payload)), 0, c.flags, nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	f, err := Read(buildAPRN(2, meta, newer, uint32(len(newer)), 0, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	if cw, ok := f.Config["class_weight"].([]any); !ok || len(cw) != 2 || cw[1] != 3.0 || f.Config["l2_penalty"] != 0.001 {
		t.Errorf("newer layout config %v", f.Config)
	}
	if _, err := decodeModel(f); err != nil {
		t.Errorf("newer layout does not decode: %v", err)
	}
	// A type without an implementation is carried as its opaque payload.
	f, err = Read(buildAPRN(uint16(modeltype.KMeans), meta, []byte{1, 2, 3}, 3, 0, 0, nil))
	if err != nil || f.ModelType != modeltype.KMeans || len(f.Tensors) != 1 || f.Tensors[0].DType != dtype.U8 || !bytes.Equal(f.Tensors[0].Data, []byte{1, 2, 3}) {
		t.Errorf("KMeans: %+v %v", f, err)
	}
	// Signed: 96 bytes of signature and key before the CRC.
	sig := bytes.Repeat([]byte{0x5A}, 96)
	f, err = Read(buildAPRN(2, meta, good, uint32(len(good)), 0, aprnFlagSigned, sig))
	if err != nil || !f.Signed {
		t.Errorf("signed: %+v %v", f, err)
	}
	if _, err := Read(buildAPRN(2, meta, good, uint32(len(good)), 0, aprnFlagSigned, nil)); err == nil {
		t.Error("signed flag without a signature block accepted")
	}
}

func TestAPRNVersionsAndMetadata(t *testing.T) {
	data := readMNIST(t)
	v2 := append([]byte(nil), data...)
	v2[4] = 2
	var ue *UnsupportedError
	if _, err := Read(v2); !errors.As(err, &ue) || !strings.Contains(err.Error(), "apr's own") {
		t.Errorf("major 2: %v", err)
	}
	if _, ok := Detect(v2); ok {
		t.Error("Detect claims APRN v2 (apr's own format) as aprender")
	}
	v3 := append([]byte(nil), data...)
	v3[4] = 3
	if _, err := Read(v3); !errors.As(err, &ue) {
		t.Errorf("major 3: %v", err)
	}
	good := bincodeLogistic([]float32{1}, 0, 0.01, 10, 1e-4)
	for _, c := range []struct {
		meta []byte
		want string
	}{
		{[]byte{0x91, 0x01}, "expected a MessagePack map"},
		{[]byte{0x81, 0x01, 0x02}, "map key is int64"},
		{[]byte{0x82, 0xa1, 'a', 1, 0xa1, 'a', 2}, "duplicate map key"},
		{[]byte{0x80, 0x00}, "after the metadata map"},
		{[]byte{0xdf, 0xff, 0xff, 0xff, 0xff}, "map of 4294967295 entries"},
		{[]byte{0x81, 0xa1, 'a', 0xdd, 0x7f, 0xff, 0xff, 0xff}, "array of 2147483647 elements"},
		{[]byte{0x81, 0xa1, 'a', 0xa2, 0xff, 0xfe}, "UTF-8"},
		{[]byte{0x81, 0xa1, 'a', 0xd4, 0x00, 0x00}, "extension"},
		{append(bytes.Repeat([]byte{0x91}, 100), 0x01), "nesting"},
	} {
		_, err := Read(buildAPRN(2, c.meta, good, uint32(len(good)), 0, 0, nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("metadata % x: %v, want %q", c.meta, err, c.want)
		}
	}
	// Every MessagePack scalar type decodes.
	meta := []byte{0x8b,
		0xa1, 'a', 0xc0,
		0xa1, 'b', 0xc3,
		0xa1, 'c', 0xd0, 0xff,
		0xa1, 'd', 0xcd, 0x01, 0x00,
		0xa1, 'e', 0xca, 0x3f, 0x80, 0x00, 0x00,
		0xa1, 'f', 0xcb, 0x40, 0x00, 0, 0, 0, 0, 0, 0,
		0xa1, 'g', 0xc4, 0x02, 9, 8,
		0xa1, 'h', 0x92, 0xe0, 0x7f,
		0xa1, 'i', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xa1, 'j', 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0,
		0xa1, 'k', 0xd9, 0x01, 'z',
	}
	f, err := Read(buildAPRN(2, meta, good, uint32(len(good)), 0, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	m := f.Metadata
	if m["a"] != nil || m["b"] != true || m["c"] != int64(-1) || m["d"] != int64(256) || m["e"] != 1.0 || m["f"] != 2.0 ||
		!bytes.Equal(m["g"].([]byte), []byte{9, 8}) || m["h"].([]any)[0] != int64(-32) || m["h"].([]any)[1] != int64(127) ||
		m["i"] != uint64(math.MaxUint64) || m["j"] != int64(math.MinInt64) || m["k"] != "z" {
		t.Errorf("metadata %#v", m)
	}
}

func TestDetectAndRead(t *testing.T) {
	for _, c := range []struct {
		in     string
		layout string
	}{
		{"APRN\x01", LayoutAPRN}, {"APR\x00\x02", LayoutAPR0},
		{"APRN\x02", ""}, {"APR\x00\x01", ""}, {"APRN", ""}, {"", ""}, {"GGUF\x03", ""}, {"\x93NUMPY", ""},
	} {
		l, ok := Detect([]byte(c.in))
		if l != c.layout || ok != (c.layout != "") {
			t.Errorf("Detect(%q) = %q %v", c.in, l, ok)
		}
	}
	for _, in := range []string{"", "AP", "GGUF\x03\x00\x00\x00", "PK\x03\x04"} {
		if _, err := Read([]byte(in)); !errors.Is(err, ErrNotAprender) {
			t.Errorf("Read(%q): %v", in, err)
		}
	}
}

// workedExample builds the README's example: 189 bytes of metadata JSON, F32 tensors
// "bias" [1] and "weights" [8], an index of 67 bytes: 516 bytes in all.
func workedExample() []byte {
	meta := `{"model_type":"linear","name":"worked-example","description":"","author":"apr","license":"MIT","created_at":"2026-01-01T00:00:00Z","param_count":9,"architecture":"linear"}`
	meta = strings.Replace(meta, `"description":""`, `"description":"`+strings.Repeat("x", 189-len(meta))+`"`, 1)
	return buildAPR0(meta, []apr0Tensor{
		{"weights", apr0F32, []uint64{8}, f32bytes(1, 2, 3, 4, 5, 6, 7, 8)},
		{"bias", apr0F32, []uint64{1}, f32bytes(0.5)},
	}, apr0Opts{})
}

func TestAPR0WorkedExample(t *testing.T) {
	data := workedExample()
	if binary.LittleEndian.Uint32(data[20:]) != 189 {
		t.Fatalf("metadata size %d, want 189", binary.LittleEndian.Uint32(data[20:]))
	}
	if len(data) != 516 { // 64 + 192 + 128 + 128 + 4
		t.Fatalf("%d bytes, README says 516", len(data))
	}
	if dataOff := binary.LittleEndian.Uint64(data[32:]); dataOff-binary.LittleEndian.Uint64(data[24:]) != 128 {
		t.Fatalf("index block of %d bytes, want 128 (67 padded)", dataOff-binary.LittleEndian.Uint64(data[24:]))
	}
	golden := filepath.Join(testdata, "apr0_worked_example.apr")
	if *update {
		if err := os.WriteFile(golden, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("builder output differs from %s (run with -update)", golden)
	}
	f, err := Read(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Layout != LayoutAPR0 || f.Version != "2.0" || f.ModelType != modeltype.Custom || f.Metadata["param_count"] != int64(9) || f.Metadata["name"] != "worked-example" {
		t.Errorf("%+v", f)
	}
	if len(f.Tensors) != 2 || f.Tensors[0].Name != "bias" || f.Tensors[1].Name != "weights" {
		t.Fatalf("tensors %+v", f.Tensors)
	}
	w, err := f.Tensors[1].Float32s()
	if err != nil || len(w) != 8 || w[7] != 8 || f.Tensors[1].Shape[0] != 8 {
		t.Errorf("weights %v %v", w, err)
	}
	b, _ := f.Tensors[0].Float32s()
	if len(b) != 1 || b[0] != 0.5 {
		t.Errorf("bias %v", b)
	}
	for n := 0; n < len(data); n++ {
		if _, err := Read(data[:n]); err == nil {
			t.Fatalf("prefix of %d bytes accepted", n)
		}
	}
	buf := make([]byte, len(data))
	for i := range data {
		for bit := 0; bit < 8; bit++ {
			copy(buf, data)
			buf[i] ^= 1 << bit
			if _, err := Read(buf); err == nil {
				t.Fatalf("flip of bit %d of byte %d not detected", bit, i)
			}
		}
	}
	if _, err := Read(append(append([]byte(nil), data...), 0)); err == nil {
		t.Error("appended byte accepted")
	}
}

func TestAPR0Model(t *testing.T) {
	data := buildAPR0(`{"model_type":"LinearRegression","model_config":{"fit_intercept":true,"n_features":2}}`, []apr0Tensor{
		{"coefficients", apr0F32, []uint64{2}, f32bytes(2, -1)},
		{"intercept", apr0F32, []uint64{1}, f32bytes(0.5)},
	}, apr0Opts{})
	f, err := Read(data)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeModel(f)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := model.NewMatrix(1, 2, []float64{3, 4})
	if p, err := m.(*model.LinearRegressionModel).Predict(x); err != nil || p[0] != 2.5 {
		t.Errorf("predict %v %v", p, err)
	}
}

func TestAPR0DTypes(t *testing.T) {
	// aprender's own 4-bit blocks: 40 values -> 2 blocks (the second partial).
	vals := make([]float32, 40)
	var q4 []byte
	for blk := 0; blk < 2; blk++ {
		q4 = append(q4, 0x00, 0x3c) // f16 1.0
		if blk == 1 {
			q4[len(q4)-1] = 0x40 // f16 2.0
		}
		for k := 0; k < 16; k++ {
			lo, hi := byte(k%16), byte(15-k%16)
			q4 = append(q4, lo|hi<<4)
			scale := float32(1 + blk)
			for e, nib := range []byte{lo, hi} {
				if i := blk*32 + 2*k + e; i < 40 {
					vals[i] = float32(int(nib)-8) * scale
				}
			}
		}
	}
	q8 := append(f32bytes(0.5), 0x80, 0x7f, 0x00, 0xff)
	f16 := []byte{0x00, 0x3c, 0x00, 0xc0} // 1, -2
	tensors := []apr0Tensor{
		{"f32", apr0F32, []uint64{2}, f32bytes(1, 2)},
		{"f16", apr0F16, []uint64{2}, f16},
		{"bf16", apr0BF16, []uint64{2}, []byte{0x80, 0x3f, 0, 0x40}},
		{"bf16old", apr0BF16Old, []uint64{1}, []byte{0x80, 0x3f}},
		{"f64", apr0F64, []uint64{1}, binary.LittleEndian.AppendUint64(nil, math.Float64bits(2.5))},
		{"i32", apr0I32, []uint64{1, 1}, []byte{1, 0, 0, 0}},
		{"i64", apr0I64, []uint64{1}, make([]byte, 8)},
		{"i8", apr0I8, []uint64{3}, []byte{1, 2, 3}},
		{"u8", apr0U8, []uint64{}, []byte{7}},
		{"q4k", apr0Q4K, []uint64{1, 256}, make([]byte, 144)},
		{"q6k", apr0Q6K, []uint64{256}, make([]byte, 210)},
		{"q4", apr0Q4, []uint64{5, 8}, q4},
		{"q4old", apr0Q4Old, []uint64{40}, q4},
		{"q8", apr0Q8, []uint64{2, 2}, q8},
		{"q8old", apr0Q8Old, []uint64{4}, q8},
	}
	f, err := Read(buildAPR0(`{}`, tensors, apr0Opts{}))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tensor.Tensor{}
	for _, tt := range f.Tensors {
		byName[tt.Name] = tt
	}
	wantDT := map[string]dtype.DType{"f32": dtype.F32, "f16": dtype.F16, "bf16": dtype.BF16, "bf16old": dtype.BF16, "f64": dtype.F64,
		"i32": dtype.I32, "i64": dtype.I64, "i8": dtype.I8, "u8": dtype.U8, "q4k": dtype.Q4_K, "q6k": dtype.Q6_K,
		"q4": dtype.F32, "q4old": dtype.F32, "q8": dtype.F32, "q8old": dtype.F32}
	for name, dt := range wantDT {
		tt, ok := byName[name]
		if !ok || tt.DType != dt {
			t.Errorf("%s: %v, want dtype %v", name, tt.DType, dt)
			continue
		}
		if sz, err := dtype.Size(tt.DType, tt.Shape); err != nil || sz != int64(len(tt.Data)) {
			t.Errorf("%s: %d bytes for %v %v (%v)", name, len(tt.Data), tt.DType, tt.Shape, err)
		}
	}
	for _, name := range []string{"q4", "q4old"} {
		got, err := byName[name].Float32s()
		if err != nil || len(got) != 40 {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range got {
			if got[i] != vals[i] {
				t.Errorf("%s[%d] = %v, want %v", name, i, got[i], vals[i])
			}
		}
	}
	for _, name := range []string{"q8", "q8old"} {
		got, _ := byName[name].Float32s()
		if len(got) != 4 || got[0] != -64 || got[1] != 63.5 || got[2] != 0 || got[3] != -0.5 {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func TestAPR0Errors(t *testing.T) {
	two := []apr0Tensor{
		{"a", apr0F32, []uint64{1}, f32bytes(1)},
		{"b", apr0F32, []uint64{2}, f32bytes(1, 2)},
	}
	setU64 := func(at int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[at:], v); return b }
	}
	// Entry "a" is 2+1+1+1+8+8+8 = 29 bytes: dims at 5, offset at 13, size at 21.
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"unsorted", buildAPR0(`{}`, []apr0Tensor{two[1], two[0]}, apr0Opts{noSort: true}), "sorted"},
		{"duplicate", buildAPR0(`{}`, []apr0Tensor{two[0], two[0]}, apr0Opts{}), "strictly increasing"},
		{"dtype 99", buildAPR0(`{}`, []apr0Tensor{{"a", 99, []uint64{1}, []byte{0}}}, apr0Opts{}), "dtype code 99"},
		{"size mismatch", buildAPR0(`{}`, []apr0Tensor{{"a", apr0F32, []uint64{2}, f32bytes(1)}}, apr0Opts{}), "expected 8"},
		{"q4k row not 256", buildAPR0(`{}`, []apr0Tensor{{"a", apr0Q4K, []uint64{128}, make([]byte, 72)}}, apr0Opts{}), "multiple of 256"},
		{"overlap", buildAPR0(`{}`, two, apr0Opts{mutateIx: setU64(29+13, 0)}), "overlaps"},
		{"unaligned offset", buildAPR0(`{}`, two, apr0Opts{mutateIx: setU64(13, 8)}), "multiple of 64"},
		{"offset past end", buildAPR0(`{}`, two, apr0Opts{mutateIx: setU64(13, 1<<40)}), "runs past"},
		{"dims overflow", buildAPR0(`{}`, two, apr0Opts{mutateIx: setU64(5, 1<<62)}), "dims"},
		{"dim > int64", buildAPR0(`{}`, two, apr0Opts{mutateIx: setU64(5, math.MaxUint64)}), "too large"},
		{"nine dims", buildAPR0(`{}`, []apr0Tensor{{"a", apr0U8, make([]uint64, 9), nil}}, apr0Opts{}), "cap of 8"},
		{"empty name", buildAPR0(`{}`, []apr0Tensor{{"", apr0U8, nil, []byte{1}}}, apr0Opts{}), "non-empty"},
		{"lz4 flag", buildAPR0(`{}`, two, apr0Opts{flags: apr0FlagLZ4 | apr0FlagRowMajor}), "LZ4"},
		{"zstd flag", buildAPR0(`{}`, two, apr0Opts{flags: apr0FlagZstd}), "zstd"},
		{"encrypted", buildAPR0(`{}`, two, apr0Opts{flags: apr0FlagEncrypted}), "encrypted"},
		{"signed", buildAPR0(`{}`, two, apr0Opts{flags: apr0FlagSigned}), "signed"},
		{"sharded", buildAPR0(`{}`, two, apr0Opts{flags: apr0FlagSharded}), "sharded"},
		{"column major", buildAPR0(`{}`, two, apr0Opts{flags: apr0FlagColumnMajor}), "column-major"},
		{"unknown flag", buildAPR0(`{}`, two, apr0Opts{flags: 0x8000}), "unknown flag"},
		{"version 3", buildAPR0(`{}`, two, apr0Opts{version: [2]byte{3, 0}}), "major version 3"},
		{"version 2.1", buildAPR0(`{}`, two, apr0Opts{version: [2]byte{2, 1}}), "2.1"},
		{"metadata not JSON", buildAPR0(`{"a":`, two, apr0Opts{}), "invalid JSON"},
		{"metadata array", buildAPR0(`[1]`, two, apr0Opts{}), "expected an object"},
		{"metadata trailing", buildAPR0(`{} {}`, two, apr0Opts{}), "after the JSON object"},
		{"metadata bad UTF-8", buildAPR0("{\"a\":\"\xff\"}", two, apr0Opts{}), "UTF-8"},
	}
	// Structural edits with both CRCs recomputed.
	base := buildAPR0(`{}`, two, apr0Opts{})
	edit := func(f func(b []byte)) []byte {
		b := append([]byte(nil), base...)
		f(b)
		return refooter(b)
	}
	cases = append(cases, []struct {
		name string
		file []byte
		want string
	}{
		{"metadata offset", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[12:], 128) }), "metadata_offset"},
		{"index offset", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 192) }), "index_offset"},
		{"data offset unaligned", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[32:], 200) }), "data_offset"},
		{"data offset huge", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[32:], math.MaxUint64-63) }), "data_offset"},
		{"count too big", edit(func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 1e6) }), "cannot fit"},
		{"count over cap", edit(func(b []byte) { binary.LittleEndian.PutUint32(b[8:], math.MaxUint32) }), "cap"},
		{"count one less", edit(func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 1) }), "padding"},
		{"count one more", edit(func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 3) }), "index[2]"},
		{"metadata padding", edit(func(b []byte) { b[100] = 1 }), "metadata.padding"},
		{"data padding gap", edit(func(b []byte) {}), ""},
	}...)
	for _, c := range cases {
		_, err := Read(c.file)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// Extra bytes before the footer (with a valid CRC) break the size equation.
	grown := append(append([]byte(nil), base[:len(base)-4]...), make([]byte, 64)...)
	if _, err := Read(appendCRC(grown)); err == nil || !strings.Contains(err.Error(), "file size") {
		t.Errorf("64 extra data bytes: %v", err)
	}
	// Header CRC.
	hb := append([]byte(nil), base...)
	hb[44] = 1
	var ce *ChecksumError
	if _, err := Read(hb); !errors.As(err, &ce) || ce.Offset != 40 {
		t.Errorf("reserved header byte: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(testdata, "*.apr"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(workedExample())
	f.Add(buildAPRN(1, []byte{0x80}, bincodeLinear([]float32{1, 2}, 3, true), 13+4+4+1, 0, 0, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(data)
		if err != nil {
			if file != nil {
				t.Fatal("file and error")
			}
			return
		}
		for _, tt := range file.Tensors {
			sz, err := dtype.Size(tt.DType, tt.Shape)
			if err != nil || sz != int64(len(tt.Data)) {
				t.Fatalf("tensor %q: %d bytes for %v %v", tt.Name, len(tt.Data), tt.DType, tt.Shape)
			}
		}
		_, _ = decodeModel(file)
	})
}

// FuzzReadRechecksummed repairs the CRCs of its input before reading it, so the
// fuzzer explores the structure behind the checksums instead of the checksums.
func FuzzReadRechecksummed(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(testdata, "*.apr"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(workedExample())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= 68 && string(data[:4]) == "APR\x00" {
			data = refooter(data)
		} else if len(data) >= 4 {
			data = appendCRC(append([]byte(nil), data[:len(data)-4]...))
		}
		file, err := Read(data)
		if err != nil {
			return
		}
		for _, tt := range file.Tensors {
			sz, err := dtype.Size(tt.DType, tt.Shape)
			if err != nil || sz != int64(len(tt.Data)) {
				t.Fatalf("tensor %q: %d bytes for %v %v", tt.Name, len(tt.Data), tt.DType, tt.Shape)
			}
		}
		_, _ = decodeModel(file)
	})
}

// decodeModel rebuilds an imported file's model with lib/model's registry.
func decodeModel(f *File) (model.Model, error) {
	m := make(map[string]tensor.Tensor, len(f.Tensors))
	for _, t := range f.Tensors {
		m[t.Name] = t
	}
	return model.Decode(f.ModelType, f.Config, m)
}

// countingZeros is an endless stream of zeros that counts what is read from it.
type countingZeros struct{ n int64 }

func (z *countingZeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestReadAllBounded: a stream that starts with an aprender magic is not buffered
// before its header is checked, and never past the length an APRN header declares.
func TestReadAllBounded(t *testing.T) {
	z := &countingZeros{}
	_, err := ReadAll(io.MultiReader(bytes.NewReader([]byte("APR\x00\x02")), z))
	var ce *ChecksumError
	if !errors.As(err, &ce) || z.n > 64 {
		t.Fatalf("APR\\0 with a zero header: %v after reading %d bytes", err, z.n)
	}
	mnist := readMNIST(t)
	z = &countingZeros{}
	b, err := ReadAll(io.MultiReader(bytes.NewReader(mnist), z))
	if err != nil || len(b) != len(mnist)+1 || z.n > 1<<16 {
		t.Fatalf("APRN with endless bytes after it: %d bytes, %v, %d read past the file", len(b), err, z.n)
	}
	if _, err := Read(b); err == nil {
		t.Error("a file with a byte after its declared end is accepted")
	}
	if b, err := ReadAll(bytes.NewReader(mnist)); err != nil || !bytes.Equal(b, mnist) {
		t.Fatalf("a whole file: %v", err)
	}
}

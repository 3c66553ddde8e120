package kernels

import (
	"bytes"
	"maps"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// The i-quant goldens: ggml_quantize_chunk of today's ggml over rows.f32, without
// and with the importance vector imatrix.f32 (testdata/quant/README.md, mkiq.py).
var iqGoldenSHA = map[string]string{
	"imatrix.f32":         "887befe93ea5dd345f9ec89171d98e5556ba028ed0f60052d6d6519ef91e3585",
	"iq4_nl.bin":          "fdd751f22de30118d53f5e313f19769cff74f37cb61be88fdc3b883492130427",
	"iq4_nl.imatrix.bin":  "1edc64af4eb98b9a191d52f2d4a4aa3ba9dc43c227fed2de130523d063876c56",
	"iq4_xs.bin":          "4f94ac9670b62d10ddf8cbe3f8fe492cd0f8b26f2acb58871ce76fa0af27cdc4",
	"iq4_xs.imatrix.bin":  "829366904f6c3d2311e61eb2e0ffa03685087814cf6b3e7ecec84f6e7fe16bf3",
	"iq3_xxs.bin":         "ec67eba99367e43195ac80f1fe7af3808d162a501a49f4a41481c6ca78455b69",
	"iq3_xxs.imatrix.bin": "a28cd1213ead1e1949b39cf69812947681776e419dd6ba1930022827fc5d65ae",
	"iq3_s.bin":           "7a5addaceea684ced71bc3c2df40ff9023cfb46613f78d1eb694857294aa018f",
	"iq3_s.imatrix.bin":   "2e935807b18b10a7c9fdd09f2f329ce8fb236337a85c81ee02b6ce13e213f70c",
}

func init() { maps.Copy(goldenSHA, iqGoldenSHA) }

var iqGoldenTypes = []struct {
	name string
	t    dtype.DType
}{
	{"iq4_nl", dtype.IQ4_NL},
	{"iq4_xs", dtype.IQ4_XS},
	{"iq3_xxs", dtype.IQ3_XXS},
	{"iq3_s", dtype.IQ3_S},
}

// TestGoldenIQuantize checks the i-quant quantizers against ggml's bytes, without
// and with importance weights, row by row (a failure names the crafted row).
func TestGoldenIQuantize(t *testing.T) {
	x, desc := goldenInput(t)
	qw := floatsLE(readGolden(t, "imatrix.f32"))
	for _, g := range iqGoldenTypes {
		for _, weighted := range []bool{false, true} {
			file, w := g.name+".bin", []float32(nil)
			if weighted {
				file, w = g.name+".imatrix.bin", qw
			}
			want := readGolden(t, file)
			got := make([]byte, len(want))
			if err := QuantizeWeighted(g.t, got, x, goldenCols, w); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			rb := len(want) / goldenRows
			bad := 0
			for r := range goldenRows {
				if !bytes.Equal(got[r*rb:(r+1)*rb], want[r*rb:(r+1)*rb]) {
					if bad++; bad <= 5 {
						t.Errorf("%s: row %d (%s) differs from ggml", file, r, desc[r])
					}
				}
			}
			if bad > 5 {
				t.Errorf("%s: %d rows differ", file, bad)
			}
		}
	}
}

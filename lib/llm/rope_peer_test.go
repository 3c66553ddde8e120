package llm

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/internal/peertest"
)

// ropeFreqsTorch is Llama 3's rope scaling factors as today's converter computes them
// (LlamaModel.generate_extra_tensors), in PyTorch, for each parameter set on stdin
// (one JSON list per line: base, dim, factor, low, high, original context), printed
// as the hex of the float32 values.
const ropeFreqsTorch = `
import json, math, sys, torch
for line in sys.stdin:
    base, dim, factor, low, high, old = json.loads(line)
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    lw, hw = old / low, old / high
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < hw:
            out.append(1)
        elif wavelen > lw:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    print(torch.tensor(out, dtype=torch.float32).numpy().tobytes().hex())
`

// TestLlama3RopeFreqsTorch: llama3RopeFreqs gives PyTorch's float32 values bit for bit
// over Llama 3.x's parameters (factor 8 or 32, low 1, high 4, 8192 positions) at every
// base and head size tried, the blend band included. Over other parameters a value
// may differ by an ulp or two: torch's vectorized float32 pow (SLEEF's, within 1 ulp)
// is not always correctly rounded, where apr rounds Go's float64 pow (checked on
// 2026-11-27 with Debian's torch 1.13: 7 values of 1,123 blended in 180 sets).
func TestLlama3RopeFreqsTorch(t *testing.T) {
	py := peertest.Python(t, "torch", "python3-torch")
	var cases [][6]float64
	for _, base := range []float64{10000, 500000, 1e6, 5e6, 8e6, 123456.7} {
		for _, dim := range []float64{32, 64, 80, 96, 128, 256} {
			for _, p := range [][4]float64{{8, 1, 4, 8192}, {32, 1, 4, 8192}, {16, 1, 6, 4096}, {4, 2, 8, 2048}, {8, 1, 4, 128}} {
				cases = append(cases, [6]float64{base, dim, p[0], p[1], p[2], p[3]})
			}
		}
	}
	var in strings.Builder
	for _, c := range cases {
		b, _ := json.Marshal(c)
		in.Write(append(b, '\n'))
	}
	cmd := exec.Command(py, "-c", ropeFreqsTorch)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("torch: %v", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(cases) {
		t.Fatalf("torch printed %d lines for %d cases", len(lines), len(cases))
	}
	blended, off := 0, 0
	for i, c := range cases {
		r := rope{params: map[string]any{}}
		for j, k := range []string{"rope_theta", "", "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"} {
			if k != "" {
				r.params[k] = json.Number(fmt.Sprint(c[j]))
			}
		}
		f, err := llama3RopeFreqs(r, int(c[1]))
		if err != nil {
			t.Fatal(err)
		}
		meta := c[3] == 1 && c[4] == 4 && c[5] == 8192
		want, err := hex.DecodeString(lines[i])
		if err != nil || len(want) != 4*len(f) {
			t.Fatalf("torch printed %q for %d values", lines[i], len(f))
		}
		for j, v := range f {
			w := binary.LittleEndian.Uint32(want[4*j:])
			if v != 1 && v != float32(c[2]) {
				blended++
			}
			ulps := int64(math.Float32bits(v)) - int64(w)
			if ulps != 0 {
				off++
			}
			if meta && ulps != 0 || ulps < -2 || ulps > 2 {
				t.Errorf("base %v dim %v factor %v low %v high %v original %v: value %d is %v, torch's %v",
					c[0], c[1], c[2], c[3], c[4], c[5], j, v, math.Float32frombits(w))
			}
		}
	}
	if blended == 0 {
		t.Error("no case reached the blend between the bands")
	}
	t.Logf("%d parameter sets, %d blended values, %d an ulp or two from torch's", len(cases), blended, off)
}

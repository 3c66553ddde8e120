package dtype

import (
	"errors"
	"testing"
)

func TestTableConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range All() {
		i := d.Info()
		if seen[i.Name] {
			t.Errorf("duplicate name %s", i.Name)
		}
		seen[i.Name] = true
		if p, err := Parse(i.Name); err != nil || p != d {
			t.Errorf("Parse(%s) = %v, %v", i.Name, p, err)
		}
		if i.GGML >= 0 {
			if g, ok := FromGGML(i.GGML); !ok || g != d {
				t.Errorf("FromGGML(%d) = %v", i.GGML, g)
			}
			if d >= 0x100 && int(d&0xFF) != i.GGML {
				t.Errorf("%s: code 0x%x does not carry ggml type %d", i.Name, uint16(d), i.GGML)
			}
		}
		if i.SafeTensors != "" {
			if s, ok := FromSafeTensors(i.SafeTensors); !ok || s != d {
				t.Errorf("FromSafeTensors(%s) = %v", i.SafeTensors, s)
			}
		}
	}
	if len(All()) != 46 {
		t.Errorf("%d dtypes, want 46 (update FORMAT.md when the table changes)", len(All()))
	}
}

func TestSize(t *testing.T) {
	cases := []struct {
		d     DType
		shape []int64
		want  int64
		err   bool
	}{
		{F32, nil, 4, false},
		{F32, []int64{2, 3}, 24, false},
		{F32, []int64{0, 7}, 0, false},
		{Q4_0, []int64{3, 64}, 3 * 2 * 18, false},
		{Q4_K, []int64{256}, 144, false},
		{F4, []int64{6}, 3, false},
		{F6E2M3, []int64{8}, 6, false},
		{NVFP4, []int64{2, 128}, 2 * 2 * 36, false}, // 4 E4M3 scales + 32 bytes of E2M1 per 64
		{Q1_0, []int64{3, 128}, 3 * 18, false},      // f16 scale + 128 sign bits
		{Q2_0, []int64{64}, 18, false},              // f16 scale + 64 2-bit codes
		{Q4_0, []int64{64, 33}, 0, true},            // row not a whole block
		{Q1_0, []int64{64}, 0, true},                // half a Q1_0 block
		{F32, []int64{-1}, 0, true},
		{F32, []int64{1 << 40, 1 << 40}, 0, true},
		{DType(0x99), []int64{1}, 0, true},
	}
	for _, c := range cases {
		got, err := Size(c.d, c.shape)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("Size(%v, %v) = %d, %v; want %d, error %v", c.d, c.shape, got, err, c.want, c.err)
		}
	}
	if _, err := Size(DType(0x99), nil); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown code: %v", err)
	}
}

package quant

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/imatrix"
)

// TestParsePruneLayers: sorted, without repeats; anything but whole numbers from 0 is
// an error naming the flag's value.
func TestParsePruneLayers(t *testing.T) {
	got, err := ParsePruneLayers("7,0,2,0")
	if err != nil || !slices.Equal(got, []int{0, 2, 7}) {
		t.Errorf("7,0,2,0: %v, %v", got, err)
	}
	for _, s := range []string{"", "1,", "-1", "3x", " 3", "1;2", "99999999999"} {
		if _, err := ParsePruneLayers(s); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--prune-layers %q", s)) {
			t.Errorf("%q: %v", s, err)
		}
	}
}

// TestPruning: llama.cpp's remap_layer over the layers in ascending order: the layers
// below the first pruned keep their number, the rest are numbered on; tensors outside
// the blocks stay; the importance matrix's entries follow the names.
func TestPruning(t *testing.T) {
	var tensors []container.TensorInfo
	tensors = append(tensors, container.TensorInfo{Name: "token_embd.weight"})
	for i := range 5 {
		tensors = append(tensors, container.TensorInfo{Name: fmt.Sprintf("blk.%d.attn_v.weight", i)})
	}
	for _, c := range []struct {
		prune  []int
		names  string
		blocks int
	}{
		{[]int{1}, "token_embd.weight blk.0.attn_v.weight blk.1.attn_v.weight blk.2.attn_v.weight blk.3.attn_v.weight", 4},
		{[]int{0, 3}, "token_embd.weight blk.0.attn_v.weight blk.1.attn_v.weight blk.2.attn_v.weight", 3},
		{[]int{4, 9}, "token_embd.weight blk.0.attn_v.weight blk.1.attn_v.weight blk.2.attn_v.weight blk.3.attn_v.weight", 4},
		{[]int{0, 1, 2, 3, 4}, "token_embd.weight", 0},
	} {
		p := newPruning(c.prune, tensors)
		var names []string
		for _, tt := range p.table(tensors) {
			names = append(names, tt.Name)
		}
		if strings.Join(names, " ") != c.names || p.blocks != c.blocks {
			t.Errorf("prune %v: %v, %d blocks; want %s, %d", c.prune, names, p.blocks, c.names, c.blocks)
		}
	}
	p := newPruning([]int{0}, tensors)
	if n, ok := p.rename("blk.3.attn_v.weight"); !ok || n != "blk.2.attn_v.weight" {
		t.Errorf("blk.3 -> %q %v", n, ok)
	}
	if got := PrunedNames([]int{1}, []string{"blk.2.x", "out", "blk.1.x", "blk.0.x"}); !slices.Equal(got, []string{"blk.1.x", "out", "", "blk.0.x"}) {
		t.Errorf("PrunedNames: %q", got)
	}
	m := &imatrix.Matrix{Names: []string{"blk.0.attn_v.weight", "blk.1.attn_v.weight"},
		Entries: map[string][]float32{"blk.0.attn_v.weight": {0}, "blk.1.attn_v.weight": {1}}}
	if r := p.matrix(m); len(r.Entries) != 1 || r.Entries["blk.0.attn_v.weight"][0] != 1 || len(m.Entries) != 2 {
		t.Errorf("matrix: %v", r.Entries)
	}
}

func FuzzParsePruneLayers(f *testing.F) {
	for _, s := range []string{"0", "1,2,3", "3,1,1", "", "-1", "1,,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		layers, err := ParsePruneLayers(s)
		if err != nil {
			return
		}
		if len(layers) == 0 || !slices.IsSorted(layers) || len(slices.Compact(slices.Clone(layers))) != len(layers) || layers[0] < 0 {
			t.Errorf("%q: %v", s, layers)
		}
	})
}

package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/quant"
)

// inputParts returns the tensor counts of the input's GGUF parts (one for a whole
// GGUF file), which --keep-split gives the output's parts, as llama-quantize does:
// with --prune-layers, the tensors left in each (a part left empty at the end is
// dropped, as llama-quantize counts its parts; one in the middle is an error).
func (c *quantCmd) inputParts(o quant.Options) ([]int, error) {
	if c.parts == nil {
		return nil, cli.Usagef("--keep-split keeps the parts of a GGUF input (a split set's first part, or a whole file), and %s is none", c.Input)
	}
	if c.Output == "" || c.Output == "-" {
		return nil, cli.Usagef("--keep-split writes a split set to files: give -o OUT.gguf (the parts are OUT-00001-of-0000K.gguf, ...)")
	}
	var names []string
	part := []int{} // part index of each name
	for i, p := range c.parts {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		h, err := gguf.ReadHeader(bufio.NewReader(f))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, t := range h.Tensors {
			names = append(names, t.Name)
			part = append(part, i)
		}
	}
	if o.PruneLayers != nil {
		names = quant.PrunedNames(o.PruneLayers, names)
	}
	// llama-quantize: as many parts as the last part a tensor is left in
	counts := make([]int, len(c.parts))
	last := -1
	for i, n := range names {
		if n != "" {
			counts[part[i]]++
			last = part[i]
		}
	}
	counts = counts[:last+1]
	for i, k := range counts {
		if k == 0 {
			return nil, fmt.Errorf("--keep-split: --prune-layers leaves no tensor in part %d of %d (%s)", i+1, len(c.parts), c.parts[i])
		}
	}
	return counts, nil
}

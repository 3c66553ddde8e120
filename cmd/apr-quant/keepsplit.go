package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/gguf"
)

// inputParts returns the tensor counts of the input's GGUF parts (one for a whole
// GGUF file), which --keep-split gives the output's parts, as llama-quantize does.
func (c *quantCmd) inputParts() ([]int, error) {
	if c.parts == nil {
		return nil, cli.Usagef("--keep-split keeps the parts of a GGUF input (a split set's first part, or a whole file), and %s is none", c.Input)
	}
	if c.Output == "" || c.Output == "-" {
		return nil, cli.Usagef("--keep-split writes a split set to files: give -o OUT.gguf (the parts are OUT-00001-of-0000K.gguf, ...)")
	}
	counts := make([]int, len(c.parts))
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
		counts[i] = len(h.Tensors)
	}
	return counts, nil
}

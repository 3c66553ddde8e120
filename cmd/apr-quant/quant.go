package main

import (
	"fmt"
	"os"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/quant"
)

// open returns the input stream. A regular file's index is read first (a few reads,
// whatever its size), so every tensor is decided, and every rule error reported,
// before any output exists, and the provenance gets per-type counts. A plain APR v2
// file is memory-mapped (quant.MapFile); other files and pipes are streamed.
func (c *quantCmd) open(env *cli.Env, o *quant.Options) (apr.Stream, string, func(), error) {
	if c.Input != "-" && c.Input != "" {
		if s := quant.MapFile(c.Input); s != nil { // a plain APR v2 file: quantized in place
			o.Plan = s.Plan()
			return s, c.Input, func() { s.Close() }, nil
		}
		if st, err := os.Stat(c.Input); err == nil && st.Mode().IsRegular() {
			info, err := apr.Inspect(c.Input)
			if err != nil {
				return nil, c.Input, nil, fmt.Errorf("%s: %w", c.Input, err)
			}
			o.Plan = make([]container.TensorInfo, 0, len(info.Tensors))
			for _, e := range info.Tensors {
				o.Plan = append(o.Plan, e.TensorInfo)
			}
		}
	}
	r, name, err := env.Input(c.Input)
	if err != nil {
		return nil, name, nil, err
	}
	s, err := apr.OpenStream(r)
	if err != nil {
		r.Close()
		return nil, name, nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, name, func() { s.Close(); r.Close() }, nil
}

func (c *quantCmd) report(env *cli.Env, rep *quant.Report) error {
	w := env.Stderr
	var out *cli.Output
	if c.StatsFile != "" {
		var err error
		if out, err = env.Create(c.StatsFile, false); err != nil {
			return err
		}
		defer out.Abort()
		w = out
	}
	var err error
	if c.JSON {
		err = rep.WriteJSON(w)
	} else {
		err = rep.WriteTable(w)
	}
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if out != nil {
		return out.Commit()
	}
	return nil
}

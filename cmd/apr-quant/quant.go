package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/source"
)

// open returns the input stream. A GGUF file or split set, a SafeTensors file and a
// checkpoint directory are imported as apr-gguf import and apr-st import would import
// them (package source tells them apart by content; from stdin too). For an APR file
// the index is read first (a few reads, whatever its size), so every tensor is
// decided, and every rule error reported, before any output exists, and the
// provenance gets per-type counts. A plain APR v2 file is memory-mapped
// (quant.MapFile); other files and pipes are streamed.
func (c *quantCmd) open(env *cli.Env, o *quant.Options) (apr.Stream, string, func(), error) {
	if c.Input != "-" && c.Input != "" {
		s, kind, err := source.Open(c.Input, source.Options{Set: func(parts []string) {
			c.parts = parts
			env.Notef("%s is the first of a split set of %d parts; reading them all as one model (%s to %s)",
				c.Input, len(parts), filepath.Base(parts[0]), filepath.Base(parts[len(parts)-1]))
		}})
		if err != nil {
			return nil, c.Input, nil, named(c.Input, err)
		}
		if s != nil {
			if kind == source.GGUF && c.parts == nil {
				c.parts = []string{c.Input}
			}
			return s, c.Input, func() { s.Close() }, nil
		}
		if s := quant.MapFile(c.Input); s != nil { // a plain APR v2 file: quantized in place
			o.Plan = s.Plan()
			return s, c.Input, func() { s.Close() }, nil
		}
		if st, err := os.Stat(c.Input); err == nil && st.Mode().IsRegular() {
			info, err := apr.Inspect(c.Input)
			if err != nil {
				return nil, c.Input, nil, named(c.Input, err)
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
	imported, _, rest, err := source.OpenReader(r, name) // stdin, or a file that is not regular (a FIFO)
	if err != nil {
		r.Close()
		return nil, name, nil, err
	}
	if imported != nil {
		return imported, name, func() { imported.Close(); r.Close() }, nil
	}
	s, err := apr.OpenStream(rest)
	if err != nil {
		r.Close()
		return nil, name, nil, named(name, err)
	}
	return s, name, func() { s.Close(); r.Close() }, nil
}

// named prefixes err with the input's name unless it already names it.
func named(name string, err error) error {
	if strings.Contains(err.Error(), name) {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
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

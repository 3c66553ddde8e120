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
	st := c.ImportOptions()
	if c.Input != "-" && c.Input != "" {
		if kind, err := source.KindOf(c.Input); err == nil {
			if err := c.importFlagsFit(c.Input, kind, true); err != nil {
				return nil, c.Input, nil, err
			}
		}
		s, kind, err := source.Open(c.Input, source.Options{SafeTensors: st, Set: func(parts []string) {
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
	regular := false
	if f, ok := r.(*os.File); ok {
		fi, err := f.Stat()
		regular = err == nil && fi.Mode().IsRegular()
	}
	imported, kind, rest, err := source.OpenReader(r, name, source.Options{SafeTensors: st}) // stdin, or a file that is not regular (a FIFO)
	if err == nil {
		if err = c.importFlagsFit(name, kind, regular); err != nil && imported != nil {
			imported.Close()
		}
	}
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

// importFlagsFit refuses apr-st import's flags (stcmd.ImportFlags) for an input they
// do not apply to: one that is not SafeTensors or a checkpoint, and --digest for a pipe
// (as apr-st import refuses it: the digest is known only after the metadata has gone
// out). file says whether the input can be read twice.
func (c *quantCmd) importFlagsFit(name string, kind source.Kind, file bool) error {
	given := c.ImportFlags.Given()
	if len(given) == 0 {
		return nil
	}
	if kind != source.SafeTensors && kind != source.Checkpoint {
		return cli.Usagef("%s: apr-st import's flags, for a SafeTensors file or checkpoint directory; %s is %s", strings.Join(given, ", "), name, kind)
	}
	if c.Digest && !file {
		return cli.Usagef("--digest needs a file input (a pipe's digest is known only after the metadata has gone out)")
	}
	return nil
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

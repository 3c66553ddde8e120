package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/apr-go/apr/lib/safetensors"
)

// An output never replaces one of the run's inputs: apr-quant T SET-00001-of-00003.gguf
// -o SET-00002-of-00003.gguf would rename its output over part 2 of the set it reads,
// and a quantized -o m.apr over its f32 input m.apr loses the original. The run's
// inputs are the files given to an argument or flag tagged reads:"" (recorded when
// the command line is parsed) and those opened by Env.Input; an output is refused
// when it is the same file (os.SameFile: hard links, symlinks and ./ spellings
// included) as any of them, before anything is written.

// input is a file the run reads: its name, what it is, and what it is part of when
// it was not given by its own name ("the split set X", "the directory X").
type input struct {
	name, of string
	st       os.FileInfo
}

// Reads records the files behind path as inputs of the run: a regular file (a part
// of a GGUF split set stands for every part of its set), or the files of a checkpoint
// directory an import reads (readsDir; a model.safetensors.index.json stands for its
// directory). Names that do not exist, stdin ("-") and what is not a
// regular file (a FIFO, a device) are ignored: the program reports them when it opens
// them, and writing one does not replace it.
func (e *Env) Reads(path string) {
	if path == "" || path == "-" {
		return
	}
	st, err := os.Stat(path)
	if err != nil {
		return
	}
	if st.IsDir() {
		e.readsDir(path, "the directory "+path)
		return
	}
	if !st.Mode().IsRegular() {
		return
	}
	e.inputs = append(e.inputs, input{path, "", st})
	if strings.HasSuffix(path, ".index.json") {
		e.readsDir(filepath.Dir(path), "the checkpoint of "+path)
	}
	for _, p := range setParts(path) {
		e.readsFile(p, "the split set of "+path)
	}
}

// readsFile records the regular file p, an input as a part of of.
func (e *Env) readsFile(p, of string) {
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		e.inputs = append(e.inputs, input{p, of, st})
	}
}

// readsDir records the files of the checkpoint directory dir an import may read
// (its shards, index, config and tokenizer files; symlinks followed, as a Hugging
// Face cache's snapshot links its blobs), not the others: an earlier output written
// beside them (DIR/model.f16.gguf) may be written again.
func (e *Env) readsDir(dir, of string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		if safetensors.CheckpointFile(ent.Name()) {
			e.readsFile(filepath.Join(dir, ent.Name()), of)
		}
	}
}

// partName is the name of a part of a GGUF split set: PREFIX-00002-of-00003.gguf.
var partName = regexp.MustCompile(`^(.*)-([0-9]{5})-of-([0-9]{5})\.gguf$`)

// setParts returns the names of the other parts of the split set path is a part of.
func setParts(path string) []string {
	m := partName.FindStringSubmatch(path)
	if m == nil {
		return nil
	}
	n, _ := strconv.Atoi(m[3])
	var parts []string
	for i := 1; i <= n; i++ {
		if p := fmt.Sprintf("%s-%05d-of-%05d.gguf", m[1], i, n); p != path {
			parts = append(parts, p)
		}
	}
	return parts
}

// NotInput fails, naming both, when an output path is one of the run's inputs.
func (e *Env) NotInput(outputs ...string) error {
	for _, out := range outputs {
		if out == "" || out == "-" {
			continue
		}
		st, err := os.Stat(out)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		for _, in := range e.inputs {
			if !os.SameFile(st, in.st) {
				continue
			}
			what := "the input " + in.name
			if in.of != "" {
				what += " (in " + in.of + ")"
			}
			if in.name != out {
				what += ", the same file"
			}
			return fmt.Errorf("refusing to write the output %s: it is %s", out, what)
		}
	}
	return nil
}

// NotInputSet is NotInput for a GGUF split set written to prefix: every file named as
// a part of a set of prefix (of any part count, which the export writes or removes
// as a stale part of an earlier set).
func (e *Env) NotInputSet(prefix string) error {
	dir, base := filepath.Split(prefix)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // the export reports it
	}
	var parts []string
	for _, ent := range ents {
		if m := partName.FindStringSubmatch(ent.Name()); m != nil && m[1] == base {
			parts = append(parts, filepath.Join(filepath.Dir(prefix), ent.Name()))
		}
	}
	return e.NotInput(parts...)
}

// readsTagged records as inputs the values given to the arguments and flags tagged
// reads:"" on the command line.
func (e *Env) readsTagged(ctx *kong.Context) {
	for _, p := range ctx.Path {
		var v *kong.Value
		switch {
		case p.Positional != nil:
			v = p.Positional
		case p.Flag != nil:
			v = p.Flag.Value
		}
		if v == nil || v.Tag == nil || !v.Tag.Has("reads") {
			continue
		}
		switch t := v.Target; t.Kind() {
		case reflect.String:
			e.Reads(t.String())
		case reflect.Slice:
			for i := range t.Len() {
				if s := t.Index(i); s.Kind() == reflect.String {
					e.Reads(s.String())
				}
			}
		}
	}
}

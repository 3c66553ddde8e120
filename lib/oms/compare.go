package oms

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/apr-go/apr/lib/printable"
)

// Diff is one way a model differs from its signed manifest.
type Diff struct {
	Kind string // "missing", "extra" or "changed"
	Path string
	// For the shards method: the byte range that differs (End 0 for a whole file).
	Start, End int64
	Detail     string
}

func (d Diff) String() string {
	s := d.Kind + ": " + printable.String(d.Path)
	if d.End > 0 {
		s += fmt.Sprintf(" bytes %d-%d (the shard at offset %d)", d.Start, d.End, d.Start)
	}
	if d.Detail != "" {
		s += " (" + d.Detail + ")"
	}
	return s
}

// MismatchError lists every difference between a model and its signature.
type MismatchError struct {
	Diffs []Diff
}

func (e *MismatchError) Error() string {
	lines := make([]string, len(e.Diffs))
	for i, d := range e.Diffs {
		lines[i] = d.String()
	}
	n := "1 difference"
	if len(e.Diffs) != 1 {
		n = fmt.Sprintf("%d differences", len(e.Diffs))
	}
	return fmt.Sprintf("the model does not match its signature (%s):\n  %s", n, strings.Join(lines, "\n  "))
}

// Compare lists how got (the model as hashed now) differs from want (the signed
// manifest): files missing, extra, or changed, and for the shards method the byte
// ranges that changed. Names are compared exactly, as model_signing compares its
// manifests' keys; single is the model's file name when the model is one file
// (model_signing names that file "." in its statements).
func Compare(want, got *Manifest, single string) []Diff {
	type entry struct {
		ranges map[int64]Resource
		size   int64
	}
	group := func(m *Manifest) (map[string]*entry, []string) {
		out := map[string]*entry{}
		var order []string
		for _, r := range m.Resources {
			p := r.Path
			if p == "." && single != "" {
				p = single
			}
			e := out[p]
			if e == nil {
				e = &entry{ranges: map[int64]Resource{}}
				out[p] = e
				order = append(order, p)
			}
			e.ranges[r.Start] = r
			e.size = max(e.size, r.End)
		}
		return out, order
	}
	w, worder := group(want)
	g, gorder := group(got)
	paths := slices.Concat(worder, gorder)
	slices.SortFunc(paths, comparePaths)
	paths = slices.Compact(paths)
	var diffs []Diff
	for _, p := range paths {
		we, ge := w[p], g[p]
		switch {
		case ge == nil:
			diffs = append(diffs, Diff{Kind: "missing", Path: p, Detail: "signed, not in the model"})
			continue
		case we == nil:
			diffs = append(diffs, Diff{Kind: "extra", Path: p, Detail: "in the model, not signed"})
			continue
		}
		if want.Serialization.Method == MethodFiles {
			if !bytes.Equal(we.ranges[0].Digest, ge.ranges[0].Digest) {
				diffs = append(diffs, Diff{Kind: "changed", Path: p, Detail: "content differs"})
			}
			continue
		}
		if we.size != ge.size {
			diffs = append(diffs, Diff{Kind: "changed", Path: p, Detail: fmt.Sprintf("%d bytes, signed as %d", ge.size, we.size)})
			continue // the ranges differ from where the shorter one ends
		}
		// Every range of either side: one the other lacks is a difference too
		// (a statement read by ParseStatement has none).
		starts := slices.Collect(maps.Keys(we.ranges))
		for s := range ge.ranges {
			if _, ok := we.ranges[s]; !ok {
				starts = append(starts, s)
			}
		}
		slices.Sort(starts)
		for _, s := range starts {
			wr, inW := we.ranges[s]
			gr, inG := ge.ranges[s]
			switch {
			case !inW || !inG || wr.End != gr.End:
				end := max(wr.End, gr.End)
				diffs = append(diffs, Diff{Kind: "changed", Path: p, Start: s, End: end, Detail: "not covered by the signature"})
			case !bytes.Equal(wr.Digest, gr.Digest):
				diffs = append(diffs, Diff{Kind: "changed", Path: p, Start: s, End: wr.End, Detail: "content differs"})
			}
		}
	}
	return diffs
}

// VerifyOptions are the verifier's choices beyond the signature.
type VerifyOptions struct {
	// IgnorePaths are more paths to exclude, relative to the model root, besides
	// the ones the statement records (--ignore-paths).
	IgnorePaths []string
	// IgnoreUnsigned checks only the files the statement lists (spec §8.5).
	IgnoreUnsigned bool
	Workers        int
	Warn           func(string)
}

// Report is the outcome of VerifyModel.
type Report struct {
	*Verified
	Actual *Manifest
}

// BundleVerifier checks a bundle's signature and returns the statement it signs: a
// *Verifier (key and certificate methods) or a *Keyless.
type BundleVerifier interface {
	Verify(bundle []byte) (*Verified, error)
}

// VerifyModel checks the bundle's signature with v, hashes the model at root as
// the signed statement says, and compares. A model that differs gives a
// *MismatchError naming every difference.
func VerifyModel(root string, v BundleVerifier, bundle []byte, o VerifyOptions) (*Report, error) {
	ver, err := v.Verify(bundle)
	if err != nil {
		return nil, err
	}
	want := ver.Manifest
	s := want.Serialization
	single := ""
	if fi, err := os.Stat(root); err == nil && fi.Mode().IsRegular() {
		single = ModelName(root)
	}
	ho := HashOptions{Exclude: o.IgnorePaths, Workers: o.Workers, Warn: o.Warn}
	if o.IgnoreUnsigned {
		listed := map[string]bool{}
		for _, r := range want.Resources {
			listed[r.Path] = true
		}
		ho.Only = func(rel string) bool { return listed[rel] }
	}
	got, err := Hash(root, s, ho)
	var none *NoFilesError
	if errors.As(err, &none) {
		// Nothing left to hash is a model whose every signed file is missing.
		got, err = &Manifest{ModelName: ModelName(root), Serialization: s}, nil
	}
	if err != nil {
		return nil, err
	}
	rep := &Report{Verified: ver, Actual: got}
	if d := Compare(want, got, single); len(d) > 0 {
		return rep, &MismatchError{Diffs: d}
	}
	return rep, nil
}

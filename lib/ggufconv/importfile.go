package ggufconv

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"

	"github.com/apr-go/apr/lib/container"
)

// ImportFile imports the GGUF file at path as an APR stream on w, with the file's
// size and (with o.Digest) SHA-256 in the provenance, as Import of OpenFile does,
// and gives the same bytes.
//
// A digest is part of the metadata, which comes first in an APR file, so OpenFile
// reads the whole file once for it before the conversion starts. ImportFile does not
// wait when w is a regular file it can rewrite in place (an *os.File or a type
// embedding one, not opened with O_APPEND): it converts at once, with a digest of the
// same length as a placeholder, while a second goroutine hashes the file (from a
// read-only mapping where the platform allows); then it writes the real header and
// metadata over the placeholder ones with WriteAt and corrects the whole-file CRC in
// the footer (container.Patcher). Other outputs get the digest first. opts must not
// seal (container.WithSealer): a seal authenticates the metadata.
func ImportFile(w io.Writer, path string, o ImportOptions, opts ...container.Option) error {
	pf, ok := container.Patchable(w)
	if !o.Digest || !ok {
		s, err := OpenFile(path, o)
		if err != nil {
			return err
		}
		defer s.Close()
		return Import(w, s, opts...)
	}
	out, err := container.NewPatcher(pf)
	if err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = path
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	placeholder := strings.Repeat("0", 2*sha256.Size)
	s, err := fileStream(f, o, map[string]any{ProvSHA256: placeholder, ProvSize: st.Size()})
	if err != nil {
		return err
	}
	defer s.Close()
	type result struct {
		sum string
		err error
	}
	digest := make(chan result, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		h := sha256.New()
		var buf []byte
		err := eachWindow(f, 0, st.Size(), &buf, func(b []byte) error {
			select {
			case <-done:
				return errors.New("stopped")
			default:
			}
			h.Write(b)
			return nil
		})
		digest <- result{hex.EncodeToString(h.Sum(nil)), err}
	}()
	if err := Import(out, s, opts...); err != nil {
		return err
	}
	d := <-digest
	if d.err != nil {
		return fmt.Errorf("%s: %w", o.Name, d.err)
	}
	final := s.hdr
	final.Metadata.Provenance = maps.Clone(final.Metadata.Provenance)
	final.Metadata.Provenance[ProvSHA256] = d.sum
	return out.Patch(s.hdr, final, opts...)
}

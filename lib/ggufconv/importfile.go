package ggufconv

import (
	"fmt"
	"io"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/stream"
)

// ImportFile imports the GGUF file at path as an APR stream on w, with the file's
// size and (with o.Digest) SHA-256 in the provenance (a split set: its parts'), as Import of OpenFile does,
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
	return stream.ImportDigested(w, o.Digest, func() (stream.Stream, error) { return OpenFile(path, o) },
		func(pf container.PatchFile) error { return importPatched(pf, path, o, opts) }, opts...)
}

// importPatched converts the GGUF file (or split set) at path to pf with a
// placeholder digest while the file is hashed, then patches the real digest in.
func importPatched(pf container.PatchFile, path string, o ImportOptions, opts []container.Option) error {
	if o.Name == "" {
		o.Name = path
	}
	f, err := openInput(path, o)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	s, err := fileStream(f, o, nil)
	if err != nil {
		return err
	}
	s.file = f
	defer s.Close()
	set, ok, err := maybeSet(s, path, o, stream.DigestPlaceholder)
	if err != nil {
		return err
	}
	if ok {
		defer set.Close()
		return stream.ReencodePatched(pf, set, ProvFiles, set.(*setStream).digestParts, opts...)
	}
	s.hdr.Metadata.Provenance[ProvSHA256] = stream.DigestPlaceholder
	s.hdr.Metadata.Provenance[ProvSize] = st.Size()
	return stream.ReencodePatched(pf, s, ProvSHA256, func(stop <-chan struct{}) (any, error) {
		d, err := hashFile(f, st.Size(), stop)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Name, err)
		}
		return d, nil
	}, opts...)
}

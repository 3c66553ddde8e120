package stconv

import (
	"io"
	"os"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/safetensors"
	"github.com/apr-go/apr/lib/stream"
)

// ImportFile imports the SafeTensors source at path (a file, a checkpoint directory or
// an index, as Open takes) into an APR file on w, written with opts, and gives the
// bytes of stream.Reencode(w, Open(path, o), nil, false, opts...).
//
// With o.Digest, the SHA-256 of each source file is part of the metadata, which comes first in an APR
// file, so Open reads every source byte once for the digests before the conversion
// starts. ImportFile does not wait when w is a regular file it can rewrite in place
// (container.Patchable: an *os.File or a type embedding one, not opened with
// O_APPEND): it converts at once, with digests of the same length as placeholders,
// while a second goroutine hashes the files; then it writes the real header and
// metadata over the placeholder ones and corrects the whole-file CRC in the footer
// (container.Patcher). Other outputs, and imports without o.Digest, take Open's path. opts must not
// seal (container.WithSealer): a seal authenticates the metadata.
func ImportFile(w io.Writer, path string, o ImportOptions, opts ...container.Option) error {
	return stream.ImportDigested(w, o.Digest, func() (stream.Stream, error) { return Open(path, o) },
		func(pf container.PatchFile) error {
			shards, files, closer, err := openSource(path, o)
			if err != nil {
				return err
			}
			return importPatched(pf, shards, files, closer, o, opts)
		}, opts...)
}

// ImportOpenFile is ImportFile for a SafeTensors file already open as f (a redirected
// stdin, for example), as OpenFile takes it: it takes ownership of f, and name is used
// in messages and the provenance.
func ImportOpenFile(w io.Writer, f *os.File, name string, o ImportOptions, opts ...container.Option) error {
	return stream.ImportDigested(w, o.Digest, func() (stream.Stream, error) { return OpenFile(f, name, o) },
		func(pf container.PatchFile) error {
			sf, err := safetensors.NewFile(f, name)
			if err != nil {
				f.Close()
				return err
			}
			return importPatched(pf, []*safetensors.File{sf}, nil, sf.Close, o, opts)
		}, opts...)
}

// importPatched converts shards to out with placeholder digests while they are
// hashed, then patches the real digests in. It closes the shards (closer) after the
// hashing has stopped.
func importPatched(out container.PatchFile, shards []*safetensors.File, files map[string]any, closer func() error, o ImportOptions, opts []container.Option) error {
	defer closer() // after ReencodePatched, which waits for the hashing
	entries, err := digestFiles(shards, false, nil)
	if err != nil {
		return err
	}
	for _, e := range entries {
		e.(map[string]any)["sha256"] = stream.DigestPlaceholder
	}
	s, err := newFileStreamDigests(shards, files, entries, o)
	if err != nil {
		return err
	}
	return stream.ReencodePatched(out, s, ProvFiles, func(stop <-chan struct{}) (any, error) {
		return digestFiles(shards, true, stop)
	}, opts...)
}

package stream

import (
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/apr-go/apr/lib/container"
)

// DigestPlaceholder stands for a hex SHA-256 digest until ReencodePatched writes the
// real one: the same length, so the metadata's encoded size does not change.
var DigestPlaceholder = strings.Repeat("0", 2*sha256.Size)

// ImportDigested writes to w the APR file of a source whose provenance carries its
// digests when digest is true. Where w can be rewritten in place (container.Patchable)
// patched converts at once with placeholders and patches the digests in
// (ReencodePatched); otherwise the stream that open gives, which has read its digests
// up front when asked, is written to w and closed.
func ImportDigested(w io.Writer, digest bool, open func() (Stream, error), patched func(container.PatchFile) error, opts ...container.Option) error {
	pf, ok := container.Patchable(w)
	if digest && ok {
		return patched(pf)
	}
	s, err := open()
	if err != nil {
		return err
	}
	defer s.Close()
	return Reencode(w, s, nil, false, opts...)
}

// ReencodePatched is Reencode(out, s, nil, false, opts...) for an importer whose
// metadata must carry a digest of its source, which would otherwise have to be read
// twice: s's provenance holds a placeholder of the digest's final encoded length
// under key, digest computes the real value on another goroutine while s is
// converted, and the header and metadata are then rewritten in place with it
// (container.Patcher), the whole-file CRC corrected. The bytes are those of Reencode
// of a stream that had the real digest from the start. digest should give up when
// stop is closed (on an error of the conversion); ReencodePatched returns only after
// digest has. opts must not seal: a seal authenticates the metadata.
func ReencodePatched(out container.PatchFile, s Stream, key string, digest func(stop <-chan struct{}) (any, error), opts ...container.Option) error {
	p, err := container.NewPatcher(out)
	if err != nil {
		return err
	}
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	stop := make(chan struct{})
	go func() {
		v, err := digest(stop)
		done <- result{v, err}
	}()
	if err := Reencode(io.Writer(p), s, nil, false, opts...); err != nil {
		close(stop)
		<-done
		return err
	}
	r := <-done
	if r.err != nil {
		return r.err
	}
	// What Reencode wrote: the stream's header without a signature or licence flag.
	was := s.Header()
	was.Flags &^= container.FlagSigned | container.FlagLicensed
	now := was
	now.Metadata.Provenance = maps.Clone(was.Metadata.Provenance)
	if now.Metadata.Provenance == nil {
		now.Metadata.Provenance = map[string]any{}
	}
	now.Metadata.Provenance[key] = r.v
	if err := p.Patch(was, now, opts...); err != nil {
		return fmt.Errorf("writing the digests: %w", err)
	}
	return nil
}

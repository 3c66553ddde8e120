package stream

import (
	"fmt"
	"io"
	"maps"

	"github.com/apr-go/apr/lib/container"
)

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

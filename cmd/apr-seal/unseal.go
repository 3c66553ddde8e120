package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/stream"
)

func (c *unsealCmd) Run(env *cli.Env) error {
	ids, err := c.Identities()
	if err != nil {
		return err
	}
	u := &lazyUnsealer{ids: ids, pass: &c.PassphraseFlags}
	src, closeIn, err := openInput(env, c.Input, u)
	if err != nil {
		return err
	}
	defer closeIn()
	src, opts, err := c.encoding(src, false)
	if err != nil {
		return err
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if err := stream.Reencode(out, src, nil, true, opts...); err != nil {
		return err
	}
	return out.Commit()
}

// lazyUnsealer asks for a passphrase only when the file is sealed for one and no
// identity file was given, so that 'apr-seal -d < f' just works for passphrase files.
type lazyUnsealer struct {
	ids  []seal.Identity
	pass *cli.PassphraseFlags
}

func (l *lazyUnsealer) Begin(header, metadata, section []byte) (container.TensorOpener, error) {
	si, err := apr.ParseSealInfo(section)
	if err != nil {
		return nil, err
	}
	ids := l.ids
	if l.pass.Wanted() || (len(ids) == 0 && si.Password) {
		if !si.Password {
			return nil, fmt.Errorf("%w: the file is not sealed for a passphrase (%s)", apr.ErrDecryptionFailed, describe(si))
		}
		pw, err := l.pass.Read("Passphrase: ", false)
		if err != nil {
			return nil, err
		}
		ids = append(ids, seal.NewPasswordIdentity(pw))
	}
	if len(ids) == 0 {
		return nil, cli.Usagef("the file is sealed for %s: give -i IDENTITY", describe(si))
	}
	return apr.NewUnsealer(ids...).Begin(header, metadata, section)
}

func describe(si *apr.SealInfo) string {
	var parts []string
	if si.X25519 > 0 {
		parts = append(parts, fmt.Sprintf("%d X25519 recipient(s)", si.X25519))
	}
	if si.Password {
		parts = append(parts, "a passphrase")
	}
	for _, t := range si.OtherType {
		parts = append(parts, "a "+t+" recipient")
	}
	return strings.Join(parts, " and ")
}

// openInput opens the input as a verified tensor stream; with u, as a sealed one.
func openInput(env *cli.Env, path string, u container.Unsealer) (apr.Stream, func(), error) {
	r, name, err := env.Input(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(r, 1<<16)
	var s apr.Stream
	if u == nil {
		if h, _ := br.Peek(container.HeaderSize); len(h) == container.HeaderSize && string(h[:4]) == "APRN" &&
			h[4] == container.MajorVersion && container.Flags(binary.LittleEndian.Uint32(h[8:]))&container.FlagEncrypted != 0 {
			err = errors.New("the input is sealed already (unseal it with -d first)")
		} else {
			s, err = apr.OpenStream(br)
		}
	} else {
		s, err = apr.OpenSealedStreamWith(br, u)
	}
	if err != nil {
		r.Close()
		var usage *cli.UsageError
		if errors.As(err, &usage) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, func() { s.Close(); r.Close() }, nil
}

// encoding picks the writer options: the chosen compression, or with auto the
// input's, as its first tensor shows it (a compressed input whose first tensor is
// stored plain gets zstd).
func (f *ioFlags) encoding(src apr.Stream, shuffle bool) (apr.Stream, []container.Option, error) {
	opts, err := f.Options()
	if err != nil {
		return nil, nil, err
	}
	if f.Compress != "auto" {
		c, err := container.ParseCompression(f.Compress)
		if err != nil {
			return nil, nil, cli.Usagef("%v", err)
		}
		if shuffle && c == container.CompressNone {
			return nil, nil, cli.Usagef("--shuffle needs a codec (-c zstd, zstd-max or lz4)")
		}
		return src, append(opts, container.WithCompression(c), container.WithShuffle(shuffle)), nil
	}
	info, r, err := src.Next()
	p := &peeked{Stream: src, info: info, r: r, err: err}
	if err != nil {
		return p, opts, nil // Next reports it
	}
	c := container.CompressNone
	if src.Header().Flags&container.FlagCompressed != 0 || shuffle {
		c = container.CompressZstd
	}
	if t, ok := r.(*container.Tensor); ok {
		switch t.Codec {
		case container.CodecZstd:
			c = container.CompressZstd
		case container.CodecLZ4:
			c = container.CompressLZ4
		}
		shuffle = shuffle || t.Shuffle
		if t.ChunkSize != 0 {
			opts = append(opts, container.WithChunkSize(int(t.ChunkSize)))
		}
	}
	return p, append(opts, container.WithCompression(c), container.WithShuffle(shuffle && c != container.CompressNone)), nil
}

// peeked is a stream whose first tensor was already taken.
type peeked struct {
	apr.Stream
	info container.TensorInfo
	r    io.Reader
	err  error
	done bool
}

func (p *peeked) Next() (container.TensorInfo, io.Reader, error) {
	if !p.done {
		p.done = true
		return p.info, p.r, p.err
	}
	return p.Stream.Next()
}

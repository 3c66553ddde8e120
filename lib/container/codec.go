package container

import (
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression is a writer's choice of codec and level.
type Compression int

const (
	CompressNone    Compression = iota // plain, memory-mappable data
	CompressZstd                       // zstd at level 3 (the library's default level)
	CompressZstdMax                    // zstd at the library's strongest level
	CompressLZ4                        // LZ4 block format, fastest to decode
)

var compressionNames = []string{"none", "zstd", "zstd-max", "lz4"}

func (c Compression) String() string {
	if c >= 0 && int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// ParseCompression accepts none, zstd, zstd-max and lz4.
func ParseCompression(s string) (Compression, error) {
	for i, n := range compressionNames {
		if n == s {
			return Compression(i), nil
		}
	}
	return 0, fmt.Errorf("unknown compression %q (want none, zstd, zstd-max or lz4)", s)
}

func (c Compression) codec() Codec {
	switch c {
	case CompressZstd, CompressZstdMax:
		return CodecZstd
	case CompressLZ4:
		return CodecLZ4
	}
	return CodecNone
}

// The zstd encoders and decoder are safe for concurrent EncodeAll/DecodeAll calls and
// costly to build, so each is made once. A window larger than a default chunk buys
// nothing (each chunk is compressed alone) and costs memory per worker. The strongest
// level keeps about 80 MiB of match tables per encoder, so zstd-max uses one encoder
// (one core) to keep a run's memory near 100 MiB whatever the worker count.
var (
	zstdOnce              sync.Once
	zstdDefault, zstdBest *zstd.Encoder
	zstdDec               *zstd.Decoder
	zstdErr               error
)

func zstdCodecs() error {
	zstdOnce.Do(func() {
		zstdDefault, zstdErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(DefaultChunk))
		if zstdErr != nil {
			return
		}
		zstdBest, zstdErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(DefaultChunk), zstd.WithEncoderConcurrency(1))
		if zstdErr != nil {
			return
		}
		zstdDec, zstdErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxChunk), zstd.WithDecodeAllCapLimit(true))
	})
	return zstdErr
}

// shuffle groups the bytes of each element by position: all first bytes, then all
// second bytes, and so on. Float weights compress far better this way.
func shuffle(dst, src []byte, esz int) {
	n := len(src) / esz
	for i := 0; i < n; i++ {
		for j := 0; j < esz; j++ {
			dst[j*n+i] = src[i*esz+j]
		}
	}
}

func unshuffle(dst, src []byte, esz int) {
	n := len(src) / esz
	for j := 0; j < esz; j++ {
		col := src[j*n : (j+1)*n]
		for i, v := range col {
			dst[i*esz+j] = v
		}
	}
}

// encodeChunk returns one chunk frame: u32 payload length (bit 31 set when the payload
// is the raw chunk), u32 CRC32 of the payload, payload.
func encodeChunk(raw []byte, c Compression, esz int) ([]byte, error) {
	in := raw
	if esz > 1 {
		in = make([]byte, len(raw))
		shuffle(in, raw, esz)
	}
	out := make([]byte, frameHeader, frameHeader+len(raw)+len(raw)/255+16)
	switch c {
	case CompressZstd, CompressZstdMax:
		if err := zstdCodecs(); err != nil {
			return nil, err
		}
		enc := zstdDefault
		if c == CompressZstdMax {
			enc = zstdBest
		}
		out = enc.EncodeAll(in, out)
	case CompressLZ4:
		out = out[:cap(out)]
		n, err := lz4.CompressBlock(in, out[frameHeader:], nil)
		if err != nil {
			return nil, err
		}
		if n == 0 { // incompressible
			n = len(raw) + 1
		}
		out = out[:frameHeader+n]
	default:
		return nil, fmt.Errorf("compression %v has no chunk encoder", c)
	}
	payload := out[frameHeader:]
	flag := uint32(0)
	if len(payload) >= len(raw) {
		payload = raw
		out = append(out[:frameHeader], raw...)
		flag = rawChunkFlag
	}
	le.PutUint32(out, uint32(len(payload))|flag)
	le.PutUint32(out[4:], crc32.ChecksumIEEE(payload))
	return out, nil
}

// decodeChunk verifies a chunk payload against its CRC and decodes it into exactly
// rawLen bytes.
func decodeChunk(e *Entry, idx int64, payload []byte, raw bool, wantCRC uint32, rawLen int, off int64) ([]byte, error) {
	if got := crc32.ChecksumIEEE(payload); got != wantCRC {
		return nil, &ChecksumError{What: fmt.Sprintf("chunk %d", idx), Tensor: e.Name, Offset: off, Expected: wantCRC, Actual: got}
	}
	if raw {
		if len(payload) != rawLen {
			return nil, &FormatError{Offset: off, Tensor: e.Name, Msg: fmt.Sprintf("raw chunk %d is %d bytes, expected %d", idx, len(payload), rawLen)}
		}
		return payload, nil
	}
	out := make([]byte, 0, rawLen)
	var err error
	switch e.Codec {
	case CodecZstd:
		if err = zstdCodecs(); err == nil {
			out, err = zstdDec.DecodeAll(payload, out)
		}
	case CodecLZ4:
		var n int
		n, err = lz4.UncompressBlock(payload, out[:rawLen])
		out = out[:max(n, 0)]
	default:
		err = fmt.Errorf("codec %v", e.Codec)
	}
	if err != nil || len(out) != rawLen {
		msg := fmt.Sprintf("chunk %d does not decode to %d bytes", idx, rawLen)
		if err != nil {
			msg += ": " + err.Error()
		}
		return nil, &FormatError{Offset: off, Tensor: e.Name, Msg: msg}
	}
	if e.Shuffle {
		plain := make([]byte, rawLen)
		unshuffle(plain, out, e.DType.Info().BlockBytes)
		out = plain
	}
	return out, nil
}

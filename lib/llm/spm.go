package llm

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Token types, as SentencePiece numbers them and as GGUF's tokenizer.ggml.token_type
// stores them.
const (
	TokenNormal      = 1
	TokenUnknown     = 2
	TokenControl     = 3
	TokenUserDefined = 4
	TokenUnused      = 5
	TokenByte        = 6
)

// MaxPieces caps the vocabulary of a tokenizer model (the largest published ones hold
// about 260,000 pieces).
const MaxPieces = 1 << 21

// Piece is one entry of a SentencePiece vocabulary.
type Piece struct {
	Text  string
	Score float32
	Type  int32
}

// ParseSentencePiece reads the pieces of a SentencePiece model (tokenizer.model, a
// serialized ModelProto): field 1 holds the pieces, each with its text (1), score (2)
// and type (3, NORMAL when absent). Every other field is skipped. Errors give the byte
// offset.
func ParseSentencePiece(b []byte) ([]Piece, error) {
	var pieces []Piece
	p := protoReader{b: b}
	for !p.done() {
		field, wire, err := p.key()
		if err != nil {
			return nil, err
		}
		if field != 1 || wire != 2 {
			if err := p.skip(wire); err != nil {
				return nil, err
			}
			continue
		}
		at := p.off
		msg, err := p.bytes()
		if err != nil {
			return nil, err
		}
		if len(pieces) == MaxPieces {
			return nil, fmt.Errorf("tokenizer.model: more than %d pieces", MaxPieces)
		}
		pc, err := parsePiece(msg, at)
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, pc)
	}
	if len(pieces) == 0 {
		return nil, fmt.Errorf("tokenizer.model: no pieces (not a SentencePiece model?)")
	}
	return pieces, nil
}

func parsePiece(b []byte, base int) (Piece, error) {
	pc := Piece{Type: TokenNormal}
	p := protoReader{b: b, base: base}
	for !p.done() {
		field, wire, err := p.key()
		if err != nil {
			return pc, err
		}
		switch {
		case field == 1 && wire == 2:
			s, err := p.bytes()
			if err != nil {
				return pc, err
			}
			pc.Text = string(s)
		case field == 2 && wire == 5:
			if len(p.b)-p.off < 4 {
				return pc, p.errorf("score cut short")
			}
			pc.Score = math.Float32frombits(binary.LittleEndian.Uint32(p.b[p.off:]))
			p.off += 4
		case field == 3 && wire == 0:
			v, err := p.varint()
			if err != nil {
				return pc, err
			}
			if v < TokenNormal || v > TokenByte {
				return pc, p.errorf("piece %q has type %d, not 1..6", pc.Text, v)
			}
			pc.Type = int32(v)
		default:
			if err := p.skip(wire); err != nil {
				return pc, err
			}
		}
	}
	return pc, nil
}

// protoReader reads protobuf's wire format from b; base is b's offset in the file,
// for errors.
type protoReader struct {
	b         []byte
	off, base int
}

func (p *protoReader) done() bool { return p.off >= len(p.b) }

func (p *protoReader) errorf(format string, args ...any) error {
	return fmt.Errorf("tokenizer.model: offset %d: %s", p.base+p.off, fmt.Sprintf(format, args...))
}

func (p *protoReader) varint() (uint64, error) {
	v, n := binary.Uvarint(p.b[p.off:])
	if n <= 0 {
		return 0, p.errorf("bad varint")
	}
	p.off += n
	return v, nil
}

func (p *protoReader) key() (field uint64, wire uint64, err error) {
	k, err := p.varint()
	return k >> 3, k & 7, err
}

func (p *protoReader) bytes() ([]byte, error) {
	n, err := p.varint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(p.b)-p.off) {
		return nil, p.errorf("field of %d bytes runs past the end", n)
	}
	s := p.b[p.off : p.off+int(n)]
	p.off += int(n)
	return s, nil
}

func (p *protoReader) skip(wire uint64) error {
	var n int
	switch wire {
	case 0:
		_, err := p.varint()
		return err
	case 1:
		n = 8
	case 2:
		_, err := p.bytes()
		return err
	case 5:
		n = 4
	default:
		return p.errorf("unsupported wire type %d", wire)
	}
	if len(p.b)-p.off < n {
		return p.errorf("field cut short")
	}
	p.off += n
	return nil
}

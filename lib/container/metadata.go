package container

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Metadata is the file's MessagePack map. The well-known keys have fields; any other
// key is kept in Extra so that re-encoding a file never drops what a newer writer put
// there. Values are plain: nil, bool, integers, floats, string, []byte, []any and
// map[string]any.
type Metadata struct {
	Name            string         // "name"
	Description     string         // "description"
	CreatedAt       string         // "created_at", RFC 3339 UTC
	Producer        string         // "producer", the program and version that wrote the file
	License         string         // "license", an SPDX id or free text (the signed license is a block)
	Hyperparameters map[string]any // "hyperparameters"
	Metrics         map[string]any // "metrics"
	Custom          map[string]any // "custom"
	ModelConfig     map[string]any // "model_config"
	Provenance      map[string]any // "provenance": source format and digest, quantization, distillation
	Extra           map[string]any // every other key
}

// CreatedAt returns the time to stamp into a new file: SOURCE_DATE_EPOCH when set (so
// builds are reproducible), otherwise now, as RFC 3339 UTC with second precision.
func CreatedAt() (string, error) {
	if s, ok := os.LookupEnv("SOURCE_DATE_EPOCH"); ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return "", fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a non-negative integer", s)
		}
		return time.Unix(n, 0).UTC().Format(time.RFC3339), nil
	}
	return time.Now().UTC().Format(time.RFC3339), nil
}

func (m *Metadata) toMap() map[string]any {
	out := make(map[string]any, len(m.Extra)+10)
	for k, v := range m.Extra {
		out[k] = v
	}
	str := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	mp := func(k string, v map[string]any) {
		if len(v) > 0 {
			out[k] = v
		}
	}
	str("name", m.Name)
	str("description", m.Description)
	str("created_at", m.CreatedAt)
	str("producer", m.Producer)
	str("license", m.License)
	mp("hyperparameters", m.Hyperparameters)
	mp("metrics", m.Metrics)
	mp("custom", m.Custom)
	mp("model_config", m.ModelConfig)
	mp("provenance", m.Provenance)
	return out
}

// Encode returns the deterministic MessagePack encoding: map keys sorted at every
// level, integers in their shortest form, so equal metadata gives equal bytes.
func (m *Metadata) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	enc.UseCompactInts(true)
	if err := enc.Encode(m.toMap()); err != nil {
		return nil, fmt.Errorf("encoding metadata: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeMetadata parses metadata bytes. It checks the structure first (nesting depth,
// counts against the bytes present) so hostile input cannot exhaust stack or memory.
func DecodeMetadata(b []byte) (*Metadata, error) {
	if err := checkMsgpack(b); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	rd := bytes.NewReader(b)
	dec := msgpack.NewDecoder(rd)
	dec.UseLooseInterfaceDecoding(true)
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if rd.Len() != 0 {
		return nil, fmt.Errorf("metadata: trailing bytes after the map")
	}
	return MetadataFromMap(raw)
}

// MetadataFromMap builds Metadata from a decoded map, checking the types of the
// well-known keys; unknown keys go to Extra.
func MetadataFromMap(raw map[string]any) (*Metadata, error) {
	m := &Metadata{Extra: map[string]any{}}
	for k, v := range raw {
		ok := true
		switch k {
		case "name":
			m.Name, ok = v.(string)
		case "description":
			m.Description, ok = v.(string)
		case "created_at":
			m.CreatedAt, ok = v.(string)
		case "producer":
			m.Producer, ok = v.(string)
		case "license":
			m.License, ok = v.(string)
		case "hyperparameters":
			m.Hyperparameters, ok = v.(map[string]any)
		case "metrics":
			m.Metrics, ok = v.(map[string]any)
		case "custom":
			m.Custom, ok = v.(map[string]any)
		case "model_config":
			m.ModelConfig, ok = v.(map[string]any)
		case "provenance":
			m.Provenance, ok = v.(map[string]any)
		default:
			m.Extra[k] = v
		}
		if !ok {
			return nil, fmt.Errorf("metadata: key %q has type %T", k, v)
		}
	}
	if len(m.Extra) == 0 {
		m.Extra = nil
	}
	return m, nil
}

// Keys returns every top-level key present, sorted.
func (m *Metadata) Keys() []string {
	mp := m.toMap()
	keys := make([]string, 0, len(mp))
	for k := range mp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Map returns the metadata as one map, as it is stored.
func (m *Metadata) Map() map[string]any { return m.toMap() }

const maxMsgpackDepth = 64

// checkMsgpack walks one MessagePack value without building it: every length must fit
// in the bytes that remain, nesting stays under maxMsgpackDepth, and the value must be
// a map that uses all of b.
func checkMsgpack(b []byte) error {
	if len(b) == 0 || !(b[0]>>4 == 0x8 || b[0] == 0xde || b[0] == 0xdf) {
		return fmt.Errorf("not a MessagePack map")
	}
	// pending[i] is the number of values still to read at depth i.
	pending := []uint64{1}
	p := 0
	need := func(n uint64) error {
		if n > uint64(len(b)-p) {
			return fmt.Errorf("value at byte %d needs %d bytes, %d remain", p, n, len(b)-p)
		}
		return nil
	}
	uint := func(n int) (uint64, error) {
		if err := need(uint64(n)); err != nil {
			return 0, err
		}
		var v uint64
		for i := 0; i < n; i++ {
			v = v<<8 | uint64(b[p+i])
		}
		p += n
		return v, nil
	}
	for len(pending) > 0 {
		if pending[len(pending)-1] == 0 {
			pending = pending[:len(pending)-1]
			continue
		}
		pending[len(pending)-1]--
		if err := need(1); err != nil {
			return err
		}
		c := b[p]
		p++
		var skip, items uint64
		var err error
		container := false
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c>>4 == 0x8:
			items, container = 2*uint64(c&0x0f), true
		case c>>4 == 0x9:
			items, container = uint64(c&0x0f), true
		case c>>5 == 0x5:
			skip = uint64(c & 0x1f)
		case c == 0xc4 || c == 0xd9:
			skip, err = uint(1)
		case c == 0xc5 || c == 0xda:
			skip, err = uint(2)
		case c == 0xc6 || c == 0xdb:
			skip, err = uint(4)
		case c == 0xc7, c == 0xc8, c == 0xc9: // ext 8/16/32
			n := 1 << (c - 0xc7)
			skip, err = uint(n)
			skip++
		case c == 0xca, c == 0xce, c == 0xd2:
			skip = 4
		case c == 0xcb, c == 0xcf, c == 0xd3:
			skip = 8
		case c == 0xcc, c == 0xd0:
			skip = 1
		case c == 0xcd, c == 0xd1:
			skip = 2
		case c >= 0xd4 && c <= 0xd8: // fixext 1,2,4,8,16
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc:
			items, err = uint(2)
			container = true
		case c == 0xdd:
			items, err = uint(4)
			container = true
		case c == 0xde:
			items, err = uint(2)
			items *= 2
			container = true
		case c == 0xdf:
			items, err = uint(4)
			items *= 2
			container = true
		default:
			return fmt.Errorf("byte %d: 0x%02x is not a MessagePack type", p-1, c)
		}
		if err != nil {
			return err
		}
		if err := need(skip); err != nil {
			return err
		}
		p += int(skip)
		if container && items > 0 {
			// Every item takes at least one byte.
			if items > uint64(len(b)-p) || items > math.MaxInt32 {
				return fmt.Errorf("container at byte %d claims %d items, %d bytes remain", p, items, len(b)-p)
			}
			if len(pending) >= maxMsgpackDepth {
				return fmt.Errorf("nesting deeper than %d", maxMsgpackDepth)
			}
			pending = append(pending, items)
		}
	}
	if p != len(b) {
		return fmt.Errorf("%d trailing bytes", len(b)-p)
	}
	return nil
}

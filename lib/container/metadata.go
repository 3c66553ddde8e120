package container

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/apr-go/apr/lib/internal/mpwalk"
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
// Metadata over MaxMetadata is an error as soon as the encoding passes the cap, so a
// hostile source (a SafeTensors header of long tensor names) never costs a buffer
// larger than the cap.
func (m *Metadata) Encode() ([]byte, error) {
	var buf cappedBuffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	enc.UseCompactInts(true)
	if err := enc.Encode(m.toMap()); err != nil {
		if errors.Is(err, errMetadataCap) {
			return nil, err
		}
		return nil, fmt.Errorf("encoding metadata: %w", err)
	}
	return buf.b, nil
}

var errMetadataCap = fmt.Errorf("metadata is over the cap of %d bytes", MaxMetadata)

// cappedBuffer collects an encoding of at most MaxMetadata bytes.
type cappedBuffer struct{ b []byte }

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if len(c.b)+len(p) > MaxMetadata {
		return 0, errMetadataCap
	}
	if len(c.b)+len(p) > cap(c.b) {
		nb := make([]byte, len(c.b), min(MaxMetadata, max(2*cap(c.b), len(c.b)+len(p), 4096)))
		copy(nb, c.b)
		c.b = nb
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// DecodeMetadata parses metadata bytes. It checks the structure first (nesting depth,
// counts against the bytes present) so hostile input cannot exhaust stack or memory.
func DecodeMetadata(b []byte) (*Metadata, error) {
	if err := mpwalk.Check(b); err != nil {
		var e *mpwalk.Error
		if errors.As(err, &e) {
			return nil, fmt.Errorf("metadata: byte %d: %w", e.Pos, err)
		}
		return nil, fmt.Errorf("metadata: %w", err)
	}
	rd := bytes.NewReader(b)
	dec := msgpack.NewDecoder(rd)
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if rd.Len() != 0 {
		return nil, fmt.Errorf("metadata: trailing bytes after the map")
	}
	return MetadataFromMap(plain(raw).(map[string]any))
}

// plain gives decoded values their documented types: every integer int64 (uint64 when
// it is encoded unsigned), floats as they were encoded, float32 included, so that
// re-encoding metadata gives back its bytes (the decoder's loose mode would widen a
// float32, a GGUF key's f32, to float64 and change the file).
func plain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = plain(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plain(e)
		}
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint8:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint32:
		return uint64(x)
	case uint:
		return uint64(x)
	}
	return v
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

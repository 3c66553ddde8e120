package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apr-go/apr/lib/printable"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/quant"
)

type inspectCmd struct {
	cli.InputFlag `set:"input_help=APR or aprender file ('-': stdin, read through to the end)."`
	JSON          bool `help:"Print JSON instead of text."`
	Quant         bool `name:"quantization" help:"Also show, per tensor, the type, bits per weight and sizes as F32 and as stored."`
}

func (c *inspectCmd) Run(env *cli.Env) error {
	var info *apr.Info
	var err error
	name := c.Input
	if c.Input == "-" {
		name = "stdin"
		info, err = apr.InspectReader(env.Stdin)
	} else {
		info, err = apr.Inspect(c.Input)
	}
	if err != nil {
		if c.Input == "-" {
			return fmt.Errorf("stdin: %w", err)
		}
		return err
	}
	if c.JSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		out := jsonInfo(name, info)
		if c.Quant {
			out["quantization"] = quant.Describe(info.Info)
		}
		return enc.Encode(out)
	}
	printInfo(env.Stdout, name, info)
	if c.Quant {
		fmt.Fprintln(env.Stdout, "quantization:")
		return quant.Describe(info.Info).WriteTable(env.Stdout)
	}
	return nil
}

type jsonTensor struct {
	Name       string  `json:"name"`
	DType      string  `json:"dtype"`
	Shape      []int64 `json:"shape"`
	RawSize    int64   `json:"raw_size"`
	StoredSize int64   `json:"stored_size"`
	Codec      string  `json:"codec"`
	Shuffle    bool    `json:"shuffle,omitempty"`
	Encrypted  bool    `json:"encrypted,omitempty"`
	CRC32      string  `json:"crc32,omitempty"`
	Offset     int64   `json:"data_offset,omitempty"`
}

func jsonInfo(name string, info *apr.Info) map[string]any {
	var tensors []jsonTensor
	for _, e := range info.Tensors {
		t := jsonTensor{Name: e.Name, DType: e.DType.String(), Shape: e.Shape, RawSize: e.RawSize, StoredSize: e.StoredSize,
			Codec: e.Codec.String(), Shuffle: e.Shuffle, Encrypted: e.Encrypted, Offset: e.DataOffset}
		if t.Shape == nil {
			t.Shape = []int64{}
		}
		if info.Format == "APR v2" {
			t.CRC32 = fmt.Sprintf("%08x", e.CRC)
		}
		tensors = append(tensors, t)
	}
	blocks := []map[string]any{}
	for _, b := range info.Blocks {
		bi := apr.DescribeBlock(b)
		jb := map[string]any{"kind": bi.Kind, "size": bi.Size, "key_id": bi.KeyID, "verified": false}
		if !bi.Time.IsZero() {
			jb["time"] = bi.Time.UTC().Format(time.RFC3339)
		}
		if bi.Comment != "" {
			jb["comment"] = bi.Comment
		}
		if bi.Licensee != "" {
			jb["licensee"], jb["tier"], jb["seats"] = bi.Licensee, bi.Tier, bi.Seats
			if !bi.ExpiresAt.IsZero() {
				jb["expires_at"] = bi.ExpiresAt.UTC().Format(time.RFC3339)
			}
		}
		if bi.Err != nil {
			jb["error"] = bi.Err.Error()
		}
		blocks = append(blocks, jb)
	}
	out := map[string]any{
		"file": name, "format": info.Format, "version": fmt.Sprintf("%d.%d", info.Major, info.Minor),
		"model_type": info.Type.String(), "model_type_code": uint16(info.Type),
		"flags": flagList(info.Flags), "size": info.Size, "metadata": jsonSafe(info.Metadata.Map()),
		"tensors": tensors, "blocks": blocks,
	}
	if info.Seal != nil {
		out["seal"] = jsonSeal(info.Seal)
	}
	return out
}

// jsonSeal says who can open a sealed file: recipient types, password, stanza count.
func jsonSeal(section []byte) map[string]any {
	si, err := apr.ParseSealInfo(section)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	m := map[string]any{"stanzas": si.Stanzas, "x25519_recipients": si.X25519, "password": si.Password}
	if p := si.Argon2id; p != nil {
		m["argon2id"] = map[string]any{"time": p.Time, "memory_kib": p.MemoryKiB, "threads": p.Threads}
	}
	if len(si.OtherType) > 0 {
		m["other_types"] = si.OtherType
	}
	return m
}

// sealText is the one-line summary of who can open a sealed file.
func sealText(section []byte) string {
	si, err := apr.ParseSealInfo(section)
	if err != nil {
		return "unreadable seal section: " + err.Error()
	}
	var parts []string
	if si.X25519 > 0 {
		parts = append(parts, fmt.Sprintf("%d X25519 recipient(s)", si.X25519))
	}
	if p := si.Argon2id; p != nil {
		parts = append(parts, fmt.Sprintf("a password (argon2id t=%d, m=%s, p=%d)", p.Time, bytesText(int64(p.MemoryKiB)<<10), p.Threads))
	} else if si.Password {
		parts = append(parts, "a password")
	}
	for _, t := range si.OtherType {
		parts = append(parts, "a "+t+" recipient")
	}
	return fmt.Sprintf("%s; %d stanza(s)", strings.Join(parts, ", "), si.Stanzas)
}

func flagList(f container.Flags) []string {
	if f == 0 {
		return []string{}
	}
	return strings.Split(f.String(), ",")
}

// jsonSafe replaces what JSON cannot hold (NaN, infinities) with strings.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
	case float32:
		return jsonSafe(float64(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonSafe(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonSafe(e)
		}
		return out
	}
	return v
}

func printInfo(w io.Writer, name string, info *apr.Info) {
	fmt.Fprintf(w, "%s: %s, version %d.%d, %s\n", printable.String(name), info.Format, info.Major, info.Minor, bytesText(info.Size))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  type\t%v (0x%04X)\n", info.Type, uint16(info.Type))
	fmt.Fprintf(tw, "  flags\t%v\n", info.Flags)
	if info.Seal != nil {
		fmt.Fprintf(tw, "  sealed for\t%s\n", sealText(info.Seal))
	}
	md := info.Metadata.Map()
	for _, k := range slices.Sorted(maps.Keys(md)) {
		printValue(tw, "  ", k, md[k])
	}
	for _, b := range info.Blocks {
		fmt.Fprintf(tw, "  block\t%s\n", apr.DescribeBlock(b))
	}
	tw.Flush()
	var raw, stored int64
	for _, e := range info.Tensors {
		raw += e.RawSize
		stored += e.StoredSize
	}
	fmt.Fprintf(w, "tensors: %d, %s raw, %s stored\n", len(info.Tensors), bytesText(raw), bytesText(stored))
	if len(info.Tensors) == 0 {
		return
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tDTYPE\tSHAPE\tRAW\tSTORED\tCODEC")
	for _, e := range info.Tensors {
		codec := e.Codec.String()
		if e.Shuffle {
			codec += "+shuffle"
		}
		if e.Encrypted {
			codec += "+sealed"
		}
		fmt.Fprintf(tw, "  %s\t%v\t%v\t%s\t%s\t%s\n", printable.String(e.Name), e.DType, e.Shape, bytesText(e.RawSize), bytesText(e.StoredSize), codec)
	}
	tw.Flush()
}

// printValue prints one metadata entry: on one line when it is short, else a map
// as one line per entry, indented (GGUF key-value sets, Hugging Face configs).
func printValue(tw io.Writer, indent, key string, v any) {
	line := summary(v, 0)
	m, ok := v.(map[string]any)
	if !ok || len(line) <= 100 {
		fmt.Fprintf(tw, "%s%s\t%s\n", indent, printable.String(key), line)
		return
	}
	fmt.Fprintf(tw, "%s%s\t(%d entries)\n", indent, printable.String(key), len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		printValue(tw, indent+"  ", k, m[k])
	}
}

// summary renders a metadata value on one line, shortening long arrays and strings so
// that, say, a 32,000-entry tokenizer vocabulary prints as "[32000 items: ...]".
func summary(v any, depth int) string {
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = printable.String(k) + "=" + summary(x[k], depth+1)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		if len(x) > 8 {
			return fmt.Sprintf("[%d items: %s, %s, ...]", len(x), summary(x[0], depth+1), summary(x[1], depth+1))
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = summary(e, depth+1)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case string:
		if len(x) > 80 {
			return fmt.Sprintf("%q... (%d bytes)", x[:60], len(x))
		}
		if depth > 0 {
			return fmt.Sprintf("%q", x)
		}
		return printable.String(x)
	case []byte:
		return fmt.Sprintf("<%d bytes>", len(x))
	}
	return fmt.Sprint(v)
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

package safetensors

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

func u8spec(name string, n int64) TensorSpec { return TensorSpec{name, dtype.U8, []int64{n}} }

func shardContents(p *ShardPlan) string {
	var parts []string
	for _, s := range p.Shards {
		var names []string
		for _, t := range s.Header.Tensors {
			names = append(names, t.Name)
		}
		parts = append(parts, s.File+":"+strings.Join(names, ","))
	}
	return strings.Join(parts, " ")
}

// TestPlanShards follows huggingface_hub's documented example: sizes [6,6,2,6,2,2]
// with a limit of 10 give [6], [6+2], [6+2+2]; a tensor over the limit gets its own
// shard, placed before the shard still being filled.
func TestPlanShards(t *testing.T) {
	specs := []TensorSpec{u8spec("a", 6), u8spec("b", 6), u8spec("c", 2), u8spec("d", 6), u8spec("e", 2), u8spec("f", 2)}
	p, err := PlanShards(specs, 10, Metadata{{"format", "pt"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "model-00001-of-00003.safetensors:a model-00002-of-00003.safetensors:b,c model-00003-of-00003.safetensors:d,e,f"
	if got := shardContents(p); got != want {
		t.Errorf("shards\n got %s\nwant %s", got, want)
	}
	if p.TotalSize != 24 || p.Index == nil {
		t.Fatalf("total %d, index %v", p.TotalSize, p.Index)
	}
	if ts, ok := p.Index.TotalSize(); !ok || ts != 24 {
		t.Errorf("index total_size %d %v", ts, ok)
	}

	p, err = PlanShards([]TensorSpec{u8spec("x", 3), u8spec("big", 20), u8spec("y", 3)}, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := shardContents(p), "model-00001-of-00002.safetensors:big model-00002-of-00002.safetensors:x,y"; got != want {
		t.Errorf("oversize tensor: got %s, want %s", got, want)
	}

	p, err = PlanShards([]TensorSpec{u8spec("x", 3)}, 10, nil)
	if err != nil || len(p.Shards) != 1 || p.Shards[0].File != SingleFileName || p.Index != nil {
		t.Errorf("single shard: %+v %v", p, err)
	}
	if _, err := PlanShards(specs, 0, nil); !errors.Is(err, InvalidTensor) {
		t.Errorf("zero limit: %v", err)
	}
	if _, err := PlanShards([]TensorSpec{u8spec("x", 1), u8spec("x", 1)}, 10, nil); !errors.Is(err, InvalidTensor) {
		t.Errorf("duplicate: %v", err)
	}
}

func TestIndexMarshal(t *testing.T) {
	ix := &Index{
		Metadata:  []IndexMeta{{"total_size", "24"}, {"total_parameters", "6"}},
		WeightMap: []WeightEntry{{"é\u2028\x7f\"\\\n😀", "model-00002-of-00002.safetensors"}, {"a", "model-00001-of-00002.safetensors"}},
	}
	want := `{
  "metadata": {
    "total_parameters": 6,
    "total_size": 24
  },
  "weight_map": {
    "a": "model-00001-of-00002.safetensors",
    "\u00e9\u2028\u007f\"\\\n\ud83d\ude00": "model-00002-of-00002.safetensors"
  }
}
`
	if got := string(ix.Marshal()); got != want {
		t.Errorf("Marshal\n got %s\nwant %s", got, want)
	}
	back, err := ParseIndex([]byte(want))
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Marshal()) != want {
		t.Errorf("parse+marshal is not the identity:\n%s", back.Marshal())
	}
	if got := string((&Index{}).Marshal()); got != "{\n  \"metadata\": {},\n  \"weight_map\": {}\n}\n" {
		t.Errorf("empty index %q", got)
	}
}

func TestParseIndexErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"not an object":      `[]`,
		"no weight_map":      `{"metadata":{}}`,
		"path separator":     `{"weight_map":{"a":"../x.safetensors"}}`,
		"subdirectory":       `{"weight_map":{"a":"sub/x.safetensors"}}`,
		"backslash":          `{"weight_map":{"a":"sub\\x.safetensors"}}`,
		"absolute":           `{"weight_map":{"a":"/etc/passwd"}}`,
		"dot dot":            `{"weight_map":{"a":".."}}`,
		"empty file name":    `{"weight_map":{"a":""}}`,
		"drive":              `{"weight_map":{"a":"C:x.safetensors"}}`,
		"file not a string":  `{"weight_map":{"a":1}}`,
		"tensor twice":       `{"weight_map":{"a":"x.safetensors","a":"x.safetensors"}}`,
		"weight_map twice":   `{"weight_map":{},"weight_map":{}}`,
		"metadata not map":   `{"metadata":1,"weight_map":{}}`,
		"trailing garbage":   `{"weight_map":{}} x`,
		"invalid UTF-8":      "{\"weight_map\":{\"\xff\":\"x\"}}",
		"metadata key twice": `{"metadata":{"k":1,"k":2},"weight_map":{}}`,
	} {
		if _, err := ParseIndex([]byte(doc)); !errors.Is(err, InvalidIndex) {
			t.Errorf("%s: got %v, want InvalidIndex", name, err)
		}
	}
	ix, err := ParseIndex([]byte(`{"metadata":null,"extra":[1,{"x":2}],"weight_map":{"b":"s.safetensors","a":"s.safetensors"}}`))
	if err != nil || len(ix.WeightMap) != 2 || ix.WeightMap[0].Tensor != "a" {
		t.Errorf("ignored key / sorting: %+v %v", ix, err)
	}
}

// TestShardedRoundTrip writes a sharded checkpoint and opens it again; then breaks it
// in each way OpenCheckpoint must notice.
func TestShardedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var specs []TensorSpec
	data := map[string][]byte{}
	for i := 0; i < 7; i++ {
		name := fmt.Sprintf("layer.%d.weight", i)
		s := TensorSpec{name, dtype.F32, []int64{int64(i + 1), 3}}
		specs = append(specs, s)
		n, _ := SpecSize(s)
		d := make([]byte, n)
		for j := range d {
			d[j] = byte(i*31 + j)
		}
		data[name] = d
	}
	plan, err := PlanShards(specs, 40, Metadata{{"format", "pt"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Shards) < 3 {
		t.Fatalf("expected several shards, got %d", len(plan.Shards))
	}
	if err := plan.WriteDir(dir, func(ti TensorInfo) (io.Reader, error) { return bytes.NewReader(data[ti.Name]), nil }); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Shards) != len(plan.Shards) || c.Index == nil {
		t.Fatalf("%d shards opened", len(c.Shards))
	}
	for name, want := range data {
		got, err := c.Data(name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("tensor %s: %v", name, err)
		}
	}
	if _, err := c.Data("nope"); !errors.Is(err, TensorNotFound) {
		t.Errorf("missing tensor: %v", err)
	}
	c.Close()

	indexPath := filepath.Join(dir, IndexFileName)
	orig, _ := os.ReadFile(indexPath)
	ix, err := ParseIndex(orig)
	if err != nil {
		t.Fatal(err)
	}
	breakIndex := func(name string, edit func(*Index)) {
		t.Helper()
		cp := &Index{Metadata: ix.Metadata, WeightMap: append([]WeightEntry{}, ix.WeightMap...)}
		edit(cp)
		if err := os.WriteFile(indexPath, cp.Marshal(), 0o644); err != nil {
			t.Fatal(err)
		}
		if c, err := OpenCheckpoint(indexPath); err == nil {
			c.Close()
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	breakIndex("tensor missing from the map", func(ix *Index) { ix.WeightMap = ix.WeightMap[1:] })
	breakIndex("tensor mapped to the wrong shard", func(ix *Index) {
		ix.WeightMap[0].File, ix.WeightMap[len(ix.WeightMap)-1].File = ix.WeightMap[len(ix.WeightMap)-1].File, ix.WeightMap[0].File
	})
	breakIndex("mapped tensor absent", func(ix *Index) {
		ix.WeightMap = append(ix.WeightMap, WeightEntry{"zzz", ix.WeightMap[0].File})
	})
	breakIndex("shard file missing", func(ix *Index) { ix.WeightMap[0].File = "model-00009-of-00009.safetensors" })
	if err := os.WriteFile(indexPath, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	// A corrupt shard is reported with its own error kind and file name.
	shard := filepath.Join(dir, plan.Shards[1].File)
	b, _ := os.ReadFile(shard)
	if err := os.WriteFile(shard, b[:len(b)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCheckpoint(dir); !errors.Is(err, MetadataIncompleteBuffer) || !strings.Contains(err.Error(), plan.Shards[1].File) {
		t.Errorf("truncated shard: %v", err)
	}

	// A single-file checkpoint directory.
	one := t.TempDir()
	p1, _ := PlanShards(specs[:2], 1<<20, nil)
	if err := p1.WriteDir(one, func(ti TensorInfo) (io.Reader, error) { return bytes.NewReader(data[ti.Name]), nil }); err != nil {
		t.Fatal(err)
	}
	c, err = OpenCheckpoint(one)
	if err != nil || c.Index != nil || len(c.Shards) != 1 {
		t.Fatalf("single file: %v", err)
	}
	if got, _ := c.Data(specs[1].Name); !bytes.Equal(got, data[specs[1].Name]) {
		t.Error("single file data")
	}
	c.Close()
	// Short data from the callback is an error and leaves no file behind.
	bad := t.TempDir()
	err = p1.WriteDir(bad, func(ti TensorInfo) (io.Reader, error) { return bytes.NewReader(data[ti.Name][1:]), nil })
	if !errors.Is(err, InvalidTensor) {
		t.Errorf("short tensor data: %v", err)
	}
	if ents, _ := os.ReadDir(bad); len(ents) != 0 {
		t.Errorf("files left after a failed write: %v", ents)
	}
}

// FuzzParseIndex: no panic, and whatever parses marshals to an index that parses to
// the same thing.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":24},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"metadata":null,"x":[1,{"y":2}],"weight_map":{"\u00e9":"s.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"../s.safetensors"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := ParseIndex(b)
		if err != nil {
			if !errors.Is(err, InvalidIndex) {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		m := ix.Marshal()
		ix2, err := ParseIndex(m)
		if err != nil {
			t.Fatalf("marshalled index rejected: %v\n%s", err, m)
		}
		if fmt.Sprint(ix2) != fmt.Sprint(ix) || !bytes.Equal(ix2.Marshal(), m) {
			t.Fatalf("round trip changed the index:\n%v\n%v", ix, ix2)
		}
	})
}

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

// hubSplit is huggingface_hub's split_state_dict_into_shards_factory rule as its
// documentation states it, written apart from PlanShards: tensors in the state dict's
// order; one bigger than the limit goes at once into a shard of its own; any other
// that would take the shard being filled over the limit closes that shard first; the
// last shard is added at the end. It returns each shard's tensor indexes.
func hubSplit(sizes []int64, limit int64) [][]int {
	var shards [][]int
	var cur []int
	var curSize int64
	for i, s := range sizes {
		switch {
		case s > limit:
			shards = append(shards, []int{i})
			continue
		case curSize+s > limit:
			shards = append(shards, cur)
			cur, curSize = nil, 0
		}
		cur = append(cur, i)
		curSize += s
	}
	if len(cur) > 0 {
		shards = append(shards, cur)
	}
	return shards
}

// TestPlanShardsBoundaries: the edges of the rule, each computed from its description
// (a shard may reach the limit exactly; only a tensor strictly bigger than the limit
// is alone; sizes are bytes, elements times the dtype's size), and PlanShards against
// hubSplit on many random size lists.
func TestPlanShardsBoundaries(t *testing.T) {
	f32 := func(name string, n int64) TensorSpec { return TensorSpec{name, dtype.F32, []int64{n}} }
	cases := []struct {
		name  string
		specs []TensorSpec
		limit int64
		want  string
	}{
		{"a shard filled to the limit exactly", []TensorSpec{u8spec("a", 4), u8spec("b", 6), u8spec("c", 1)}, 10,
			"model-00001-of-00002.safetensors:a,b model-00002-of-00002.safetensors:c"},
		{"one byte over closes the shard", []TensorSpec{u8spec("a", 4), u8spec("b", 7)}, 10,
			"model-00001-of-00002.safetensors:a model-00002-of-00002.safetensors:b"},
		{"a tensor of the limit's size is not alone", []TensorSpec{u8spec("a", 10), u8spec("b", 1)}, 10,
			"model-00001-of-00002.safetensors:a model-00002-of-00002.safetensors:b"},
		{"a tensor of the limit's size after others", []TensorSpec{u8spec("a", 1), u8spec("b", 10)}, 10,
			"model-00001-of-00002.safetensors:a model-00002-of-00002.safetensors:b"},
		{"one byte over the limit is alone, before the open shard", []TensorSpec{u8spec("a", 1), u8spec("b", 11), u8spec("c", 9)}, 10,
			"model-00001-of-00002.safetensors:b model-00002-of-00002.safetensors:a,c"},
		{"two big ones in a row, then the rest", []TensorSpec{u8spec("a", 12), u8spec("b", 30), u8spec("c", 2), u8spec("d", 2)}, 10,
			"model-00001-of-00003.safetensors:a model-00002-of-00003.safetensors:b model-00003-of-00003.safetensors:c,d"},
		{"only a big one: one file, no index", []TensorSpec{u8spec("a", 99)}, 10, "model.safetensors:a"},
		{"bytes, not elements: 3 F32 are 12 bytes", []TensorSpec{f32("a", 2), f32("b", 1), f32("c", 3)}, 12,
			"model-00001-of-00002.safetensors:a,b model-00002-of-00002.safetensors:c"},
	}
	for _, c := range cases {
		p, err := PlanShards(c.specs, c.limit, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := shardContents(p); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}

	// Random lists: the same shards as the rule, file for file.
	seed := uint64(1)
	next := func(n uint64) int64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int64(seed>>33) % int64(n)
	}
	for trial := range 2000 {
		limit := 1 + next(40)
		n := int(next(12))
		var specs []TensorSpec
		var sizes []int64
		for i := range n {
			s := next(uint64(2*limit + 2)) // 0 to just over twice the limit
			specs = append(specs, u8spec(fmt.Sprintf("t%d", i), s))
			sizes = append(sizes, s)
		}
		p, err := PlanShards(specs, limit, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := hubSplit(sizes, limit)
		if len(want) == 0 {
			want = [][]int{nil} // no tensors: one empty model.safetensors
		}
		if len(p.Shards) != len(want) {
			t.Fatalf("trial %d: sizes %v limit %d: %d shards, the rule gives %d (%v)", trial, sizes, limit, len(p.Shards), len(want), shardContents(p))
		}
		for i, s := range p.Shards {
			got := map[string]bool{}
			for _, ti := range s.Header.Tensors {
				got[ti.Name] = true
			}
			for _, j := range want[i] {
				if !got[specs[j].Name] {
					t.Fatalf("trial %d: sizes %v limit %d: shard %d is %s, the rule gives %v", trial, sizes, limit, i, shardContents(p), want)
				}
			}
			if len(got) != len(want[i]) {
				t.Fatalf("trial %d: sizes %v limit %d: shard %d holds %d tensors, the rule %d", trial, sizes, limit, i, len(got), len(want[i]))
			}
		}
	}
}

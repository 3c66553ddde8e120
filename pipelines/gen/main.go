// Command gen writes a synthetic model of F32 weights for benchmarks: tensors of rows of
// 4096 values drawn from N(0, 0.02²), like trained transformer weights, generated and
// written one chunk at a time so memory stays small whatever the size.
//
//	go run ./pipelines/gen -size 1024 -o big.apr    # 1 GiB of weights, plain APR
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"

	"github.com/apr-go/apr/lib/atomicfile"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

func main() {
	sizeMiB := flag.Int("size", 1024, "MiB of weights")
	rows := flag.Int("rows", 1024, "rows per tensor (of 4096 values)")
	out := flag.String("o", "", "output file (default stdout)")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	var w io.Writer = os.Stdout
	if *out != "" {
		f, err := atomicfile.Create(*out, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Abort()
		w = f
		defer func() {
			if err := f.Commit(); err != nil {
				log.Fatal(err)
			}
		}()
	}
	tensorBytes := int64(*rows) * 4096 * 4
	n := (int64(*sizeMiB)<<20 + tensorBytes - 1) / tensorBytes
	cw, err := container.NewWriter(w, container.Header{Type: modeltype.Custom, Metadata: container.Metadata{
		Name: fmt.Sprintf("synthetic-%dMiB", *sizeMiB), Description: "random normal F32 weights for benchmarks",
		CreatedAt: "2026-01-01T00:00:00Z", Producer: "apr gen",
	}})
	if err != nil {
		log.Fatal(err)
	}
	r := &normal{rng: rand.New(rand.NewPCG(*seed, 7))}
	for i := int64(0); i < n; i++ {
		info := container.TensorInfo{Name: fmt.Sprintf("blk.%d.weight", i), DType: dtype.F32, Shape: []int64{int64(*rows), 4096}}
		if err := cw.WriteTensor(info, r); err != nil {
			log.Fatal(err)
		}
	}
	if err := cw.Close(); err != nil {
		log.Fatal(err)
	}
}

// normal is an endless reader of little-endian float32 N(0, 0.02²) values.
type normal struct {
	rng *rand.Rand
	buf [4]byte
	n   int
}

func (g *normal) Read(p []byte) (int, error) {
	i := 0
	for ; g.n == 0 && i+4 <= len(p); i += 4 {
		binary.LittleEndian.PutUint32(p[i:], math.Float32bits(float32(g.rng.NormFloat64()*0.02)))
	}
	for ; i < len(p); i++ {
		if g.n == 0 {
			binary.LittleEndian.PutUint32(g.buf[:], math.Float32bits(float32(g.rng.NormFloat64()*0.02)))
			g.n = 4
		}
		p[i] = g.buf[4-g.n]
		g.n--
	}
	return len(p), nil
}

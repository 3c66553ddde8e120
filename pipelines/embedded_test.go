package pipelines

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildEmbedded builds pipelines/embedded as the README says: CGO_ENABLED=0, stripped,
// one file.
func buildEmbedded(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("builds and runs a Linux binary")
	}
	bin := filepath.Join(t.TempDir(), "classify")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./embedded")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestEmbeddedBinary: the binary is static (no ELF interpreter), verifies its model
// when it starts and predicts the rows on stdin.
func TestEmbeddedBinary(t *testing.T) {
	bin := buildEmbedded(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary needs a dynamic loader; want a static one")
		}
	}
	f.Close()
	st, _ := os.Stat(bin)
	t.Logf("binary: %.1f MB", float64(st.Size())/1e6)
	rows, err := os.ReadFile("../testdata/datasets/breast_cancer.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(rows), "\n")
	var in bytes.Buffer
	for _, l := range []string{lines[1], lines[20]} { // rows 1 and 20: labels 0 and 1
		in.WriteString(l[:strings.LastIndexByte(l, ',')] + "\n")
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil || string(out) != "0\n1\n" {
		t.Fatalf("predictions %q, %v; want 0 and 1", out, err)
	}
}

// BenchmarkEmbeddedColdStart times a process from start to its first prediction on
// stdout (one row in, one label out), and reports the median and the 99th percentile.
func BenchmarkEmbeddedColdStart(b *testing.B) {
	bin := buildEmbedded(b)
	rows, err := os.ReadFile("../testdata/datasets/breast_cancer.csv")
	if err != nil {
		b.Fatal(err)
	}
	l := strings.Split(string(rows), "\n")[1]
	row := l[:strings.LastIndexByte(l, ',')] + "\n"
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cmd := exec.Command(bin)
		cmd.Stdin = strings.NewReader(row)
		if out, err := cmd.Output(); err != nil || string(out) != "0\n" {
			b.Fatalf("%q %v", out, err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "ms-p99")
}

// Package e2e drives the browser page (pipelines/browser) in a real headless
// Chromium: the page loads apr.wasm and the signed breast-cancer model, predicts
// what lib/predict predicts for the same rows, loads the model again from its
// IndexedDB cache after a reload without asking the server, and refuses a damaged
// file and a file of another format with a message that says so. With -update it
// rewrites docs/browser.png from the browser's screenshot (docs/DESIGN.md, "Tests").
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/predict"
	"github.com/apr-go/apr/lib/sign"
)

var update = flag.Bool("update", false, "rewrite golden files")

const root = "../../.."

// chromium finds Debian's chromium (or another Chromium-family browser); a
// missing one skips the test, or fails it where peers are required (CI).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed (apt-get install -y chromium)"
	if os.Getenv("APR_REQUIRE_PEERS") == "1" || os.Getenv("CI") == "true" {
		t.Fatal("required peer missing: " + msg)
	}
	t.Skip(msg)
	return ""
}

// logBuffer collects the server's request log.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s + "\n")
}

func (l *logBuffer) count(re string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(regexp.MustCompile(re).FindAllString(l.b.String(), -1))
}

// startServer builds and starts the page's server, as `go run ./pipelines/browser`
// does, on a free port with the given models, and returns its URL and wasm sizes.
func startServer(t *testing.T, models ...string) (url string, wasmSize, wasmGzip int64, log *logBuffer) {
	bin := filepath.Join(t.TempDir(), "browser")
	build := exec.Command("go", "build", "-o", bin, "./pipelines/browser")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./pipelines/browser: %v\n%s", err, out)
	}
	args := append([]string{"-addr", "127.0.0.1:0", "-key", "pipelines/embedded/signer.pub"}, models...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt) // the server removes its temporary site
		cmd.Wait()
	})
	log = &logBuffer{}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.add(sc.Text())
		}
	}()
	sizes := regexp.MustCompile(`^apr\.wasm: (\d+) bytes, (\d+) gzipped`)
	found := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l := sc.Text()
			if m := sizes.FindStringSubmatch(l); m != nil {
				wasmSize, _ = strconv.ParseInt(m[1], 10, 64)
				wasmGzip, _ = strconv.ParseInt(m[2], 10, 64)
			}
			if u, ok := strings.CutPrefix(l, "serving "); ok {
				url = strings.Fields(u)[0]
				found <- nil
				return
			}
		}
		found <- fmt.Errorf("the server stopped before serving")
	}()
	select {
	case err := <-found:
		if err != nil {
			t.Fatalf("%v; its log:\n%s", err, log.b.String())
		}
	case <-time.After(8 * time.Minute): // a cold build of apr.wasm on two cores
		t.Fatal("the server did not start in 8 minutes")
	}
	return url, wasmSize, wasmGzip, log
}

// pageState waits until the page has loaded a model or failed to, and returns
// the model status's state, kind, source and text.
func pageState(ctx context.Context) (state, kind, source, text string, err error) {
	res, err := chromedp.Run(ctx, chromedp.Poll[[]string](`(() => {
		if (document.body.dataset.wasm === "failed") return ["wasm-failed", "", "", document.getElementById("wasm-status").textContent];
		const s = document.getElementById("model-status");
		if (s.dataset.state !== "ok" && s.dataset.state !== "error") return false;
		return [s.dataset.state, s.dataset.kind, s.dataset.source || "", s.textContent];
	})()`, chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		return "", "", "", "", err
	}
	return res[0], res[1], res[2], res[3], nil
}

// typeAndPredict puts rows into the page's text area, presses Predict and returns
// the table's rows below its header.
func typeAndPredict(ctx context.Context, rows string) ([][]string, error) {
	err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("rows"), rows),
		chromedp.Click(chromedp.ID("predict")),
	)
	if err != nil {
		return nil, err
	}
	res, err := chromedp.Run(ctx, chromedp.Poll[[]string](`(() => {
		const s = document.getElementById("predict-status");
		return s.dataset.state === "ok" || s.dataset.state === "error" ? [s.dataset.state, s.textContent] : false;
	})()`))
	if err != nil {
		return nil, err
	}
	if res[0] != "ok" {
		return nil, fmt.Errorf("predict: %s", res[1])
	}
	return chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#predictions tr")].slice(1).map(r => [...r.cells].map(c => c.textContent))`))
}

func TestPage(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(root, "pipelines/embedded/model.apr"))
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)/2] ^= 1 // one bit in the coefficients' data
	gguf, err := os.ReadFile(filepath.Join(root, "testdata/gguf/tiny-llama.f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"model.apr": good, "corrupt.apr": corrupt, "llama.apr": gguf} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	url, size, gz, log := startServer(t, filepath.Join(dir, "model.apr"), filepath.Join(dir, "corrupt.apr"), filepath.Join(dir, "llama.apr"))
	t.Logf("server up in %v; apr.wasm %d bytes (%.2f MB), %d gzipped (%.2f MB)", time.Since(start).Round(time.Millisecond), size, float64(size)/1e6, gz, float64(gz)/1e6)
	if size == 0 || gz == 0 || gz >= size {
		t.Errorf("wasm sizes %d and %d gzipped", size, gz)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1000, 1100))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	defer cancel()
	// The browser starts on a context without a deadline (a deadline on the
	// first call would stop the browser); the page's steps get one.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}
	ctx, cancel := context.WithTimeout(bctx, 4*time.Minute)
	defer cancel()

	// The first visit: apr.wasm and the model come from the server.
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	state, kind, source, text, err := pageState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if state != "ok" || source != "the network" {
		t.Fatalf("first load: %s %s from %q: %s", state, kind, source, text)
	}
	if !strings.Contains(text, "signed by the pinned key") {
		t.Errorf("first load: %q does not say the signature verified", text)
	}
	first, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`window.aprTimings`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first visit: apr.wasm downloaded in %.0f ms, compiled and started in %.0f ms; model fetched in %.1f ms, verified in %.1f ms",
		first["wasmFetchMs"], first["wasmStartMs"], first["modelFetchMs"], first["modelVerifyMs"])

	// Predict rows 1 and 20 of the data set (labels 0 and 1) and compare with
	// lib/predict natively, on the same model.
	rows := dataRows(t, 1, 20)
	cells, err := typeAndPredict(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels, wantProba := native(t, good, rows)
	comparePredictions(t, cells, wantLabels, wantProba)

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	checkScreenshot(t, shot)

	// A reload: the model comes from IndexedDB and the server is not asked again.
	fetched := log.count(`GET /models/model\.apr 200`)
	if fetched != 1 {
		t.Errorf("the model was fetched %d times on the first visit, want 1", fetched)
	}
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	if state, kind, source, text, err = pageState(ctx); err != nil {
		t.Fatal(err)
	}
	if state != "ok" || source != "the IndexedDB cache" {
		t.Fatalf("after a reload: %s %s from %q: %s", state, kind, source, text)
	}
	if n := log.count(`GET /models/model\.apr `); n != fetched {
		t.Errorf("after a reload the server was asked for the model %d times, want %d", n, fetched)
	}
	again, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`window.aprTimings`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reload: apr.wasm downloaded in %.0f ms, compiled and started in %.0f ms; model from IndexedDB verified in %.1f ms",
		again["wasmFetchMs"], again["wasmStartMs"], again["modelVerifyMs"])
	if cells, err = typeAndPredict(ctx, rows); err != nil {
		t.Fatal(err)
	}
	comparePredictions(t, cells, wantLabels, wantProba)

	// A damaged file: its CRC fails in the page, the message says so, nothing is
	// cached and nothing can be predicted.
	refused := []struct{ name, kind, want string }{
		{"corrupt.apr", "damaged", "checksum mismatch"},
		{"llama.apr", "wrong-type", "GGUF"},
	}
	for _, r := range refused {
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"?model="+r.name)); err != nil {
			t.Fatal(err)
		}
		if state, kind, _, text, err = pageState(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", r.name, text)
		if state != "error" || kind != r.kind || !strings.Contains(text, r.want) {
			t.Errorf("%s: %s %s %q, want an error of kind %s naming %q", r.name, state, kind, text, r.kind, r.want)
		}
		disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("predict").disabled`))
		if err != nil || !disabled {
			t.Errorf("%s: Predict is enabled after a refused file (%v)", r.name, err)
		}
	}
	keys, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`aprCache.keys()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Errorf("cached files %v, want only model.apr's digest", keys)
	}
}

// dataRows returns the features of the given rows of the breast-cancer data set
// (1 is the first after the header), as CSV.
func dataRows(t *testing.T, rows ...int) string {
	b, err := os.ReadFile(filepath.Join(root, "testdata/datasets/breast_cancer.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out strings.Builder
	for _, r := range rows {
		l := lines[r]
		out.WriteString(l[:strings.LastIndexByte(l, ',')] + "\n")
	}
	return out.String()
}

// native predicts rows with lib/predict (apr-predict's engine): labels and class
// probabilities.
func native(t *testing.T, file []byte, rows string) ([]int64, [][]float64) {
	key, err := os.ReadFile(filepath.Join(root, "pipelines/embedded/signer.pub"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sign.ParsePublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := apr.ReadModel(bytes.NewReader(file), apr.ReadOptions{Policy: apr.Policy{Signers: []*sign.PublicKey{pub}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := predict.New(m)
	if err != nil {
		t.Fatal(err)
	}
	src, err := predict.NewCSVRows(strings.NewReader(rows), p.Features())
	if err != nil {
		t.Fatal(err)
	}
	x, err := src.Next(model.Matrix{}, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	labels, err := p.Predict(x, false)
	if err != nil {
		t.Fatal(err)
	}
	proba, err := p.Predict(x, true)
	if err != nil {
		t.Fatal(err)
	}
	var pr [][]float64
	for i := range proba.Rows {
		pr = append(pr, proba.Values[i*proba.Cols:(i+1)*proba.Cols])
	}
	return labels.Labels, pr
}

// comparePredictions checks the page's table (row, label, p0, p1) against the
// native labels and probabilities: labels exactly, probabilities to 1e-12
// relative (the page prints the shortest form that reads back to its float64;
// math.Exp is assembly on amd64 and Go on wasm, so the last bit may differ).
func comparePredictions(t *testing.T, cells [][]string, labels []int64, proba [][]float64) {
	t.Helper()
	if len(cells) != len(labels) {
		t.Fatalf("the page shows %d rows, want %d: %v", len(cells), len(labels), cells)
	}
	exact := true
	for i, c := range cells {
		if len(c) != 2+len(proba[i]) {
			t.Fatalf("row %d: cells %v", i+1, c)
		}
		if c[1] != strconv.FormatInt(labels[i], 10) {
			t.Errorf("row %d: label %s, lib/predict says %d", i+1, c[1], labels[i])
		}
		for k, want := range proba[i] {
			got, err := strconv.ParseFloat(c[2+k], 64)
			if err != nil {
				t.Fatalf("row %d p%d: %v", i+1, k, err)
			}
			if got != want {
				exact = false
			}
			if math.Abs(got-want) > 1e-12*math.Max(math.Abs(want), 1e-300) {
				t.Errorf("row %d p%d: page %v, lib/predict %v", i+1, k, got, want)
			}
		}
	}
	t.Logf("the page's predictions %v match lib/predict's (labels %v, probabilities %v; bit for bit: %v)", cells, labels, proba, exact)
}

// checkScreenshot checks that the screenshot is a PNG with more than one colour
// (not pixel for pixel: fonts differ between machines) and with -update writes it
// to docs/browser.png.
func checkScreenshot(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	colours := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	t.Logf("screenshot %dx%d, %d bytes, %d colours sampled", b.Dx(), b.Dy(), len(shot), len(colours))
	if len(colours) < 3 {
		t.Errorf("the screenshot is blank (%d colours)", len(colours))
	}
	if *update {
		if err := os.WriteFile(filepath.Join(root, "docs/browser.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Command browser builds and serves the browser page: apr's library compiled to
// WebAssembly (./wasm, GOOS=js) with a page that fetches an .apr with a progress
// bar, verifies every checksum (and a signature by the pinned key) in the page,
// caches the file in IndexedDB under its SHA-256, and predicts the rows typed or
// pasted into it. From the repository's root:
//
//	go run ./pipelines/browser                      # http://localhost:8080/
//	go run ./pipelines/browser -o site/             # the static site into site/, no server
//
// Without arguments it serves pipelines/embedded's signed breast-cancer model and
// pins that pipeline's key; give other .apr files as arguments, -key another key
// (or -key "" for none). See docs/BROWSER.md.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

//go:embed web/index.html
var indexHTML string

//go:embed web/app.js
var appJS []byte

// wasmPackage is the page's Go half, built with GOOS=js GOARCH=wasm.
const wasmPackage = "github.com/apr-go/apr/pipelines/browser/wasm"

func main() {
	addr := flag.String("addr", "localhost:8080", "address to serve on (port 0: any free port)")
	key := flag.String("key", "pipelines/embedded/signer.pub", `the public key models must be signed by ("" for none)`)
	out := flag.String("o", "", "write the static site into this directory and exit instead of serving")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./pipelines/browser [-addr HOST:PORT] [-key FILE] [-o DIR] [MODEL.apr ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	models := flag.Args()
	if len(models) == 0 {
		models = []string{"pipelines/embedded/model.apr"}
	}
	if err := run(*addr, *key, *out, models); err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		os.Exit(1)
	}
}

func run(addr, key, out string, models []string) error {
	// Ctrl-C (or a kill) shuts the server down, so the site's temporary
	// directory is removed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := out
	if dir == "" {
		tmp, err := os.MkdirTemp("", "apr-browser-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	s, err := build(dir, key, models)
	if err != nil {
		return err
	}
	fmt.Printf("apr.wasm: %d bytes, %d gzipped (built in %v)\n", s.Wasm.Size, s.Wasm.Gzip, s.buildTime.Round(time.Millisecond))
	if out != "" {
		fmt.Printf("site written to %s\n", out)
		return nil
	}
	return serve(ctx, addr, dir)
}

// config is what the page is told, as JSON inside index.html.
type config struct {
	Models    []modelEntry `json:"models"`
	PinnedKey string       `json:"pinnedKey"` // PEM; empty: no signature is required
	Wasm      wasmEntry    `json:"wasm"`
	buildTime time.Duration
}

type modelEntry struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // the page's cache key, checked against the download
}

type wasmEntry struct {
	URL  string `json:"url"`
	Size int64  `json:"size"`
	Gzip int64  `json:"gzip"`
}

// build writes the site into dir: index.html with its config, app.js, apr.wasm
// (and apr.wasm.gz), Go's wasm_exec.js from the toolchain that built apr.wasm, and
// the models under models/.
func build(dir, keyFile string, models []string) (*config, error) {
	c := &config{Wasm: wasmEntry{URL: "apr.wasm"}}
	if keyFile != "" {
		k, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("%w (run from the repository's root, or give -key)", err)
		}
		c.PinnedKey = string(k)
	}
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, m := range models {
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, fmt.Errorf("%w (run from the repository's root, or give the models' paths)", err)
		}
		name := filepath.Base(m)
		if seen[name] {
			return nil, fmt.Errorf("two models named %s", name)
		}
		seen[name] = true
		if err := os.WriteFile(filepath.Join(dir, "models", name), b, 0o644); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		c.Models = append(c.Models, modelEntry{Name: name, URL: "models/" + name, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])})
	}
	start := time.Now()
	wasm := filepath.Join(dir, "apr.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", wasm, wasmPackage)
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s: %w", wasmPackage, err)
	}
	c.buildTime = time.Since(start)
	raw, err := os.ReadFile(wasm)
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(wasm+".gz", gz.Bytes(), 0o644); err != nil {
		return nil, err
	}
	c.Wasm.Size, c.Wasm.Gzip = int64(len(raw)), int64(gz.Len())
	// wasm_exec.js must come from the toolchain that built apr.wasm: the two
	// speak a private protocol that changes between Go releases.
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOROOT: %w", err)
	}
	support, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		return nil, err
	}
	cj, err := json.Marshal(c) // escapes <, > and &, so it cannot end the script element
	if err != nil {
		return nil, err
	}
	page := strings.Replace(indexHTML, "{{config}}", string(cj), 1)
	for name, b := range map[string][]byte{"index.html": []byte(page), "app.js": appJS, "wasm_exec.js": support} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// serve serves dir on addr, logging every request on stderr. apr.wasm goes out
// gzipped to a browser that accepts it; nothing is cached by HTTP, so a page
// reload that does not ask for a model again shows the page's own cache at work.
func serve(ctx context.Context, addr, dir string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("serving http://%s/ (Ctrl-C stops)\n", ln.Addr())
	files := http.FileServer(http.Dir(dir))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		rec := &status{ResponseWriter: w, code: http.StatusOK}
		if path.Clean(r.URL.Path) == "/apr.wasm" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Type", "application/wasm")
			w.Header().Set("Content-Encoding", "gzip")
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/apr.wasm.gz"
			files.ServeHTTP(rec, r2)
		} else {
			files.ServeHTTP(rec, r)
		}
		log.Printf("%s %s %d", r.Method, r.URL.Path, rec.code)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	err = srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

type status struct {
	http.ResponseWriter
	code int
}

func (s *status) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

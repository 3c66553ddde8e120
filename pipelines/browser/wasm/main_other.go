//go:build !(js && wasm)

package main

import (
	"fmt"
	"os"
)

// main: this program runs in a browser page; pipelines/browser builds it with
// GOOS=js GOARCH=wasm and serves it.
func main() {
	fmt.Fprintln(os.Stderr, "browser/wasm: build with GOOS=js GOARCH=wasm and load it in the page (go run ./pipelines/browser)")
	os.Exit(2)
}

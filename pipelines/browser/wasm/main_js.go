//go:build js && wasm

// Command wasm is the Go half of the browser page (pipelines/browser): compiled to
// WebAssembly with GOOS=js, it sets a global object apr whose functions the page's
// app.js calls. Loading verifies every checksum (and the pinned key's signature)
// with lib/apr; predicting runs lib/predict, so the page predicts what apr-predict
// does.
package main

import (
	"errors"
	"syscall/js"

	"github.com/apr-go/apr/lib/version"
)

var loaded *Loaded

func main() {
	api := map[string]any{
		"version": version.Number,
		"sha256":  js.FuncOf(sha256Func),
		"load":    js.FuncOf(loadFunc),
		"predict": js.FuncOf(predictFunc),
	}
	js.Global().Set("apr", js.ValueOf(api))
	if ready := js.Global().Get("aprReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {} // the functions above stay callable as long as the program runs
}

// bytesOf copies a Uint8Array into Go memory.
func bytesOf(v js.Value) []byte {
	b := make([]byte, v.Get("length").Int())
	js.CopyBytesToGo(b, v)
	return b
}

// sha256(Uint8Array) -> hex string.
func sha256Func(_ js.Value, args []js.Value) any {
	return Digest(bytesOf(args[0]))
}

// async runs f on its own goroutine and returns a Promise of its result: a
// function called from JavaScript must not block (lib/apr's reader waits on
// goroutines), or the whole program deadlocks.
func async(f func() (any, error)) any {
	var executor js.Func
	executor = js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve, reject := args[0], args[1]
		go func() {
			defer executor.Release()
			v, err := f()
			if err != nil {
				e := js.Global().Get("Error").New(err.Error())
				kind := "error"
				var ke *Error
				if errors.As(err, &ke) {
					kind = ke.Kind
				}
				e.Set("kind", kind)
				reject.Invoke(e)
				return
			}
			resolve.Invoke(v)
		}()
		return nil
	})
	return js.Global().Get("Promise").New(executor)
}

// load(Uint8Array, pinnedKeyPEM) -> Promise of {type, features, classes, signer,
// sha256}; rejected with an Error whose kind is damaged, wrong-type or signature.
func loadFunc(_ js.Value, args []js.Value) any {
	loaded = nil // a file that fails leaves no model loaded, as the page says
	file, key := bytesOf(args[0]), ""
	if len(args) > 1 && args[1].Type() == js.TypeString {
		key = args[1].String()
	}
	return async(func() (any, error) {
		l, err := Load(file, key)
		if err != nil {
			return nil, err
		}
		loaded = l
		return map[string]any{"type": l.Type, "features": l.Features, "classes": l.Classes, "signer": l.Signer, "sha256": l.SHA256}, nil
	})
}

// anys converts v for js.ValueOf, which takes []any and not []float64.
func anys(v []float64) []any {
	out := make([]any, len(v))
	for i, f := range v {
		out[i] = f
	}
	return out
}

// predict(text) -> Promise of [{label, proba}] (classifier) or [{value}]
// (regression), one per row of text.
func predictFunc(_ js.Value, args []js.Value) any {
	text := args[0].String()
	return async(func() (any, error) {
		if loaded == nil {
			return nil, &Error{KindInput, errors.New("no model is loaded")}
		}
		ps, err := loaded.Predict(text)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(ps))
		for i, p := range ps {
			r := map[string]any{}
			if loaded.Classes > 0 {
				r["label"], r["proba"] = p.Label, anys(p.Proba)
			} else {
				r["value"] = p.Value
				if p.Values != nil {
					r["values"] = anys(p.Values)
				}
			}
			out[i] = r
		}
		return out, nil
	})
}

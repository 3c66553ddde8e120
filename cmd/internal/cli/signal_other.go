//go:build js || wasip1

package cli

// exitOnSignal does nothing where a program gets no signals.
func exitOnSignal() {}

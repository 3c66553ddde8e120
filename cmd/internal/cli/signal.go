//go:build !js && !wasip1

package cli

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/apr-go/apr/lib/cleanup"
)

// exitOnSignal makes SIGINT, SIGTERM and SIGHUP remove the temporary files the program
// created (pending outputs, spools; see package cleanup) and exit 128+signal, 130 for
// SIGINT, as a shell reports a process the signal killed.
func exitOnSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-ch
		cleanup.RemoveAll()
		n, _ := sig.(syscall.Signal)
		os.Exit(128 + int(n))
	}()
}

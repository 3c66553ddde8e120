// strip writes GGUF file IN without tensor NAME to OUT (ggufdrop.Without): for
// .ci/test-peers-mmproj, the converter's projector made of apr's.
//
//	go run ./lib/internal/ggufdrop/strip IN NAME OUT
package main

import (
	"fmt"
	"os"

	"github.com/apr-go/apr/lib/internal/ggufdrop"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: strip IN NAME OUT")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	if err == nil {
		b, err = ggufdrop.Without(b, os.Args[2])
	}
	if err == nil {
		err = os.WriteFile(os.Args[3], b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "strip:", err)
		os.Exit(1)
	}
}

//go:build !(linux || darwin || freebsd)

package quant

import "os"

// mapFile: no memory mapping on this platform; MapFile's callers stream the file.
func mapFile(*os.File, int64) []byte { return nil }

func unmapFile([]byte) {}

func dropPages([]byte) {}

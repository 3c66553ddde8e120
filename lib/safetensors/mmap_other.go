//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris)

package safetensors

import "os"

// mmapFile: no mmap on this platform; File reads with ReadAt.
func mmapFile(*os.File, int64) []byte { return nil }

func munmapFile([]byte) error { return nil }

func dropPages([]byte, int64, int64) {}

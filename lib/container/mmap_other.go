//go:build !unix

package container

import "os"

// mmapFile is unavailable here (js/wasm, wasip1, windows): the File reads with ReadAt.
func mmapFile(*os.File, int64) ([]byte, func()) { return nil, nil }

//go:build !unix

package mmap

import "os"

// Map cannot map on this platform: the caller reads instead.
func Map(*os.File, int64) ([]byte, bool) { return nil, false }

// Unmap has nothing to release on this platform.
func Unmap([]byte) error { return nil }

// MapRange cannot map on this platform: the caller reads instead.
func MapRange(*os.File, int64, int64) ([]byte, func(), bool) { return nil, nil, false }

// DropPages has nothing to drop on this platform.
func DropPages([]byte, int64, int64) {}

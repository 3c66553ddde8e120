// Package splice moves file bytes into a pipe without copying them through user
// memory (splice(2) on Linux): a program that reads a model from a mapped file and
// writes it into a pipe then hands the page cache's pages to the pipe by reference.
// Elsewhere FromFile reports ErrUnsupported and the caller writes the bytes itself.
package splice

import "errors"

// ErrUnsupported is FromFile's answer where it cannot splice (another platform, a
// file system without splice): nothing was moved.
var ErrUnsupported = errors.New("splice: not supported for this file")

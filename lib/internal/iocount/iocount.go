// Package iocount counts the bytes read through a reader, for the readers that report
// the size of a stream they could not stat (a pipe). A leaf.
package iocount

import "io"

// Reader reads R and counts the bytes in N.
type Reader struct {
	R io.Reader
	N int64
}

func (c *Reader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}

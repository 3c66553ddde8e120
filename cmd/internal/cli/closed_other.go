//go:build !unix

package cli

// wasClosed is false where a closed standard stream cannot be told from the null
// device (see closed.go).
func wasClosed(any) bool { return false }

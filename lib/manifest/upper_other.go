//go:build !(goexperiment.simd && amd64)

package manifest

// clearUpper is needed only in GOEXPERIMENT=simd builds on amd64 (see
// upper_simd_amd64.go).
func clearUpper() {}

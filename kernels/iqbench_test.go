package kernels

import (
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

func BenchmarkQuantizeIQ4_NL(b *testing.B)  { benchQuantize(b, dtype.IQ4_NL) }
func BenchmarkQuantizeIQ4_XS(b *testing.B)  { benchQuantize(b, dtype.IQ4_XS) }
func BenchmarkQuantizeIQ3_XXS(b *testing.B) { benchQuantize(b, dtype.IQ3_XXS) }
func BenchmarkQuantizeIQ3_S(b *testing.B)   { benchQuantize(b, dtype.IQ3_S) }

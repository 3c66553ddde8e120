// Package peertest decides what a test does when a registry peer (NumPy, minisign,
// age, node packages) is not installed: skip on a developer's machine, fail in CI,
// where .ci/run installs every peer and sets APR_REQUIRE_PEERS=1, so a broken install
// step cannot hide behind a skipped test.
package peertest

import (
	"os"
	"testing"
)

// Missing reports that a peer is unavailable.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("APR_REQUIRE_PEERS") == "1" {
		t.Fatalf("required peer missing (APR_REQUIRE_PEERS=1): "+format, args...)
	}
	t.Skipf(format, args...)
}

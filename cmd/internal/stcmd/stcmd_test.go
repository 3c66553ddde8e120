package stcmd

import "testing"

// TestParseSize: max_shard_size strings as huggingface_hub's parse_size_to_int reads
// them (units TB, GB, MB, KB of powers of ten, any case, spaces trimmed, the number a
// float, the product truncated: "4.1GB" is int(4.1*10**9) = 4099999999 in Python too), plus
// transformers' binary units and plain byte counts.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"5GB": 5_000_000_000, "5gb": 5_000_000_000, "5Gb": 5_000_000_000, " 5GB ": 5_000_000_000, "5 GB": 5_000_000_000,
		"0.5GB": 500_000_000, "1.5MB": 1_500_000, "0.1MB": 100_000, "4.1GB": 4_099_999_999, "1.001KB": 1000, "1TB": 1_000_000_000_000, "100KB": 100_000,
		"5GiB": 5 << 30, "2MiB": 2 << 20, "1KiB": 1024, "1TiB": 1 << 40,
		"1000000": 1_000_000, "600B": 600,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "5XB", "-1GB", "0", "0GB", "five GB", "1e30TB", "NaNGB", "infGB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

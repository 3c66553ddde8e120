package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/oms"
)

// TestOMSShardSizeZero: a shard size of 0 is a usage mistake whatever the method,
// not the default size.
func TestOMSShardSizeZero(t *testing.T) {
	priv, _ := writeECKey(t, t.TempDir())
	model := t.TempDir()
	os.WriteFile(filepath.Join(model, "w.bin"), make([]byte, 100), 0o644)
	sig := filepath.Join(t.TempDir(), "model.sig")
	for _, args := range [][]string{
		{"--method", "shards", "--shard-size", "0"},
		{"--method", "shards", "--shard-size=0"},
		{"--shard-size", "0"},
		{"--method", "shards", "--shard-size", "-5"},
	} {
		argv := append([]string{"oms", "sign", "key", "--private-key", priv, "--signature", sig}, args...)
		_, errs, code := runIt(t, nil, append(argv, model)...)
		if code != 2 || !strings.Contains(errs, "--shard-size") {
			t.Errorf("%v: exit %d %s", args, code, errs)
		}
		if _, err := os.Stat(sig); err == nil {
			t.Fatalf("%v: a signature was written", args)
		}
	}
	// Without --shard-size the spec's default applies.
	mustRun(t, nil, "oms", "sign", "key", "--private-key", priv, "--signature", sig, "--method", "shards", model)
	b, _ := os.ReadFile(sig)
	pb, _ := oms.ParseBundle(b)
	if m, err := oms.ParseStatement(pb.Payload); err != nil || m.Serialization.ShardSize != oms.DefaultShardSize {
		t.Fatalf("default shard size: %v %+v", err, m)
	}
}

// TestOMSSignatureSizeCap: a signature file larger than oms.MaxBundle is refused
// with its size before it is parsed; one of whitespace just under the cap is read
// and refused as no bundle.
func TestOMSSignatureSizeCap(t *testing.T) {
	_, pub := writeECKey(t, t.TempDir())
	model := t.TempDir()
	os.WriteFile(filepath.Join(model, "w.bin"), []byte("x"), 0o644)
	sig := filepath.Join(t.TempDir(), "model.sig")
	os.WriteFile(sig, bytes.Repeat([]byte(" "), oms.MaxBundle+1), 0o644)
	_, errs, code := runIt(t, nil, "oms", "verify", "key", "--public-key", pub, "--signature", sig, model)
	if code != 1 || !strings.Contains(errs, "larger than 16777216 bytes") {
		t.Fatalf("over the cap: exit %d %s", code, errs)
	}
	os.Truncate(sig, oms.MaxBundle)
	_, errs, code = runIt(t, nil, "oms", "verify", "key", "--public-key", pub, "--signature", sig, model)
	if code != 1 || !strings.Contains(errs, "bundle: not a JSON object") {
		t.Fatalf("whitespace under the cap: exit %d %s", code, errs)
	}
}

// TestOMSNamesQuotedOnTheTerminal: file names and bundle strings with control
// characters or invalid UTF-8 are quoted in every report and error line, so a
// name cannot move the cursor, color the text or forge a line of its own.
func TestOMSNamesQuotedOnTheTerminal(t *testing.T) {
	keys := t.TempDir()
	priv, pub := writeECKey(t, keys)
	model := t.TempDir()
	evil := "w\x1b[32m\ngood OMS signature\r.bin"
	os.WriteFile(filepath.Join(model, evil), []byte("weights"), 0o644)
	os.WriteFile(filepath.Join(model, "config.json"), []byte("{}"), 0o644)
	sig := filepath.Join(t.TempDir(), "model.sig")
	// clean fails the test if a report or error has a control character other
	// than the line feeds that end lines and indent the list of differences.
	clean := func(what, s string) {
		t.Helper()
		for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			if strings.ContainsAny(line, "\x1b\r") || strings.HasPrefix(line, "good OMS") || strings.ContainsRune(line, '\ufffd') {
				t.Errorf("%s: a raw control character or a forged line: %q", what, s)
			}
		}
	}
	_, errs := mustRun(t, nil, "oms", "sign", "key", "--private-key", priv, "--signature", sig, model)
	clean("sign", errs)
	out, errs := mustRun(t, nil, "oms", "verify", "key", "--public-key", pub, "--signature", sig, model)
	clean("verify", out+errs)

	// A changed file: the difference names it quoted.
	os.WriteFile(filepath.Join(model, evil), []byte("WEIGHTS"), 0o644)
	_, errs, code := runIt(t, nil, "oms", "verify", "key", "--public-key", pub, "--signature", sig, model)
	if code != 1 || !strings.Contains(errs, `changed: "w\x1b[32m\ngood OMS signature\r.bin" (content differs)`) {
		t.Fatalf("changed: exit %d %q", code, errs)
	}
	clean("changed", errs)

	// A name that is not UTF-8: refused, quoted. (Under js and wasip1 the host takes
	// file names as UTF-8 strings: no such name can be made there.)
	if runtime.GOOS != "js" && runtime.GOOS != "wasip1" {
		os.WriteFile(filepath.Join(model, "bad\xff\x1b.bin"), []byte("x"), 0o644)
		_, errs, code = runIt(t, nil, "oms", "sign", "key", "--private-key", priv, "--signature", sig, model)
		if code != 1 || !strings.Contains(errs, `bad\xff\x1b.bin`) || !strings.Contains(errs, "not valid UTF-8") {
			t.Fatalf("not UTF-8: exit %d %q", code, errs)
		}
		clean("not UTF-8", errs)
	}

	// A bundle whose key hint carries an escape sequence.
	os.Remove(filepath.Join(model, "bad\xff\x1b.bin"))
	b, _ := os.ReadFile(sig)
	var m map[string]any
	json.Unmarshal(b, &m)
	m["verificationMaterial"].(map[string]any)["publicKey"] = map[string]any{"hint": "\x1b[2J\ngood OMS signature"}
	b, _ = json.Marshal(m)
	os.WriteFile(sig, b, 0o644)
	_, errs, code = runIt(t, nil, "oms", "verify", "key", "--public-key", pub, "--signature", sig, model)
	if code != 1 || !strings.Contains(errs, "key mismatch") {
		t.Fatalf("hint: exit %d %q", code, errs)
	}
	clean("hint", errs)
}

package doctest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/npy"
)

// TestDocs runs every command of the ```sh (and ```bash, ```shell) blocks of README.md
// and docs/*.md, as written, in one work directory per doc file that setups (below)
// fills with the files the examples name. Each command runs under bash with set -e and
// pipefail; the commands of a block run in order and a failure fails the test, names
// the doc's file and line, and ends that block. A deprecation notice on stderr
// ("apr-NAME: X is deprecated; use Y") fails it too: the doc should show the current
// spelling.
//
// The only departures from the text, all listed here: skips (never silent: each is
// logged with its reason), substitutions (a doc's placeholder such as age1... made
// concrete), peers (a command using a program apr does not ship runs when that program
// is installed, and is skipped with the reason otherwise; APR_REQUIRE_PEERS=1 makes a
// missing one a failure, as elsewhere), and terminal (commands that ask for a password
// on the terminal run under script(1) with the answer typed in).
func TestDocs(t *testing.T) {
	needPrograms(t)
	files := docFiles(t)
	var tally tally
	t.Run("files", func(t *testing.T) {
		for _, f := range files {
			t.Run(f, func(t *testing.T) {
				t.Parallel()
				runDoc(t, f, &tally)
			})
		}
	})
	sort.Strings(tally.skipped)
	t.Logf("%d doc commands ran, %d skipped:\n  %s", tally.ran, len(tally.skipped), strings.Join(tally.skipped, "\n  "))
}

// skips are the doc commands that do not run here, with the reason.
var skips = []struct{ file, command, reason string }{
	{"README.md", "make demo", "builds and runs pipelines/demo.sh, which pipelines' TestDemo runs"},
	{"README.md", "make test", "runs the tests (make test-all every leg), this one included"},
	{"README.md", "make models", "builds the programs and runs pipelines/Makefile, which pipelines' TestMakeBuild runs"},
	{"README.md", "make -f pipelines/Makefile", "runs pipelines/Makefile from the repository's root, which pipelines' TestMakeBuild runs"},
	{"README.md", "./pipelines/embedded", "builds pipelines/embedded from the repository's root, which pipelines' TestEmbeddedBinary builds and runs"},
	{"README.md", "./classify --proba", "runs the binary of the line before; pipelines' TestEmbeddedBinary runs it on the same row (labels; lib tests cover --proba through lib/predict)"},
	{"README.md", "make browser", "serves the page until interrupted; pipelines/browser/e2e's TestPage builds and runs the same server and drives the page in Chromium"},
	{"docs/BROWSER.md", "make browser", "serves the page until interrupted; pipelines/browser/e2e's TestPage builds and runs the same server and drives the page in Chromium"},
	{"docs/BROWSER.md", "go run ./pipelines/browser -addr", "serves until interrupted, from the repository's root; TestPage runs the server with its own models and key"},
	{"docs/BROWSER.md", "go run ./pipelines/browser -o site/", "runs from the repository's root; pipelines/browser's TestSite builds the same site"},
	{"README.md", "pipelines/slurm/build.sh", "submits Slurm jobs, which pipelines' TestSlurmBuild runs on a single-node Slurm it starts"},
	{"docs/SCALE.md", "pipelines/slurm/", "starts a Slurm or submits jobs to one: pipelines' TestSlurmBuild starts one with cluster.sh as root and runs build.sh --wait on it"},
}

// substitutions make a doc's placeholder concrete, in every command of the file that
// contains it; the environment variables come from the file's setup.
var substitutions = []struct{ file, old, new, why string }{
	{"README.md", "-r age1...", "-r $AGE_RECIPIENT", "a recipient printed by apr-seal keygen"},
	{"docs/SEALING.md", "-r age1...", "-r $AGE_RECIPIENT", "a recipient printed by apr-seal keygen"},
	{"docs/SEALING.md", "pw.txt ...", "pw.txt model.apr -o sealed.apr", "the usual input and output"},
	{"docs/SIGNING.md", "apr-quant ...", "apr-quant f16 -o quantized.apr", "a quantization target and output"},
}

// peers are programs the docs use that apr does not ship.
var peers = []string{"jq", "minisign", "age", "openssl"}

// terminal: commands that read a password from the terminal (found by the doc's own
// comment), with what is typed.
var terminal = []struct{ file, command, input string }{
	{"docs/SEALING.md", "asked twice on the terminal", "correct horse\ncorrect horse\n"},
}

// expectations: what a command's output must contain (want), and a shell check run
// after it (then), where the doc says what the command does.
var expectations = []struct{ file, command, want, then string }{
	{"README.md", "apr-decode verify model.apr && echo intact", "intact", ""},
	{"README.md", "apr-decode plain < small.apr", "OK, 2 tensors", ""},
	{"README.md", "apr-st export tiny.apr -o tiny-again/", "", "diff -r tiny-again testdata/hf/tiny-llama"},
	{"docs/GGUF.md", "apr-gguf export model.apr -o model.gguf", "", "cmp model.gguf model.f32.gguf"},
	{"docs/GGUF.md", "-o model.Q8_0.one.gguf", "", "cmp model.Q8_0.one.gguf model.Q8_0.gguf"},
	{"docs/GGUF.md", "> tiny-llama.q8_0.piped.gguf", "", "cmp tiny-llama.q8_0.gguf tiny-llama.q8_0.piped.gguf"},
	{"docs/QUANT.md", "--split-max-size 1M -o tiny.Q8_0", "", "test -f tiny.Q8_0-00002-of-00002.gguf"},
	{"README.md", "-o tiny.f16.gguf ", "", `grep -q "^$(sha256sum < tiny.f16.gguf | cut -c1-64)  ref/tiny-llama.f16.gguf$" "$TESTDATA/hf/tiny-llama.sha256"`},
	{"README.md", "-o tiny.Q4_K_M.gguf ", "", `grep -q "^$(sha256sum < tiny.Q4_K_M.gguf | cut -c1-64)  ref/tiny-llama.Q4_K_M.gguf$" "$TESTDATA/hf/tiny-llama.sha256"`},
	{"README.md", "-o tiny.Q4_K_M.piped.gguf", "", "cmp tiny.Q4_K_M.gguf tiny.Q4_K_M.piped.gguf"},
	{"README.md", "-o llama-split.Q4_0", "", "test -f llama-split.Q4_0-00001-of-00003.gguf"},
	{"README.md", "-o tiny-merged.Q4_K_M.gguf", "", `grep -q "^$(sha256sum < tiny-merged.Q4_K_M.gguf | cut -c1-64)  ref/tiny-llama.Q4_K_M.gguf$" "$TESTDATA/hf/tiny-llama.sha256"`},
	{"docs/SAFETENSORS.md", "--max-shard-size 2GB -o ./out2/", "", "test -f out2/model.safetensors && test -f out2/config.json && test \"$(stat -c %a out2/model.safetensors)\" = \"$(touch probe && stat -c %a probe)\""},
	{"docs/GGUF.md", "-o tiny.Q4_K_M.gguf   # the merged file", "", `grep -q "^$(sha256sum < tiny.Q4_K_M.gguf | cut -c1-64)  ref/tiny-llama.Q4_K_M.gguf$" "$TESTDATA/hf/tiny-llama.sha256"`},
	{"docs/QUANT.md", "-o ../../tiny.Q4_K_M.imatrix.gguf)", "", `grep -q "^$(sha256sum < tiny.Q4_K_M.imatrix.gguf | cut -c1-64)  ref/tiny-llama.Q4_K_M.imatrix.gguf$" "$TESTDATA/hf/tiny-llama.sha256"`},
	{"docs/SAFETENSORS.md", "-o ./out/", "", "test -f out/config.json && test -f out/tokenizer.model"},
	{"docs/SIGNING.md", "apr-sign keygen -o author", "", `test "$(stat -c %a author.key)" = 600 && grep -q "BEGIN PRIVATE KEY" author.key && grep -q "BEGIN PUBLIC KEY" author.pub`},
	{"docs/SIGNING.md", "--detached --minisign", "", "test -f model.apr.minisig"},
	{"docs/SIGNING.md", "apr-sign verify --license", "license", ""},
	{"docs/SEALING.md", "apr-seal keygen -o alice.key", "age1", `test "$(stat -c %a alice.key)" = 600 && test -f alice.key.pub`},
	{"docs/SEALING.md", "apr-decode inspect sealed.apr", "sealed for        2 X25519 recipient(s); 2 stanza(s)", ""},
	{"docs/DISTILL.md", "--json | jq .validation", `"accuracy"`, ""},
	{"docs/DISTILL.md", "--expert a.apr --expert b.apr --top-k 1 -o cancer-moe.apr", "", "apr-decode inspect cancer-moe.apr | grep -q expert.1.coefficients"},
	{"docs/DISTILL.md", "apr-decode extract moe.apr --expert 1 -o expert1.apr", "", "apr-decode inspect expert1.apr | grep -q LinearRegression"},
	{"README.md", "apr-decode inspect moe.apr", "expert.3.coefficients", ""},
	{"README.md", "apr-predict --require-signature -p ci.pub moe.signed.apr < rows.csv", "", "test $(apr-predict --require-signature -p ci.pub moe.signed.apr < rows.csv | wc -l) = 3"},
	{"docs/PREDICT.md", "apr-predict softmax.apr < digits.csv", "0\n1\n2\n3\n4\n", ""},
	{"docs/PREDICT.md", "-o labels.npy", "", `test "$(head -c 6 labels.npy | tail -c 5)" = NUMPY`},
	{"docs/PREDICT.md", "-p ci.pub signed.apr", "0\n1\n2\n3\n4\n", ""},
	{"docs/ONNX.md", "apr-onnx export < net.apr > net.onnx", "", "grep -q float_input net.onnx && grep -q probabilities net.onnx"},
	{"docs/ONNX.md", "apr-predict mlp.apr digits.csv --proba", "p0,p1,p2,p3,p4,p5,p6,p7,p8,p9\n", ""},
	{"docs/ONNX.md", "--name digits-mlp", "", "apr-decode inspect signed.apr | grep -q digits-mlp"},
	{"docs/PREDICT.md", "apr-predict --open-reply request -i user.key < reply", "0\n1\n2\n3\n4\n", ""},
	{"docs/PREDICT.md", "age -d -i user.key < reply", "0\n1\n2\n3\n4\n", "test -f seen/* && ! apr-predict published.apr -i owner.key --serve-request --replay-dir seen < request > again 2> again.err && grep -q replayed again.err && test ! -s again"},
	{"README.md", "apr-predict --open-reply request -i user.key < reply", "", "test $(wc -l < features.csv) = 3 && test $(apr-predict --open-reply request -i user.key < reply | wc -l) = 3"},
}

// setups prepare each doc's work directory with the files its examples read: shell
// run with set -euo pipefail, the programs on PATH and $TESTDATA the repository's
// testdata; each KEY=VALUE line it prints is added to the commands' environment.
// npy writes NumPy fixtures first (apr has no program that makes arrays from nothing).
var setups = map[string]struct {
	npy   func(t *testing.T, dir string)
	shell string
}{
	"README.md": {npy: linearArrays, shell: `
apr-gguf import "$TESTDATA/gguf/tiny-llama.f32.gguf" | apr-st export -o model.safetensors
cp "$TESTDATA/gguf/tiny-llama.f32.gguf" llama.f32.gguf
apr-sign keygen -o ci
cp "$TESTDATA/aprender/mnist_784x2.apr" aprender-model.apr
cp "$TESTDATA/onnx/mlp-64-32-10.onnx" mlp.onnx
mkdir -p testdata/hf
cp -r "$TESTDATA/hf/tiny-llama" testdata/hf/
cp "$TESTDATA/hf/ref/tiny-llama.imatrix.dat" .
cp "$TESTDATA"/gguf/split/tiny-llama.Q4_K_M-0000?-of-00003.gguf .
awk 'BEGIN { for (r = 0; r < 3; r++) { for (i = 0; i < 64; i++) printf "%s%d", (i ? "," : ""), (r + i) % 5; print "" } }' > features.csv
echo "AGE_RECIPIENT=$(apr-seal keygen -o customer.key)"
mkdir -p testdata/datasets
cp "$TESTDATA"/datasets/diabetes_*.csv.gz testdata/datasets/
zcat "$TESTDATA/datasets/diabetes_data_raw.csv.gz" | awk -v OFS=, 'NR <= 3 {for(i=1;i<=NF;i++) $i=$i/100; print}' > rows.csv
`},
	"docs/QUANT.md": {npy: linearArrays, shell: `
cp "$TESTDATA/gguf/tiny-llama.f32.gguf" model.gguf
apr-gguf import "$TESTDATA/gguf/tiny-llama.f32.gguf" -o model.apr
apr-st export model.apr -o model.safetensors
apr-quant q4_0 model.apr -o model-q4_0.apr
apr-encode -t LinearRegression coefficients.npy intercept.npy -o linear.apr
apr-sign keygen -o ci
mkdir -p testdata/hf/ref
cp -r "$TESTDATA/hf/tiny-llama" testdata/hf/
cp "$TESTDATA/hf/ref/tiny-llama.imatrix.dat" testdata/hf/ref/
`},
	"docs/SAFETENSORS.md": {shell: `
apr-gguf import "$TESTDATA/gguf/tiny-llama.f32.gguf" | apr-st export -o model.safetensors
apr-st import "$TESTDATA/hf/tiny-llama/" -o tiny.apr
apr-st export tiny.apr --shard-size 1MB -o Llama-checkpoint/
rm tiny.apr
apr-sign keygen -o ci
`},
	"docs/GGUF.md": {shell: `
cp "$TESTDATA/gguf/tiny-llama.f32.gguf" model.gguf
cp "$TESTDATA/gguf/tiny-llama.f32.gguf" model.f32.gguf
cp -r "$TESTDATA/hf/tiny-llama" .
cp "$TESTDATA"/gguf/split/tiny-llama.Q4_K_M-0000?-of-00003.gguf .
cp "$TESTDATA"/gguf/split/tiny-llama.f16-0000?-of-00004.gguf .
`},
	"docs/SIGNING.md": {shell: `
apr-encode "$TESTDATA/aprender/mnist_784x2.apr" -o model.apr
apr-sign keygen -o issuer
`},
	"docs/SEALING.md": {shell: `
apr-encode "$TESTDATA/aprender/mnist_784x2.apr" -o model.apr
apr-seal keygen -o bob.key > /dev/null
mv bob.key.pub bob.pub
printf 'correct horse\n' > pw.txt
echo "MODEL_PW=correct horse"
echo "AGE_RECIPIENT=$(apr-seal keygen -o carol.key)"
`},
	"docs/PREDICT.md": {npy: digitsNPZ, shell: `
zcat "$TESTDATA/digits/digits.csv.gz" | awk -F, -v OFS=, 'NR <= 5 {NF=64; for(i=1;i<=NF;i++) $i=$i/16; print}' > digits.csv
apr-distill fit-logistic --data x.npz -o softmax.apr 2> /dev/null
apr-distill fit --data x.npz --student 64-16-10 --epochs 2 --seed 1 -o net.apr 2> /dev/null
`},
	"docs/ONNX.md": {npy: digitsNPZ, shell: `
zcat "$TESTDATA/digits/digits.csv.gz" | awk -F, -v OFS=, 'NR <= 5 {NF=64; for(i=1;i<=NF;i++) $i=$i/16; print}' > digits.csv
apr-distill fit-logistic --data x.npz --max-iter 50 -o softmax.apr 2> /dev/null
apr-distill fit --data x.npz --student 64-16-10 --epochs 2 --seed 1 -o net.apr 2> /dev/null
cp "$TESTDATA/onnx/mlp-64-32-10.onnx" mlp.onnx
apr-sign keygen -o ci
`},
	"docs/DISTILL.md": {npy: digitsNPZ, shell: `
cp "$TESTDATA/digits/digits.csv.gz" "$TESTDATA"/datasets/diabetes_*.csv.gz "$TESTDATA/datasets/breast_cancer.csv" .
apr-distill fit --data x.npz --student 64-16-10 --epochs 2 --seed 1 -o a.apr 2> /dev/null
apr-distill fit --data x.npz --student 64-24-10 --epochs 2 --seed 2 -o b.apr 2> /dev/null
`},
}

// command is one command of a doc, with the line it starts on.
type command struct {
	line int
	text string
}

// shellBlocks returns the commands of each shell block of a Markdown file: a line
// ending in a backslash continues on the next; blank and comment lines are left out.
// A fence without a language whose first line starts with a program is an error: it
// would be a command that no test runs.
func shellBlocks(t *testing.T, file string, src []byte) [][]command {
	t.Helper()
	var blocks [][]command
	var cur []command
	in, shell, first := false, false, false
	var pending *command
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if !in {
				lang := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
				in, first = true, true
				shell = lang == "sh" || lang == "bash" || lang == "shell"
				cur = nil
				continue
			}
			if shell {
				if pending != nil {
					t.Errorf("%s:%d: the block ends inside a continued command", file, n)
				}
				blocks = append(blocks, cur)
			}
			in, pending = false, nil
			continue
		}
		if !in {
			continue
		}
		if !shell {
			if first && trimmed != "" {
				first = false
				if strings.HasPrefix(trimmed, "apr-") || strings.HasPrefix(trimmed, "make ") || strings.HasPrefix(trimmed, "$ ") {
					t.Errorf("%s:%d: a command in a fence without a language: mark it ```sh so TestDocs runs it", file, n)
				}
			}
			continue
		}
		if pending != nil {
			pending.text += "\n" + line
		} else {
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			pending = &command{line: n, text: line}
		}
		if strings.HasSuffix(line, `\`) {
			continue
		}
		cur = append(cur, *pending)
		pending = nil
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if in {
		t.Errorf("%s: unclosed code fence", file)
	}
	return blocks
}

// docFiles are README.md and docs/*.md, relative to the repository's root.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, "docs/"+filepath.Base(d))
	}
	return files
}

type tally struct {
	mu      sync.Mutex
	ran     int
	skipped []string
	used    map[string]bool
}

func (c *tally) note(ran bool, skipped string, used ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ran {
		c.ran++
	}
	if skipped != "" {
		c.skipped = append(c.skipped, skipped)
	}
	if c.used == nil {
		c.used = map[string]bool{}
	}
	for _, u := range used {
		c.used[u] = true
	}
}

func (c *tally) wasUsed(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used[key]
}

func runDoc(t *testing.T, file string, tally *tally) {
	src, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	blocks := shellBlocks(t, file, src)
	if len(blocks) == 0 {
		return
	}
	dir := t.TempDir()
	env := append(os.Environ(), "HOME="+dir, "TESTDATA="+testdata)
	if s, ok := setups[file]; ok {
		if s.npy != nil {
			s.npy(t, dir)
		}
		out, stderr, code := bash(t, dir, env, "set -euo pipefail\n"+s.shell, "")
		if code != 0 {
			t.Fatalf("setup for %s: exit %d\n%s", file, code, stderr)
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.Contains(l, "=") {
				env = append(env, l)
			}
		}
	}
	peerMissing := map[string]bool{}
	for _, p := range peers {
		if _, err := exec.LookPath(p); err != nil {
			peerMissing[p] = true
		}
	}
	requirePeers := os.Getenv("APR_REQUIRE_PEERS") == "1"
blocks:
	for _, block := range blocks {
	commands:
		for _, c := range block {
			where := fmt.Sprintf("%s:%d", file, c.line)
			for _, e := range expectations {
				if e.file == file && strings.Contains(c.text, e.command) {
					tally.note(false, "", e.file+"\x00"+e.command+"\x00expect")
				}
			}
			for _, s := range skips {
				if s.file == file && strings.Contains(c.text, s.command) {
					tally.note(false, fmt.Sprintf("%s: %s (%s)", where, firstLine(c.text), s.reason), s.file+"\x00"+s.command)
					continue commands
				}
			}
			for _, w := range strings.Fields(c.text) {
				if peerMissing[w] {
					if requirePeers {
						t.Errorf("%s: %s needs %s, which is not installed (APR_REQUIRE_PEERS=1)", where, firstLine(c.text), w)
						continue blocks
					}
					tally.note(false, fmt.Sprintf("%s: %s (%s is not installed)", where, firstLine(c.text), w))
					continue commands
				}
			}
			text := c.text
			for _, s := range substitutions {
				if s.file == file && strings.Contains(text, s.old) {
					text = strings.ReplaceAll(text, s.old, s.new)
					tally.note(false, "", s.file+"\x00"+s.old)
				}
			}
			script, input := "set -eo pipefail\n"+text, ""
			for _, tm := range terminal {
				if tm.file == file && strings.Contains(c.text, tm.command) {
					if _, err := exec.LookPath("script"); err != nil {
						tally.note(false, fmt.Sprintf("%s: %s (needs script(1) for a terminal)", where, firstLine(c.text)), tm.file+"\x00"+tm.command)
						continue commands
					}
					// script(1) gives the command a terminal; what is typed before the
					// program turns echo off is echoed, which does not matter here.
					// script(1) runs its command with $SHELL, which may be dash; ask
					// for bash, and keep the typescript in the test's directory.
					script = "exec script -qec " + shellQuote("bash -c "+shellQuote(script)) + " " + shellQuote(filepath.Join(dir, ".typescript"))
					input = tm.input
					tally.note(false, "", tm.file+"\x00"+tm.command)
				}
			}
			out, stderr, code := bash(t, dir, env, script, input)
			tally.note(true, "")
			t.Logf("%s: $ %s\n%s%s", where, text, clip(out), clip(stderr))
			if code != 0 {
				t.Errorf("%s: exit %d: %s\nstdout:\n%s\nstderr:\n%s", where, code, text, clip(out), clip(stderr))
				continue blocks
			}
			if strings.Contains(stderr, " is deprecated; use ") {
				t.Errorf("%s: %s: the doc uses a deprecated spelling:\n%s", where, text, clip(stderr))
			}
			for _, e := range expectations {
				if e.file == file && strings.Contains(c.text, e.command) {
					if !strings.Contains(out+stderr, e.want) {
						t.Errorf("%s: %s: output lacks %q:\n%s%s", where, text, e.want, clip(out), clip(stderr))
					}
					if e.then != "" {
						if _, stderr, code := bash(t, dir, env, e.then, ""); code != 0 {
							t.Errorf("%s: %s: then %s: exit %d\n%s", where, text, e.then, code, clip(stderr))
						}
					}
				}
			}
		}
	}
	if t.Failed() {
		return // commands after a failure did not run: their entries were not reached
	}
	for _, s := range skips {
		if s.file == file && !tally.wasUsed(s.file+"\x00"+s.command) {
			t.Errorf("skip %q matches no command of %s: remove it", s.command, file)
		}
	}
	for _, s := range substitutions {
		if s.file == file && !tally.wasUsed(s.file+"\x00"+s.old) {
			t.Errorf("substitution %q matches no command of %s: remove it", s.old, file)
		}
	}
	for _, e := range expectations {
		if e.file == file && !tally.wasUsed(e.file+"\x00"+e.command+"\x00expect") {
			t.Errorf("expectation %q matches no command of %s: remove it", e.command, file)
		}
	}
	for _, tm := range terminal {
		if tm.file == file && !tally.wasUsed(tm.file+"\x00"+tm.command) {
			t.Errorf("terminal %q matches no command of %s: remove it", tm.command, file)
		}
	}
}

// bash runs script with bash in dir and returns its stdout, stderr and exit status.
func bash(t *testing.T, dir string, env []string, script, input string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// clip keeps the end of a long output (binary output of a failed pipe, say).
func clip(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// linearArrays writes coefficients.npy (64 values, whole q8_0 blocks) and
// intercept.npy (one value): a LinearRegression's two tensors.
func linearArrays(t *testing.T, dir string) {
	coef := make([]float32, 64)
	for i := range coef {
		coef[i] = float32(math.Sin(float64(i))) / 4
	}
	writeF32(t, filepath.Join(dir, "coefficients.npy"), []int64{64}, coef)
	writeF32(t, filepath.Join(dir, "intercept.npy"), []int64{1}, []float32{0.5})
}

// digitsNPZ writes x.npz: digits' pixels scaled to [0,1] as X (float32, 1797x64)
// and its labels as y (int64), the .npz form of apr-distill's data.
func digitsNPZ(t *testing.T, dir string) {
	f, err := os.Open(filepath.Join(testdata, "digits", "digits.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var x []float32
	var y []int64
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		for i, s := range fields {
			v, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("digits.csv.gz: %v", err)
			}
			if i == len(fields)-1 {
				y = append(y, int64(v))
			} else {
				x = append(x, float32(v)/16)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	rows := int64(len(y))
	out, err := os.Create(filepath.Join(dir, "x.npz"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	z := npy.NewNPZWriter(out, npy.Store)
	if err := z.WriteArray("X", dtype.F32, []int64{rows, int64(len(x)) / rows}, f32Bytes(x)); err != nil {
		t.Fatal(err)
	}
	yb := make([]byte, 8*len(y))
	for i, v := range y {
		binary.LittleEndian.PutUint64(yb[8*i:], uint64(v))
	}
	if err := z.WriteArray("y", dtype.I64, []int64{rows}, yb); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeF32(t *testing.T, path string, shape []int64, v []float32) {
	t.Helper()
	if err := npy.WriteFile(path, dtype.F32, shape, f32Bytes(v)); err != nil {
		t.Fatal(err)
	}
}

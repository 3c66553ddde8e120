# apr: build, test, demo, benchmarks. `make test` and `make demo` work on a fresh
# machine with Go installed (Go modules come through the module proxy); .ci/run also
# installs the registry peers the tests run against (python3-numpy, python3-torch,
# minisign, age, argon2, npm packages).

GO       ?= go
BIN      := $(CURDIR)/bin
TOOLS    := $(CURDIR)/bin/tools
WAZERO   := github.com/tetratelabs/wazero/cmd/wazero@v1.12.0
PKGS_LIB := ./lib/... ./kernels/...
PKGS_WASM := $(PKGS_LIB) ./cmd/...
FUZZTIME ?= 3s

.PHONY: all build fmt vet test test-all test-native test-purego test-arm64 test-wasm test-wasip1 test-fuzz test-pipelines test-peers \
        test-docs test-ollama test-oms test-browser test-synth1g golden lint demo models browser bench bench-llm bench-giant bench-giant-moe fuzz install clean

all: build

# The programs are built with GOEXPERIMENT=simd so the kernels' AVX-512/AVX2 fast paths
# are compiled in (chosen at run time by CPU features). A plain build (go install) has the
# kernels' assembly instead: AVX2/F16C on amd64, NEON on arm64 (docs/QUANT.md, "Assembly kernels");
# the simd build uses it too where it has nothing faster. Elsewhere the plain Go reference.
SIMD := GOEXPERIMENT=simd

# ...and without cgo (docs/SECURITY.md, "Memory"): nothing in apr needs it, and a binary
# linked with glibc (only because os/user and net have cgo variants) reserves a 64 MiB
# malloc arena and an 8 MiB stack a thread, up to twice the address space of a pure Go
# one, so that it runs out under ulimit -v where a pure Go one does not.
build:
	CGO_ENABLED=0 $(SIMD) $(GO) build -o $(BIN)/ ./cmd/...

# make install [PREFIX=/usr/local] [DESTDIR=]: the programs into PREFIX/bin, their man
# pages and bash, zsh and fish completions (generated from the kong models by each
# program's --man and --completion=SHELL) under PREFIX/share.
PREFIX  ?= /usr/local
SHARE   := $(DESTDIR)$(PREFIX)/share
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(SHARE)/man/man1 $(SHARE)/bash-completion/completions \
		$(SHARE)/zsh/site-functions $(SHARE)/fish/vendor_completions.d
	for p in $(BIN)/apr-*; do n=$$(basename $$p); \
		install -m 755 $$p $(DESTDIR)$(PREFIX)/bin/$$n && \
		$$p --man > $(SHARE)/man/man1/$$n.1 && \
		$$p --completion=bash > $(SHARE)/bash-completion/completions/$$n && \
		$$p --completion=zsh > $(SHARE)/zsh/site-functions/_$$n && \
		$$p --completion=fish > $(SHARE)/fish/vendor_completions.d/$$n.fish || exit 1; \
	done

# lint: gofmt (make test) and go vet (make test-all; go test runs vet's quickest checks).
lint: fmt vet

fmt:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

vet:
	$(GO) vet ./...
	cd $(BROWSER_E2E) && $(GO) vet ./...

# make test: a newcomer's check, a few minutes on 2 cores: gofmt, then every
# package's tests natively, the long cases in short mode (-short: whole-pipeline builds
# such as the demo and the Make build, every preset of every checkpoint, the peers that
# need npm or PyTorch).
# The programs are built once for both whole-pipeline test packages (APR_TEST_BIN).
test: fmt
	CGO_ENABLED=0 $(GO) build -o $(BIN)/test/ ./cmd/...
	APR_TEST_BIN=$(BIN)/test $(GO) test -short ./...

# make test-all: every other leg, which .ci/run runs after make test: every package's
# tests in full (with the race detector on the concurrent packages, and the kernels' fast
# paths against their reference: the assembly in the plain build, and under
# GOEXPERIMENT=simd), pure Go, arm64 under qemu, js/wasm under node, wasip1 under
# wazero, brief fuzzing, Ollama's parsers, sigstore-go on OMS bundles, the browser page,
# llama.cpp on apr's files (test-peers) and the 1 GiB synth against llama-quantize's sums.
# The legs and their times on 2 cores: docs/DESIGN.md, "Tests".
test-all: lint test-native test-purego test-arm64 test-wasm test-wasip1 test-fuzz test-ollama test-oms test-browser test-peers test-synth1g

test-native:
	$(GO) test ./...
	$(GO) test -race -short ./lib/container/ ./lib/apr/
	$(SIMD) $(GO) test ./kernels/ ./lib/quant/ ./lib/model/ ./lib/distill/

test-purego:
	$(GO) test -short -tags purego,noasm $(PKGS_LIB)

# The kernels' tests cross-compiled for arm64 and run under qemu-user (Debian's
# qemu-user-static): the NEON kernels against the pure-Go reference, and the pure-Go
# build's bytes against ggml's golden files. Skipped with a message where qemu is
# missing, except under .ci/run (APR_REQUIRE_PEERS=1), which installs it.
QEMU_ARM64 ?= qemu-aarch64-static
test-arm64:
	@if ! command -v $(QEMU_ARM64) >/dev/null; then \
		echo "test-arm64: $(QEMU_ARM64) not found (apt-get install qemu-user-static)"; \
		if [ -n "$$APR_REQUIRE_PEERS" ]; then exit 1; fi; echo "test-arm64: skipped"; \
	else \
		set -x; GOARCH=arm64 $(GO) test -exec $(QEMU_ARM64) -short ./kernels/ && \
		GOARCH=arm64 $(GO) test -exec $(QEMU_ARM64) -tags purego -run 'Golden' ./kernels/; \
	fi

test-wasm:
	PATH="$$($(GO) env GOROOT)/lib/wasm:$$PATH" GOOS=js GOARCH=wasm $(GO) test -short $(PKGS_WASM)

$(TOOLS)/wazero:
	GOBIN=$(TOOLS) $(GO) install $(WAZERO)

test-wasip1: $(TOOLS)/wazero
	PATH="$(TOOLS):$$($(GO) env GOROOT)/lib/wasm:$$PATH" GOWASIRUNTIME=wazero GOOS=wasip1 GOARCH=wasm $(GO) test -short $(PKGS_WASM)

test-fuzz:
	FUZZTIME=$(FUZZTIME) .ci/fuzz

# apr-gguf modelfile against Ollama's own parser and template packages and the Jinja
# original (python3-jinja2): pipelines/ollama is a module of its own, so that apr's
# library never depends on Ollama.
test-ollama:
	cd pipelines/ollama && $(GO) vet . && $(GO) test -count=1 .

# OMS bundles apr writes, checked by sigstore-go and the spec's JSON schemas
# (docs/SIGNING.md): pipelines/oms is a module of its own, so that apr's go.mod keeps
# only the libraries apr needs.
test-oms:
	cd pipelines/oms && $(GO) vet . && $(GO) test -count=1 .

test-pipelines:
	$(GO) test -count=1 ./pipelines/

# The programs' testscript sessions and every command of the docs (part of test-native).
test-docs:
	$(GO) test -count=1 ./pipelines/doctest/

# The browser page's test in a real headless Chromium (docs/BROWSER.md); a module of
# its own, so chromedp stays out of go.mod. Skips without chromium unless
# APR_REQUIRE_PEERS=1 (or CI=true).
BROWSER_E2E := pipelines/browser/e2e
test-browser:
	cd $(BROWSER_E2E) && $(GO) test -count=1 ./...

# Rewrite the golden files of every test that has them (-update; docs/DESIGN.md, "Tests");
# the browser test's module runs from its own directory.
golden:
	$(GO) test -count=1 $$(grep -rl --include='*_test.go' '^var update = flag.Bool("update"' . | xargs -n1 dirname | grep -v '^./$(BROWSER_E2E)' | sort -u) -update
	cd $(BROWSER_E2E) && $(GO) test -count=1 . -update

# Longer fuzzing of every target: make fuzz FUZZTIME=10m
fuzz:
	FUZZTIME=$(if $(filter 3s,$(FUZZTIME)),2m,$(FUZZTIME)) .ci/fuzz

demo: build
	PATH="$(BIN):$$PATH" pipelines/demo.sh

# The browser page on http://localhost:8080/ (docs/BROWSER.md): apr.wasm built with
# GOOS=js, the embedded pipeline's signed model, its key pinned. Ctrl-C stops it.
browser:
	$(GO) run ./pipelines/browser

# The Make-driven model build (pipelines/README.md): signed .apr, GGUF, SafeTensors,
# sealed copies and a manifest under pipelines/build (MODELS_OUT), then checked.
MODELS_OUT ?= build
models: build
	PATH="$(BIN):$$PATH" $(MAKE) -C pipelines OUT=$(MODELS_OUT) check

# Whole-process benchmarks on generated 1 GiB models and a 2.2 GB TinyLlama-shaped
# checkpoint (results: docs/BENCHMARKS.md), and
# distillation on digits beside PyTorch (.ci/bench-distill, needs python3-torch), and
# apr-predict beside scikit-learn (.ci/bench-predict, needs python3-sklearn), and
# apr's quantizing pipeline beside llama-quantize (.ci/bench-vs-llama; LLAMA_QUANTIZE
# names a llama.cpp build's llama-quantize, else apr's column only).
# Each script prints its own table; BENCH_DIR keeps and reuses the generated inputs.
# The headline job alone: a TinyLlama-shaped checkpoint to f16, q8_0 and q4_k_m in one
# pipe; LLAMA_CONVERT and LLAMA_QUANTIZE put llama.cpp's tools beside it (.ci/bench-llm).
bench-llm: build
	PATH="$(BIN):$$PATH" .ci/bench-llm

# A 30 GB checkpoint, bigger than memory, to a split Q4_K_M set in one pipe; llama.cpp
# loads it (.ci/bench-giant: about 45 GB of free disk; LLAMA_CONVERT adds the converter).
bench-giant:
	.ci/bench-giant

# The same with a Qwen3-MoE-shaped checkpoint of 128 experts a layer (.ci/bench-giant-moe:
# about 50 GB of free disk).
bench-giant-moe:
	.ci/bench-giant-moe

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 3x ./lib/container/ ./kernels/
	$(GO) test -run '^$$' -bench EmbeddedColdStart -benchtime 500x ./pipelines/
	for b in .ci/bench .ci/bench-quant .ci/bench-st .ci/bench-gguf .ci/bench-sec .ci/bench-oms .ci/bench-distill .ci/bench-llm .ci/bench-predict .ci/bench-vs-llama; do \
		[ ! -x $$b ] || PATH="$(BIN):$$PATH" $$b || exit 1; \
	done

# Peers too large or slow for every CI run: llama.cpp (npm's node-llama-cpp) loads and
# runs a model after apr-gguf import | apr-quant q8_0 | apr-gguf export, and its logits
# on apr's conversions of the test checkpoints match a NumPy forward pass of them, it
# loads and runs conversions at the edge values apr's loader checks accept, and its mtmd
# (compiled from the package's source with g++) loads apr's vision projector and refuses
# the converter's.
test-peers: build
	PATH="$(BIN):$$PATH" .ci/test-peers-gguf
	PATH="$(BIN):$$PATH" .ci/test-peers-forward
	PATH="$(BIN):$$PATH" .ci/test-peers-loader
	PATH="$(BIN):$$PATH" .ci/test-peers-mmproj

# apr-quant's one command on the 1 GiB synth, every i-quant, ternary, MXFP4 and Q2_K_S
# preset with and without an importance matrix, against today's llama-quantize's sums
# (testdata/quant/synth1g; needs about 2 GiB of free space under TMPDIR).
test-synth1g:
	.ci/test-synth1g

clean:
	rm -rf $(BIN)

# skein — see README.md.
GO      ?= go
BIN     := bin
SHELL   := /bin/bash
WASMENV := GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0
EXAMPLES := race sequence provision
# The linters (make lint), pinned; go run builds them once into the
# build cache.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
ERRCHECK    := github.com/kisielk/errcheck@v1.30.0
GUESTPKGS   := ./guest-sdk/... ./examples/... ./testdata/workflows/...
# The packages whose tests take longest, named first so that go test
# starts them first; -p 3 runs three test binaries at once, since these
# wait on servers and subprocesses more than they compute.
LONGPKGS    := ./host/ ./cmd/skein/ ./internal/testing/readmetest/

.PHONY: test test-all test-race test-wasmtime test-no-snapshots vet lint fmt-check demo bench bench-wasm wasm skein skein-wasmtime install clean

## test: vet, lint, gofmt check, and every test but the slow groups (cross-builds,
## heavy scenarios: see test-all); wasm modules are built inside the tests.
## Ends with a summary line (tests run, skipped, failed) and every skipped
## group with how to enable it (internal/cmd/testsummary). The host's tests
## keep the modules they compile in SKEIN_TEST_CACHE_DIR, by default a
## folder of the user's cache that later runs reuse (.ci/run gives a new
## one); the cmd/skein tests do the same in their own.
SKEIN_TEST_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/skein-host-test
test: vet lint fmt-check
	mkdir -p "$(SKEIN_TEST_CACHE_DIR)"
	set -o pipefail; SKEIN_TEST_CACHE_DIR="$(SKEIN_TEST_CACHE_DIR)" $(GO) test -json -count=1 -timeout 20m -p 3 $(LONGPKGS) ./... 2>&1 | $(GO) run ./internal/cmd/testsummary

## test-all: test, with the slow groups too (SKEIN_TEST_ALL=1); .ci/run runs it
test-all: vet lint fmt-check
	set -o pipefail; SKEIN_TEST_ALL=1 $(GO) test -json -count=1 -timeout 20m ./... 2>&1 | $(GO) run ./internal/cmd/testsummary

## test-race: the tests of the concurrent packages under the race detector
## (needs cgo: a C compiler); host alone takes about 10 minutes on 2 cores
## unless SKEIN_TEST_CACHE_DIR keeps the modules test-all compiled
test-race:
	$(GO) test -race -count=1 -timeout 25m ./host/internal/sched/ ./store/... ./host/ ./host/check/ ./server/ ./worker/ ./client/

## test-wasmtime: the host's behavioural suite with every host on wasmtime
## (SKEIN_TEST_ENGINE), and the engine's own tests, built with -tags
## wasmtime (needs cgo: a C compiler; see docs/engines.md). Its Go guests
## are built as commands (SKEIN_TEST_BUILDMODE=exe), the other suites'
## as reactors (abi/README.md §1.1); it lints the wasmtime files too
test-wasmtime:
	$(GO) vet -tags wasmtime ./host/... ./cmd/skein/ ./internal/bench/
	$(GO) run $(STATICCHECK) -tags wasmtime ./host/internal/engine/
	$(GO) run $(ERRCHECK) -tags wasmtime -ignoretests -exclude errcheck_excludes.txt ./host/... ./cmd/skein/ ./internal/bench/
	$(GO) test -tags wasmtime -count=1 ./host/internal/engine/
	SKEIN_TEST_ENGINE=wasmtime $(GO) test -tags wasmtime -count=1 ./host/internal/modules/
	SKEIN_TEST_BUILDMODE=exe SKEIN_TEST_ENGINE=wasmtime $(GO) test -tags wasmtime -count=1 -timeout 20m ./host/ ./host/check/

## test-no-snapshots: the host's behavioural suite with every host's
## snapshots off (host.Config.DisableSnapshots): each instance runs its
## module's start-up, and the same tests pass (about 2.5 minutes)
test-no-snapshots:
	SKEIN_NO_SNAPSHOTS=1 $(GO) test -count=1 -timeout 20m ./host/

vet:
	$(GO) vet ./...
	$(WASMENV) $(GO) build ./guest-sdk/... ./examples/... ./testdata/workflows/...

## lint: staticcheck (its default checks; a finding wrong for one line
## carries a //lint:ignore saying why) and errcheck (less the functions
## in errcheck_excludes.txt; not on _test.go files) over the module, then
## over the guest packages as wasip1 builds them (their tests are native,
## linted by the first pass). The tools run with `go run` at a pinned
## version: nothing to install, and the build cache keeps the binaries
## (about 10 s warm, 1.5 to 2 min without its caches). -exec runs the
## host-built tool with the guest's GOOS/GOARCH, so that it loads the
## wasip1 files.
lint:
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(ERRCHECK) -ignoretests -exclude errcheck_excludes.txt ./...
	$(GO) run -exec 'env $(WASMENV)' $(STATICCHECK) -tests=false $(GUESTPKGS)
	$(GO) run -exec 'env $(WASMENV)' $(ERRCHECK) -ignoretests -exclude errcheck_excludes.txt $(GUESTPKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## skein: the CLI
skein:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/skein ./cmd/skein

## install: the CLI, into $(go env GOPATH)/bin (put that folder on your PATH)
install:
	CGO_ENABLED=0 $(GO) install ./cmd/skein

## skein-wasmtime: the CLI with the wasmtime engine too (cgo; --engine wasmtime)
skein-wasmtime:
	@mkdir -p $(BIN)
	CGO_ENABLED=1 $(GO) build -tags wasmtime -o $(BIN)/skein-wasmtime ./cmd/skein

## wasm: the example workflow modules, built as reactors (abi/README.md §1.1)
wasm:
	@mkdir -p $(BIN)
	@for e in $(EXAMPLES); do $(WASMENV) $(GO) build -buildmode=c-shared -o $(BIN)/$$e.wasm ./examples/$$e || exit 1; done

## demo: run the reference race live, then with a replay at every wait
demo: skein wasm
	@rm -f $(BIN)/demo.db $(BIN)/demo.db-wal $(BIN)/demo.db-shm
	@echo "== live (--evict never): the instance stays up for the whole run"
	$(BIN)/skein run $(BIN)/race.wasm --db $(BIN)/demo.db --id race-live --evict never
	@echo
	@echo "== replayed (--evict always): the instance is dropped and replayed from the top at every wait"
	$(BIN)/skein run $(BIN)/race.wasm --db $(BIN)/demo.db --id race-replayed --evict always

## bench: every benchmark (docs/PERFORMANCE.md): the six workloads for both
## durabilities with guest interrupts on and off, the engine micro-benchmarks
## and the store.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 60m ./host/ ./host/check/ ./store/sqlite/

## bench-wasm: the workflow module that `skein bench` runs (bin/bench.wasm)
bench-wasm:
	@mkdir -p $(BIN)
	$(WASMENV) $(GO) build -buildmode=c-shared -o $(BIN)/bench.wasm ./testdata/workflows/bench

clean:
	rm -rf $(BIN)

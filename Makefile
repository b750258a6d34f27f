# The README's two commands: `make demo` and `make test`.
GO ?= go

.PHONY: demo test build bench

# Build, then run the demo: a simulated fleet with one incident, end to
# end, on a private Postgres (unless DATABASE_URL is set) and Prometheus;
# it prints the incident page's URL and serves until Ctrl-C. Flags go in
# DEMO_FLAGS, e.g. make demo DEMO_FLAGS="--scenario capacity --keep".
demo: build
	bin/waterline demo $(DEMO_FLAGS)

# The whole test suite, as CI runs it.
test:
	scripts/test-deps.sh
	scripts/test-postgres.sh
	@unformatted=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	@if [ -n "$$(git ls-files -co --exclude-standard '*.templ')" ]; then $(GO) tool templ generate -check; fi
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) test -race -short -count=1 -timeout 30m ./...
	@# Bundle replays push hours of real exporter data through the whole
	@# stack; under -race they take several times as long and exercise no goroutine
	@# the race pass above has not, so they run in a pass of their own.
	$(GO) test -count=1 -timeout 40m -run 'TestReplay|TestBundles' ./diagnose ./cmd/waterline
	scripts/test-clock-shift.sh

build:
	$(GO) build -o bin/waterline ./cmd/waterline

# Ingest throughput next to a raw COPY (not part of test).
bench:
	bench/ingest.sh

#!/usr/bin/env bash
# Samples ingest over HTTP (NDJSON, batches of 5,000) next to a raw COPY of
# the same rows into the same table, in the same run. Prints rows/s and the
# ratio (goal ≥ 0.8). Needs the test Postgres (see README). On a shared
# 2-core machine the figures are noisy: run it more than once.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-3}
out=$(go test -run '^$' -bench BenchmarkSamplesIngest -benchtime "${BENCHTIME:-3x}" -count "$count" ./bench)
echo "$out" | grep -E '^(goos|goarch|cpu|Benchmark)'
echo "$out" | awk '/^BenchmarkSamplesIngest/ {
	for (i = 1; i <= NF; i++) {
		if ($(i+1) == "http_rows/s") h += $i
		if ($(i+1) == "copy_rows/s") c += $i
		if ($(i+1) == "ratio") r += $i
		if ($(i+1) == "http_4clients_rows/s") h4 += $i
	}
	n++
}
END {
	if (n == 0) { print "no benchmark output"; exit 1 }
	printf "\nmean of %d runs: HTTP %.0f rows/s, raw COPY %.0f rows/s, ratio %.2f (goal >= 0.8); HTTP with 4 clients %.0f rows/s\n", n, h/n, c/n, r/n, h4/n
}'

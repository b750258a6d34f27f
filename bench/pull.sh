#!/usr/bin/env bash
# Pull throughput (issue 3's measures), against a real Prometheus and the
# local Postgres:
#   - one public bundle (3 h at 15 s): seconds per pull, Waterline's rate in
#     samples/s next to Prometheus' own query_range rate for the same
#     queries in the same run, and their ratio (goal ≥ 0.5);
#   - 24 h of a generated fleet of 200 replicas on 40 nodes (scraped and
#     pulled at 60 s): seconds per pull (goal < 60 s).
# Usage: bench/pull.sh [benchtime, default 3x]. Results also go to
# bench/results/ (not committed). Needs promtool/prometheus (Debian package
# "prometheus") and Postgres (WATERLINE_TEST_DATABASE_URL).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
out="bench/results/pull-$(date -u +%Y%m%dT%H%M%SZ).txt"
go test ./pull -run '^$' -bench 'BenchmarkPullBundle|BenchmarkPull24hFleet' -benchtime "${1:-3x}" -timeout 60m | tee "$out"

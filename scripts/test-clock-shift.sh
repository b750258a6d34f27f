#!/usr/bin/env bash
# Runs the time-sensitive suites with the test clock moved by +400 and
# -400 days (WATERLINE_TEST_CLOCK_SHIFT, read by internal/testing/testclock). A
# fixture tied to a date, next to something that reads the real clock
# (cookie jar, Chromium, Prometheus, Postgres, a stray time.Now), fails
# here today instead of on some future day in everyone's CI.
#
# The suites are the packages whose tests use the test clock, directly or
# through internal/testing/stacktest; -short leaves out the bundle replays, whose
# data carries its own fixed dates.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
pkgs=$($GO list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
	awk '{for (i = 2; i <= NF; i++) if ($i ~ /\/internal\/testing\/(testclock|stacktest)$/) {print $1; next}}')
if [ -z "$pkgs" ]; then
	echo "test-clock-shift: no package uses internal/testing/testclock; nothing to check" >&2
	exit 1
fi
for shift in 400d -400d; do
	echo "test-clock-shift: WATERLINE_TEST_CLOCK_SHIFT=$shift" >&2
	# shellcheck disable=SC2086
	WATERLINE_TEST_CLOCK_SHIFT=$shift $GO test -count=1 -short -timeout 30m $pkgs
done

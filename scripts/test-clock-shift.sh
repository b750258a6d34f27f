#!/usr/bin/env bash
# Runs the time-sensitive suites with the test clock moved by +400 days
# and by -400 days plus 11 hours (WATERLINE_TEST_CLOCK_SHIFT, read by
# internal/testing/testclock). A fixture tied to a date, next to something
# that reads the real clock (cookie jar, Chromium, Prometheus, Postgres, a
# stray time.Now), fails here today instead of on some future day in
# everyone's CI. The 11 hours move the simulated fleets' start to another
# time of day (their traffic follows the clock), so each run tries a
# second hour: a test that holds only at some hours (the browser story's
# pool line did) has two chances a run to show it.
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
for shift in 400d -9589h; do # -9589h = -400 d + 11 h
	echo "test-clock-shift: WATERLINE_TEST_CLOCK_SHIFT=$shift" >&2
	# shellcheck disable=SC2086
	WATERLINE_TEST_CLOCK_SHIFT=$shift $GO test -count=1 -short -timeout 30m $pkgs
done

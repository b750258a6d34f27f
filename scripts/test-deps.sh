#!/usr/bin/env bash
# Installs what the test suite needs beyond Go and Postgres, idempotently:
# Debian's prometheus (prometheus + promtool, for the pull tests),
# victoria-metrics (single node, the other Prometheus-compatible backend the
# pull is tested against) and chromium (for the browser tests). apt runs
# only when something is missing.
set -euo pipefail

missing=()
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v victoria-metrics >/dev/null 2>&1 || missing+=(victoria-metrics)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "test-deps: missing ${missing[*]}; install them with:" >&2
	echo "  sudo apt-get update && sudo $cmd" >&2
	exit 1
fi
echo "test-deps: installing ${missing[*]} (apt)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd >/dev/null

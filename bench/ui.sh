#!/usr/bin/env bash
# Incident page speed: replays a bundle through the real stack (Postgres,
# Prometheus, pull, analysis; the shared 01-release when present, else a
# simulated release), then loads a static asset, the incident page (signed
# in) and the share page with wrk on loopback — 50 connections each for
# DURATION (default 10s) — and prints the latency percentiles
# (p50/p95/p99), each page's p95 as a multiple of the static asset's, and
# the bytes of one page, plain and gzip. wrk and the server share the machine's cores, so on a small box
# the figures are upper bounds and noisy: run it more than once.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "ui.sh: wrk not found (apt-get install -y wrk)" >&2; exit 1; }
dur=${DURATION:-10s}
conns=${CONNECTIONS:-50}
dir=$(mktemp -d)
trap 'touch "$dir/stop"; wait; rm -rf "$dir"' EXIT
WATERLINE_UI_BENCH_DIR=$dir go test -run '^TestUIServe$' -count=1 -timeout 30m -v ./bench >"$dir/log" 2>&1 &
for _ in $(seq 1 600); do
	[ -s "$dir/url" ] && break
	if ! kill -0 $! 2>/dev/null; then cat "$dir/log" >&2; exit 1; fi
	sleep 0.5
done
[ -s "$dir/url" ] || { cat "$dir/log" >&2; echo "ui.sh: the stack did not come up" >&2; exit 1; }
url=$(cat "$dir/url"); cookie=$(cat "$dir/cookie"); share=$(cat "$dir/share")
echo "bundle $(cat "$dir/bundle"): $url"
cat >"$dir/pct.lua" <<'LUA'
done = function(summary, latency, requests)
	io.write(string.format("p50 %.1f ms  p95 %.1f ms  p99 %.1f ms  max %.1f ms  (%d requests, %d errors)\n",
		latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
		summary.requests, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
	io.write(string.format("P95US %d\n", latency:percentile(95)))
end
LUA
bytes() { curl -s -o /dev/null -w '%{size_download}' "$@"; }
echo "HTML bytes, incident page: $(bytes -H "Cookie: $cookie" "$url") plain, $(bytes -H "Cookie: $cookie" -H 'Accept-Encoding: gzip' "$url") gzip"
echo "HTML bytes, share page:    $(bytes "$share") plain, $(bytes -H 'Accept-Encoding: gzip' "$share") gzip, $(bytes -H 'Accept-Encoding: br' "$share") brotli"
echo "bytes per filtered fragment: $(bytes -H "Cookie: $cookie" -H 'HX-Request: true' -H 'HX-Target: filtered' "$url?page=2") plain"
static="${url%%/incidents/*}/static/app.css"
curl -s -o /dev/null -H "Cookie: $cookie" "$url" # warm caches
curl -s -o /dev/null "$share"
# One run: a static asset of the same server, the signed-in incident page
# and the share page, each with $conns connections for $dur, as browsers
# ask (Accept-Encoding: gzip). The p95 ratio to the static asset is what
# compares across machines.
declare -A p95
measure() { # name, wrk arguments…
	local name=$1
	shift
	echo "$name, $conns connections, $dur, Accept-Encoding: gzip"
	local out
	out=$(wrk -t2 -c"$conns" -d"$dur" --latency -s "$dir/pct.lua" -H 'Accept-Encoding: gzip' "$@")
	echo "$out" | grep -E 'Requests/sec|Transfer/sec|p50'
	p95[$name]=$(echo "$out" | awk '/^P95US/ {print $2}')
}
measure "static asset" "$static"
measure "incident page" -H "Cookie: $cookie" "$url"
measure "share page" "$share"
echo "p95 as a multiple of the static asset's p95 (${p95[static asset]} µs):"
for name in "incident page" "share page"; do
	awk -v n="$name" -v a="${p95[$name]}" -v s="${p95[static asset]}" \
		'BEGIN { printf "  %-14s p95 %.1f ms  ×%.1f\n", n, a / 1000, (s > 0 ? a / s : 0) }'
done
echo "share page, $conns connections, $dur, revalidating (If-None-Match: its ETag, answered 304)"
etag=$(curl -s -o /dev/null -D - -H 'Accept-Encoding: gzip' "$share" | awk -F': ' 'tolower($1) == "etag" {gsub("\r", "", $2); print $2}')
wrk -t2 -c"$conns" -d"$dur" --latency -s "$dir/pct.lua" -H 'Accept-Encoding: gzip' -H "If-None-Match: $etag" "$share" | grep -E 'Requests/sec|p50'
# Every request a window of its own: nothing comes from the 10-second
# cache, so this is the cost of the queries themselves (the worst case).
read -r wfrom wto <"$dir/window" || true # no trailing newline
cat "$dir/pct.lua" >"$dir/cold.lua"
cat >>"$dir/cold.lua" <<LUA
math.randomseed(os.time())
request = function()
	local off = math.random(0, 1200)
	local from = os.date("!%Y-%m-%dT%H:%M:%SZ", $wfrom - 1800 + off)
	local to = os.date("!%Y-%m-%dT%H:%M:%SZ", $wto + off)
	return wrk.format("GET", wrk.path .. "?from=" .. from .. "&to=" .. to)
end
LUA
echo "incident page, uncached (a new window per request), $conns connections, $dur"
wrk -t2 -c"$conns" -d"$dur" --latency -s "$dir/cold.lua" -H "Cookie: $cookie" "$url" | grep -E 'Requests/sec|p50'


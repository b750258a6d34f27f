#!/usr/bin/env bash
# Detection delay, live (issue 12): runs `waterline demo --live` once per
# scenario — Prometheus scraping the simulated exporters every 5 s, serve's
# pull loop every 5 s and detector every 10 s, only the detector opening
# the incident — and prints, for each, the seconds from the injected onset
# to: the spike recorded by the detector, the incident opened, the analysis
# ready and the first webhook delivered. Goal: incident opened ≤ 60 s after
# the onset, analysis ready ≤ 10 s after that.
#
# The breakdown columns say where the time goes, all after the onset:
#   departs   the onset of the first spike in the pulled curve (the cause's
#             own ramp, and the 30 s rate window of the presets' queries);
#   confirmed when the data alone confirms the spike (its detected_at);
#   recorded  when the detector recorded it: confirmed + the scrape (≤ 5 s),
#             the pull delay (5 s) and interval (≤ 5 s), and the detector
#             pass the pull round wakes (the 10 s interval is the fallback);
#   opened    when the detector opened the incident: recorded + its
#             opening rule (the spike added 90 s of latency relative to its
#             baseline — ×1.5 for 3 min, ×2 for 90 s, ×3 for 45 s — or held
#             3 min, or peaked at 3× the baseline; or at once, when a
#             change event of its model came up to 15 min before it).
# These four are for the spike that opened the incident ("opener": its
# quantile and how far above its baseline it had gone).
#
# Usage: bench/live.sh [scenario ...] (default: release capacity batching
# downstream). FLEET=default uses the default fleet instead of -small;
# INJECT_AFTER (default 30s). Results (and each demo's log) also go to bench/results/. Needs
# prometheus and promtool (Debian package "prometheus") and Postgres'
# binaries (the demo starts a private cluster), or DATABASE_URL.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
out="bench/results/live-$(date -u +%Y%m%dT%H%M%SZ).txt"
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(release capacity batching downstream)
size=(-small)
[ "${FLEET:-small}" = default ] && size=()
go build -o bin/waterline ./cmd/waterline
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rows=()
for sc in "${scenarios[@]}"; do
	log="$work/$sc"
	bin/waterline demo --live "${size[@]}" --scenario "$sc" --inject-after "${INJECT_AFTER:-30s}" \
		--addr 127.0.0.1:0 >"$log.out" 2>"$log.err" &
	pid=$!
	# Wait for the delays (or the demo giving up), then Ctrl-C it.
	while kill -0 "$pid" 2>/dev/null && ! grep -qs '^live: ' "$log.out"; do sleep 1; done
	sleep 1
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" || true
	cp "$log.err" "${out%.txt}-$sc.log"
	live=$(grep '^live: ' "$log.out" || true)
	delays=$(grep '^live delays' "$log.err" || true)
	brk=$(grep '^live breakdown' "$log.err" || true)
	if [ -z "$live" ]; then
		echo "$sc: no incident; the demo said:" >&2
		tail -5 "$log.err" >&2
		rows+=("$(printf '%-14s %s' "$sc" 'no incident opened')")
		continue
	fi
	num() { sed -n "s/.*$1 \(-\{0,1\}[0-9]*s\|-\).*/\1/p" <<<"$2"; }
	top=$(sed -n 's/.*top cause \(.*\)$/\1/p' <<<"$live")
	opener=$(sed -n 's/.*incident opened [0-9-]*s* (\(.*\) latency on .*, \(×[0-9.]*\))$/\1 \2/p' <<<"$brk")
	rows+=("$(printf '%-14s %9s %9s %9s %9s   %8s %9s %8s %7s %-9s   %s' "$sc" \
		"$(num 'spike recorded' "$delays")" "$(num 'incident opened' "$delays")" \
		"$(num 'analysis ready' "$delays")" "$(num 'webhook delivered' "$delays")" \
		"$(num 'curve departs' "$brk")" "$(num 'spike confirmed in the data' "$brk")" \
		"$(num 'recorded by the detector' "$brk")" "$(num 'incident opened' "$brk")" "${opener:--}" "$top")")
	echo "$sc: $live" >&2
done

{
	echo "waterline demo --live ${size[*]} (scrape 5s, pull 5s, detector 10s, inject after ${INJECT_AFTER:-30s}); seconds after the injected onset"
	printf '%-14s %9s %9s %9s %9s   %8s %9s %8s %7s %-9s   %s\n' scenario spike incident analysis webhook departs confirmed recorded opened opener 'top cause'
	printf '%s\n' "${rows[@]}"
} | tee "$out"

#!/usr/bin/env bash
# Accuracy of the diagnosis: replays incident bundles through Waterline
# exactly as the acceptance check does (../shared/eval/replay: fresh
# database, real Prometheus, CLI and HTTP API only) and prints top-1 / top-3
# per category, target hits and onset errors.
#
#   bench/accuracy.sh                 # the shared bundles, plus simulated ones
#   SEEDS="1 2 3" bench/accuracy.sh   # more simulated seeds
#   STRENGTH=0.5 bench/accuracy.sh    # weaker simulated causes
#
# Needs ../shared/eval/replay (the product's shared material); without it,
# `go test ./diagnose -run TestReplay` covers the simulated incidents.
set -euo pipefail
cd "$(dirname "$0")/.."
replay=${REPLAY:-../shared/eval/replay}
[ -x "$replay" ] || [ -f "$replay" ] || { echo "accuracy: $replay not found" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/waterline" ./cmd/waterline
go build -o "$work/simbundle" ./sim/cmd/simbundle

bundles=()
if [ -d ../shared/scenarios ]; then
	for b in ../shared/scenarios/*/; do bundles+=("$b"); done
fi
for seed in ${SEEDS:-7}; do
	for sc in release capacity local_replica batching cold_start downstream routing ingress none; do
		"$work/simbundle" -scenario "$sc" -seed "$seed" -confounders -strength "${STRENGTH:-1}" -out "$work/sim-$sc-$seed" >/dev/null 2>&1
		bundles+=("$work/sim-$sc-$seed")
	done
done

: >"$work/results.jsonl"
for b in "${bundles[@]}"; do
	if python3 "$replay" "$b" --bin "$work/waterline" --json >>"$work/results.jsonl" 2>"$work/last.log"; then
		tail -n 1 "$work/last.log" >&2
	else
		echo "accuracy: replay of $b failed:" >&2
		tail -n 5 "$work/last.log" >&2
	fi
done

python3 - "$work/results.jsonl" <<'PY'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
per = collections.defaultdict(lambda: collections.Counter())
onsets = []
for r in rows:
    c = r["category"]
    k = per[c]
    k["n"] += 1
    if c == "none":
        k["top1"] += r.get("pass", False)
        k["top3"] += r.get("pass", False)
        k["target"] += r.get("pass", False)
        continue
    k["top1"] += bool(r.get("top1"))
    k["top3"] += bool(r.get("top3"))
    k["target"] += bool(r.get("target_ok"))
    k["spike"] += bool(r.get("spike_found"))
    if r.get("onset_error_s") is not None:
        onsets.append(abs(r["onset_error_s"]))
print(f"{'category':<14} {'n':>3} {'top-1':>6} {'top-3':>6} {'target':>7}")
tot = collections.Counter()
for c in sorted(per):
    k = per[c]
    tot.update(k)
    print(f"{c:<14} {k['n']:>3} {k['top1']/k['n']:>6.2f} {k['top3']/k['n']:>6.2f} {k['target']/k['n']:>7.2f}")
print(f"{'all':<14} {tot['n']:>3} {tot['top1']/tot['n']:>6.2f} {tot['top3']/tot['n']:>6.2f} {tot['target']/tot['n']:>7.2f}")
print("random ranking (dummy) top-1: 0.12, top-3: 0.38")
if onsets:
    onsets.sort()
    print(f"|onset error| of the closest spike: median {onsets[len(onsets)//2]} s, max {onsets[-1]} s over {len(onsets)} incidents")
PY

#!/usr/bin/env bash
# Checkpoints against the peer at equal durability, in the same run:
# LangGraph.js's SqliteSaver with synchronous=FULL (peer.mjs) and hearth's
# store (BenchmarkCheckpoint, put, one run and eight), interleaved in
# ROUNDS rounds of PUTS puts each. Needs node and npm (npm ci builds
# better-sqlite3 against the local node headers).
#
#   ROUNDS=3 PUTS=2000 bench/peer/run.sh
set -euo pipefail
cd "$(dirname "$0")"
ROUNDS=${ROUNDS:-3}
PUTS=${PUTS:-2000}
if [ ! -d node_modules/better-sqlite3/build ]; then
	npm install --no-audit --no-fund >/dev/null
	npm rebuild better-sqlite3 >/dev/null
fi
printf '| round | peer, synchronous=FULL | store, 1 run | store, 8 runs |\n| --- | --- | --- | --- |\n'
for r in $(seq "$ROUNDS"); do
	dir=$(mktemp -d)
	peer=$(node peer.mjs "$dir" "$PUTS" FULL)
	rm -rf "$dir"
	out=$(cd ../.. && go test -run '^$' -bench "Checkpoint/op=put$/writers=(1|8)$/side=store$" -benchtime "${PUTS}x" ./host/store/)
	one=$(echo "$out" | awk '/op=put\/writers=1\/side=store/ {for (i=1;i<=NF;i++) if ($(i+1)=="checkpoints/s") print $i}')
	eight=$(echo "$out" | awk '/op=put\/writers=8\/side=store/ {for (i=1;i<=NF;i++) if ($(i+1)=="checkpoints/s") print $i}')
	printf '| %d | %s/s | %s/s (%.2fx) | %s/s (%.2fx) |\n' "$r" "$peer" "$one" "$(echo "$one / $peer" | bc -l)" "$eight" "$(echo "$eight / $peer" | bc -l)"
done

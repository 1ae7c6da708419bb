#!/usr/bin/env bash
# The assignor benchmark (crates/engine/benches/assignors.rs) side by side
# with Kafka's own Java on the same case, alternately, ROUNDS times (default
# 5), so both see the same machine at the same time. Kafka's side is built
# from Kafka's source as ../shared/kafka-java/README.md says; pass the
# classpath file its build.sh writes. Prints each round's figures and the
# ratios (Java's time over ours). Speed only: nothing here fails on a time.
#
#   scripts/bench-assignors-vs-java.sh /path/to/KDIFF_JAVA/classpath.txt 5
set -euo pipefail
classpath=$(cat "${1:?usage: scripts/bench-assignors-vs-java.sh CLASSPATH_FILE [ROUNDS]}")
rounds=${2:-5}
root=$(git rev-parse --show-toplevel)
bin=$(cd "$root" && cargo bench -p kafkascope-engine --bench assignors --no-run 2>&1 \
  | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1)
case "$bin" in /*) ;; ?*) bin="$root/$bin" ;; esac
[ -x "$bin" ] || { echo "the benchmark did not build" >&2; exit 1; }

# Kafka's StickyBench: prints initial_ms=N rebalance_ms=N (a warm-up first).
java_run() { java -cp "$classpath" org.apache.kafka.clients.consumer.StickyBench "$1" 500 2000 2000 2>/dev/null | head -1; }

for round in $(seq 1 "$rounds"); do
  java_sticky=$(java_run sticky)
  ours=$("$bin")
  java_coop=$(java_run coop)
  echo "round $round"
  echo "  Kafka (Java) sticky:             $java_sticky"
  echo "  Kafka (Java) cooperative-sticky: $java_coop"
  echo "$ours" | sed 's/^/  /'
  # Ratios for each of our lines: Java's time over ours, per step.
  echo "$ours" | awk -v js="$java_sticky" -v jc="$java_coop" '
    function field(text, name,   parts) { match(text, name "=[0-9.]+"); split(substr(text, RSTART, RLENGTH), parts, "="); return parts[2] }
    /^(sticky|cooperative-sticky) / {
      java = ($1 == "sticky") ? js : jc
      printf "  ratio %-20s initial %5.1fx  rebalance %6.1fx\n", $1, field(java, "initial_ms") / $3, field(java, "rebalance_ms") / $6
    }'
done

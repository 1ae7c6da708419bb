#!/usr/bin/env bash
# The simulator benchmark (crates/engine/benches/simulator.rs) of two
# versions in one run: BASE (a git revision) and the working tree, built
# alike (the bench profile), then run alternately RUNS times (default 5) so
# both see the same machine. Prints each run's lines, prefixed with the
# version. Speed only: nothing here fails on a time.
#
#   scripts/bench-side-by-side.sh f5c0141 5
set -euo pipefail
base=${1:?usage: scripts/bench-side-by-side.sh BASE [RUNS]}
runs=${2:-5}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
git -C "$root" worktree add --quiet --detach "$work/base" "$base"
trap 'git -C "$root" worktree remove --force "$work/base"' EXIT

# Builds the benchmark in $1 with target dir $2 and prints its executable.
build() {
  local bin
  bin=$(cd "$1" && CARGO_TARGET_DIR="$2" cargo bench -p kafkascope-engine --bench simulator --no-run 2>&1 \
    | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1)
  # (cargo names it relative to the folder it ran in when it can.)
  case "$bin" in /*) echo "$bin" ;; ?*) echo "$1/$bin" ;; esac
}
base_bin=$(build "$work/base" "$root/target/bench-base")
head_bin=$(build "$root" "$root/target")
[ -x "$base_bin" ] && [ -x "$head_bin" ] || { echo "a benchmark did not build" >&2; exit 1; }
for run in $(seq 1 "$runs"); do
  "$base_bin" | sed "s/^/base $base, run $run: /"
  "$head_bin" | sed "s/^/working tree, run $run: /"
done

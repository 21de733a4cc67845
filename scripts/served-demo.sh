#!/usr/bin/env bash
# served-demo.sh EVOSTEER FAKE_ENGINE RUN STEPS — a run whose reference policy ρ is a served model:
# starts the fake engine (the test suite's exact tiny language model, SGLang's dialect) on a free
# loopback port, writes an overlay with served_reference pointing at it and a small batch, and
# runs init (if RUN is new), train STEPS steps, eval 1 run and report. The engine stops with the
# script. See docs/SERVED-REFERENCE.md.
set -euo pipefail
evosteer=${1:?usage: served-demo.sh EVOSTEER FAKE_ENGINE RUN STEPS}
engine=${2:?}
run=${3:?}
steps=${4:-3}
tmp=$(mktemp -d)
"$engine" -dialect sglang -url-file "$tmp/url" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [ -s "$tmp/url" ] && break; sleep 0.1; done
[ -s "$tmp/url" ] || { echo "served-demo: the fake engine did not start" >&2; exit 1; }
url=$(cat "$tmp/url")
cat > "$tmp/served.yaml" <<YAML
batch:
  tasks: 8
tasks:
  test_per_family: 4
served_reference:
  dialect: sglang
  base_url: $url
  model: fake/qwen
  api_key_env: ""
  template: qwen3
  max_concurrency: 16
  timeout_seconds: 30
  outage_seconds: 30
  cache_decisions: 4096
  rescore_sample: 0.05
  drift_tolerance: 0.1
YAML
if [ ! -f "$run/run.yaml" ]; then "$evosteer" init --config "$tmp/served.yaml" --run "$run"; fi
"$evosteer" train --run "$run" --steps "$steps"
"$evosteer" eval --run "$run" --runs 1
"$evosteer" report --run "$run"
echo "served-demo: run folder $run; ρ served by the fake engine at $url; report $run/report/index.html"

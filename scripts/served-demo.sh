#!/usr/bin/env bash
# served-demo.sh EVOSTEER FAKE_ENGINE RUN STEPS [EXECUTOR] — a run whose reference policy ρ is a
# served model: starts the fake engine (the test suite's exact tiny language model, SGLang's
# dialect) on a free loopback port, writes an overlay with served_reference pointing at it and a
# small batch, and runs init, STEPS training steps, eval 1 run and report. EXECUTOR sim (the
# default) plays the agents on the simulated world; openai plays them on the same fake engine
# through the Chat Completions executor (executor.backend openai), on the tasks of
# configs/demo-tasks.jsonl. The engine stops with the script. See docs/SERVED-REFERENCE.md.
#
# RUN is made afresh: the run's configuration names the engine's port, so a previous demo run
# cannot be resumed; a RUN that holds another run is refused.
#
# Then it checks the prompts tables against what the engine received (its -log): the multiset of
# (prompt sha256, prompt tokens) of the scoring requests the engine answered during the rollouts
# must be that of the prompts rows whose decision sent a request (requests = 1). Only rollout
# writes prompts tables; rescore's drift check, eval and every stage's preflight score prompts
# too, so each step's rollout runs as its own command and only the engine's log lines written
# while it ran are compared, preflights (a one-item request; a decision's has one item per legal
# action, two or more) left out. A mismatch fails the script with one line.
set -euo pipefail
evosteer=${1:?usage: served-demo.sh EVOSTEER FAKE_ENGINE RUN STEPS [sim|openai]}
engine=${2:?}
run=${3:?}
steps=${4:-3}
executor=${5:-sim}
case $executor in
sim | openai) ;;
*) echo "served-demo: EXECUTOR $executor: want sim or openai" >&2; exit 2 ;;
esac
if [ -e "$run" ] && [ -n "$(ls -A "$run")" ]; then
	if ! grep -qs '^    model: fake/qwen$' "$run/run.yaml"; then
		echo "served-demo: $run holds something other than a served-demo run; remove it or set SERVED_RUN" >&2
		exit 1
	fi
	echo "served-demo: removing the previous demo run $run (its engine is gone)"
	rm -rf "$run"
fi
tmp=$(mktemp -d)
log=$tmp/engine.log
"$engine" -dialect sglang -url-file "$tmp/url" -log "$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [ -s "$tmp/url" ] && break; sleep 0.1; done
[ -s "$tmp/url" ] || { echo "served-demo: the fake engine did not start" >&2; exit 1; }
url=$(cat "$tmp/url")
cat > "$tmp/served.yaml" <<YAML
batch:
  tasks: 8
tasks:
  train_per_family: 8
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
taskflags=()
if [ "$executor" = openai ]; then
	# configs/demo-tasks.jsonl holds 8 training and 4 test tasks of each of hotpotqa, nq_open,
	# medqa and aime_2026 (tasks.*_per_family above say so; with --tasks they size nothing).
	cat >> "$tmp/served.yaml" <<YAML
executor:
  backend: openai
  openai:
    base_url: $url/v1
    model: fake/qwen
    api_key_env: ""
    max_concurrency: 16
    timeout_seconds: 30
    outage_seconds: 30
    backoff_seconds: 1
    backoff_max_seconds: 5
YAML
	taskflags=(--tasks configs/demo-tasks.jsonl)
fi
"$evosteer" init --config "$tmp/served.yaml" --run "$run" ${taskflags[@]+"${taskflags[@]}"}
for k in $(seq "$steps"); do
	mark=$(wc -l < "$log")
	"$evosteer" rollout --run "$run" --step "$k"
	tail -n +"$((mark + 1))" "$log" >> "$tmp/rollouts.log"
	"$evosteer" step --run "$run" --step "$k" # the step's other stages; its rollout is up to date
done
"$evosteer" train --run "$run" --steps "$steps" # verifies the steps on disk; nothing is left to run
"$evosteer" eval --run "$run" --runs 1
"$evosteer" report --run "$run"

# The check: "sha256 tokens" per scoring request of a decision, engine side and table side.
scored() { sed -n 's/^{"kind":"score",.*"prompt_sha256":"\([0-9a-f]*\)","prompt_tokens":\([0-9]*\),"items":\([0-9]*\),"billed_in":[0-9]*,"billed_out":[0-9]*}$/\3 \1 \2/p' "$1"; }
scored "$tmp/rollouts.log" | awk '$1 >= 2 { print $2, $3 }' | LC_ALL=C sort > "$tmp/engine.txt"
"$evosteer" sql --run "$run" --format csv \
	"SELECT prompt_sha256 || ' ' || prompt_tokens AS entry FROM prompts WHERE stage = 'rollout' AND requests = 1" |
	tail -n +2 | LC_ALL=C sort > "$tmp/tables.txt"
rows=$("$evosteer" sql --run "$run" --format csv "SELECT count(*) AS n FROM prompts WHERE stage = 'rollout'" | tail -n 1)
received=$(wc -l < "$tmp/engine.txt")
sent=$(wc -l < "$tmp/tables.txt")
preflights=$(scored "$tmp/rollouts.log" | awk '$1 < 2' | wc -l)
others=$(($(scored "$log" | wc -l) - $(scored "$tmp/rollouts.log" | wc -l)))
chats=$(grep -c '^{"kind":"chat",' "$log" || true)
if ! cmp -s "$tmp/engine.txt" "$tmp/tables.txt"; then
	differ=$(LC_ALL=C comm -3 "$tmp/engine.txt" "$tmp/tables.txt" | wc -l)
	echo "served-demo: prompts check FAILED: the engine scored $received decision prompts in the rollouts, the prompts tables hold $sent rows with requests = 1; $differ (sha256, tokens) entries differ" >&2
	exit 1
fi
echo "served-demo: prompts check passed: the engine scored $received decision prompts in the $steps rollouts (besides $preflights preflights), exactly the $sent prompts rows with requests = 1 (of $rows rows; the rest answered from the scorer's cache); outside the rollouts it scored $others prompts (rescore's drift check, eval, preflights) and answered $chats chat completions"
echo "served-demo: run folder $run ($executor executor); ρ served by the fake engine at $url; report $run/report/index.html"

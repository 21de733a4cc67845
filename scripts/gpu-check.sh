#!/usr/bin/env bash
# gpu-check: run the policy network and the Qwen3 model (gpu/qwen3) on a GPU through XLA, check
# them against the CPU kernels and backend, and the model against transformers and peft.
# On a machine with an NVIDIA GPU, Go, and a Python whose packages hold a PJRT CUDA plugin
# (jax-cuda*-pjrt: xla_cuda_plugin.so) and the nvidia-* libraries. No internet is needed beyond
# the Go module cache. Prints what it found, the agreement test and the benchmarks on both.
set -euo pipefail
cd "$(dirname "$0")/.."

plugin=${PJRT_CUDA_PLUGIN:-$(python3 - <<'PY' 2>/dev/null || true
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
hits = [p for r in roots for p in glob.glob(os.path.join(r, "jax_plugins", "*", "xla_cuda_plugin.so"))]
print(hits[0] if hits else "")
PY
)}
nvidia=${NVIDIA_DIR:-$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null || true)}
if [ -z "$plugin" ] || [ ! -f "$plugin" ]; then
  echo "gpu-check: no xla_cuda_plugin.so (pip install jax-cuda13-pjrt, or set PJRT_CUDA_PLUGIN)" >&2
  exit 2
fi
if [ -z "$nvidia" ]; then
  echo "gpu-check: no Python nvidia package (the CUDA libraries; set NVIDIA_DIR to their folder)" >&2
  exit 2
fi
echo "plugin: $plugin"
echo "CUDA data: $nvidia"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true

# go-xla looks for pjrt_c_api_<name>_plugin.so under PJRT_PLUGIN_LIBRARY_PATH, and sets its own
# --xla_gpu_cuda_data_dir unless XLA_FLAGS already holds one.
pjrt=$(mktemp -d)
trap 'rm -rf "$pjrt"' EXIT
ln -s "$plugin" "$pjrt/pjrt_c_api_cuda_plugin.so"
export PJRT_PLUGIN_LIBRARY_PATH=$pjrt
export XLA_FLAGS="--xla_gpu_cuda_data_dir=$nvidia ${XLA_FLAGS:-}"
# The plugin is given above: go-xla (github.com/gomlx/go-xla/compute/xla) must not try to download
# its default plugins, which it does on every backend open unless this is set.
export GOMLX_NO_AUTO_INSTALL=1
export LD_LIBRARY_PATH="$(find "$nvidia" -maxdepth 2 -name lib -type d | paste -sd:):${LD_LIBRARY_PATH:-}"

tags=duckdb_arrow,xla
echo "== agreement: CPU kernels against xla:cuda"
EVOSTEER_COMPARE_BACKEND=xla:cuda go test -tags "$tags" -count=1 -run 'TestBackendsAgree' -v ./gpu
for backend in simplego xla:cuda; do
  echo "== benchmarks on $backend"
  EVOSTEER_TEST_BACKEND=$backend go test -tags "$tags" -count=1 -run '^$' -bench 'BenchmarkUpdate$|BenchmarkPolicyNetScore$' -benchtime 5x ./gpu
done

# The Qwen3 model (gpu/qwen3 TestGPUCheck): a random model of Qwen3-0.6B's shape and a LoRA adapter
# (r 64, α 128) written as Hugging Face and PEFT folders; the graphs on xla:cuda against the CPU
# backend, then transformers and peft on the same folders against ours (required here: pip
# install transformers peft where they are absent), then prefill tokens/s, trie-scored decisions/s
# and the adapter gradient of 192 decisions, written to $QWEN3_CHECK_DIR/metrics.json.
QWEN3_CHECK_DIR=${QWEN3_CHECK_DIR:-$(mktemp -d)}
echo "== Qwen3 model on xla:cuda (folders and metrics in $QWEN3_CHECK_DIR)"
EVOSTEER_QWEN3_GPU_CHECK=$QWEN3_CHECK_DIR EVOSTEER_QWEN3_ORACLE=required EVOSTEER_TEST_BACKEND=xla:cuda \
  go test -tags "$tags" -count=1 -timeout 30m -run '^TestGPUCheck$' -v ./gpu/qwen3

# The language-model orchestrator (pipeline TestLMGPUCheck): a random model of Qwen3-0.6B's shape
# with Qwen3's tokenizer trains 2 steps of 32 tasks on the simulated world through xla:cuda; its
# metrics.json has decisions/s and tokens/s of the rollouts, the update's seconds and the host's
# peak memory; the GPU's peak memory (nvidia-smi, every 0.5 s) is added beside it.
LM_CHECK_DIR=${LM_CHECK_DIR:-$(mktemp -d)}
echo "== the causal-LM orchestrator on xla:cuda, 2 training steps (folders and metrics in $LM_CHECK_DIR)"
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 >"$LM_CHECK_DIR/gpu-memory.csv" &
smi=$!
EVOSTEER_LM_GPU_CHECK=$LM_CHECK_DIR EVOSTEER_TEST_BACKEND=xla:cuda \
  go test -tags "$tags" -count=1 -timeout 60m -run '^TestLMGPUCheck$' -v ./pipeline || { kill $smi; exit 1; }
kill $smi
peak=$(sort -n "$LM_CHECK_DIR/gpu-memory.csv" | tail -1)
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 || echo unknown)
# The measurement is kept in the repository (docs/gpu-check/lm-training.json), dated and named by
# device, for docs/LANGUAGE-MODEL.md to cite.
mkdir -p docs/gpu-check
printf '{"device": "%s", "gpu_memory_peak_mib": %s, "metrics": %s}\n' "$device" "${peak:-null}" "$(cat "$LM_CHECK_DIR/metrics.json")" >docs/gpu-check/lm-training.json
cat docs/gpu-check/lm-training.json

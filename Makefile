# EvoSteer-Go. Every go command carries the duckdb_arrow build tag: the DuckDB driver's Arrow
# interface lives behind it, and a binary built without it stops with a message saying so.

GO          ?= go
TAGS        := duckdb_arrow
VERSION     := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
BIN         := bin/evosteer
RUN         ?= runs/demo
# make run trains the paper's run (docs/METHOD.md §1.1): its pilot pool and admission settings;
# CONFIG=pipeline.yaml trains the released configuration.
CONFIG      ?= configs/paper-run.yaml
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build run step eval rollout rescore aggregate update validate author test bench fmt vet check clean

all: build

## build: compile bin/evosteer
build:
	$(GO) build -tags $(TAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/evosteer

STEP        ?= 1


# STEPS keeps make run under 15 minutes on 2 cores; the paper's scale is STEPS=240.
STEPS       ?= 120
EVAL_RUNS   ?= 5

## run: build, initialise $(RUN) on the embedded simulated world (if new), train STEPS steps
## (resuming where a previous run stopped), evaluate on the test split, write the report
run: build
	@if [ ! -f $(RUN)/run.yaml ]; then ./$(BIN) init --config $(CONFIG) --run $(RUN); fi
	./$(BIN) train --run $(RUN) --steps $(STEPS)
	./$(BIN) eval --run $(RUN) --runs $(EVAL_RUNS)
	./$(BIN) report --run $(RUN)
	@echo "run folder: $(RUN); report: $(RUN)/report/index.html"

## step: every stage of one step on $(RUN) (STEP=k)
step: build
	./$(BIN) step --run $(RUN) --step $(STEP)

## eval: the test protocol on $(RUN)
eval: build
	./$(BIN) eval --run $(RUN) --runs $(EVAL_RUNS)

## rollout: roll out one step on $(RUN) (STEP=k); rescore, aggregate, update likewise
rollout: build
	./$(BIN) rollout --run $(RUN) --step $(STEP)

## rescore: log π_θ and log π_ρ of every decision of one step on $(RUN) (STEP=k)
rescore: build
	./$(BIN) rescore --run $(RUN) --step $(STEP)

## aggregate: anchors, buckets, corrections, value data and pairs of one step on $(RUN) (STEP=k)
aggregate: build
	./$(BIN) aggregate --run $(RUN) --step $(STEP)

## update: the AnchorTB update and value fit of one step on $(RUN) (STEP=k)
update: build
	./$(BIN) update --run $(RUN) --step $(STEP)

## validate: record one step's pairs and run the sign-test looks on $(RUN) (STEP=k)
validate: build
	./$(BIN) validate --run $(RUN) --step $(STEP)

## author: one step's author windows on $(RUN) (STEP=k)
author: build
	./$(BIN) author --run $(RUN) --step $(STEP)

## probe: θ of step PROBE_STEP of $(RUN) against π* and against its loss's own target at the first
## decision (about 30 seconds on 2 cores); the report shows every probed step
PROBE_STEP  ?= $(STEPS)
.PHONY: probe
probe: build
	./$(BIN) probe --run $(RUN) --step $(PROBE_STEP)

## served-demo: a run whose ρ is a served model, end to end on the fake engine (cmd/fake-engine,
## SGLang's dialect, loopback): init, train SERVED_STEPS steps, eval 1 run, report, in $(SERVED_RUN)
## (made afresh), the agents on SERVED_EXECUTOR (sim: the simulated world; openai: the fake engine's
## chat completions on configs/demo-tasks.jsonl); then checks the prompts tables against the
## prompts the engine scored
SERVED_RUN        ?= runs/served-demo
SERVED_STEPS      ?= 3
SERVED_EXECUTOR   ?= sim
SERVED_OPENAI_RUN ?= runs/served-demo-openai
.PHONY: served-demo served-demo-openai
served-demo: build
	$(GO) build -o bin/fake-engine ./cmd/fake-engine
	scripts/served-demo.sh $(BIN) bin/fake-engine $(SERVED_RUN) $(SERVED_STEPS) $(SERVED_EXECUTOR)

## served-demo-openai: served-demo with the agents on the fake engine too, through the Chat
## Completions executor (executor.backend openai), in $(SERVED_OPENAI_RUN)
served-demo-openai:
	$(MAKE) --no-print-directory served-demo SERVED_EXECUTOR=openai SERVED_RUN=$(SERVED_OPENAI_RUN)

## lm-demo: the orchestrator as a language model, end to end on the simulated world: a tiny random
## Qwen3 with Qwen3's real tokenizer (written to LM_MODEL by evosteer lm random if it is missing)
## trained by configs/lm-demo.yaml in $(LM_RUN) (initialised if new, resumed like make run):
## LM_STEPS steps, eval LM_EVAL_RUNS run, report, then evosteer lm check on the last step's PEFT
## adapter folder (docs/LANGUAGE-MODEL.md)
# LM_MODEL is the folder LM_CONFIG names (policy.causal_lm.model); change both together.
LM_CONFIG    ?= configs/lm-demo.yaml
LM_MODEL     ?= runs/lm-demo-model
LM_SEED      ?= 1
LM_LAYERS    ?= 1
LM_RUN       ?= runs/lm-demo
LM_STEPS     ?= 5
LM_EVAL_RUNS ?= 1
LM_ADAPTER   := $(LM_RUN)/step-$(shell printf %06d $(LM_STEPS))/update/checkpoint/adapter
.PHONY: lm-demo
lm-demo: build
	@if [ ! -f $(LM_MODEL)/config.json ]; then ./$(BIN) lm random --out $(LM_MODEL) --seed $(LM_SEED) --layers $(LM_LAYERS); fi
	@if [ ! -f $(LM_RUN)/run.yaml ]; then ./$(BIN) init --config $(LM_CONFIG) --run $(LM_RUN); fi
	./$(BIN) train --run $(LM_RUN) --steps $(LM_STEPS)
	./$(BIN) eval --run $(LM_RUN) --runs $(LM_EVAL_RUNS)
	./$(BIN) report --run $(LM_RUN)
	./$(BIN) lm check --model $(LM_MODEL) --adapter $(LM_ADAPTER)
	@echo "run folder: $(LM_RUN); report: $(LM_RUN)/report/index.html; step $(LM_STEPS)'s adapter: $(LM_ADAPTER)"

## report: the HTML and Markdown report of $(RUN) ($(RUN)/report/index.html, report.md, PNGs)
.PHONY: report
report: build
	./$(BIN) report --run $(RUN)

# The comparison study's scale: every variant (full, 8 ablations, 4 objectives, the full method at
# β = 4 and 6) x ABL_SEEDS runs of ABL_STEPS steps, ABL_JOBS at once: 30 run folders with the
# defaults, 13 minutes on 2 cores.
ABL_DIR     ?= runs/ablations
ABL_SEEDS   ?= 2
ABL_STEPS   ?= 40
ABL_JOBS    ?= 2
ABL_CONFIG  ?= $(CONFIG)

## ablations: the paper's comparisons (Table 2: ablations and fixed paradigms; Figure 4a:
## objectives with update cost) and the study over β (2, 4, 6) at a reduced scale; writes
## $(ABL_DIR)/table2.md, objectives.md and beta.md
.PHONY: ablations
ablations: build
	./$(BIN) ablations --config $(ABL_CONFIG) --dir $(ABL_DIR) --seeds $(ABL_SEEDS) --steps $(ABL_STEPS) --jobs $(ABL_JOBS)

# The exact world's full curves: every objective, EXACT_STEPS steps, then AnchorTB and TB in the
# noisy world (about 5 minutes on 2 cores).
EXACT_DIR          ?= runs/exact
EXACT_STEPS        ?= 300
EXACT_CONFIG       ?= pipeline.yaml
EXACT_NOISY_CONFIG ?= configs/exact-noisy.yaml

## exact: train anchortb, tb, ppo and grpo on the enumerable world (internal/exact) and measure θ's
## exact distance to P* ∝ ρ·R_β per step; then anchortb and tb with noisy rewards, where their fixed
## point is P_KL ∝ ρ·exp(β·E[r]); writes $(EXACT_DIR)/curve.arrow, curve.md and $(EXACT_DIR)-noisy/
.PHONY: exact
exact: build
	./$(BIN) exact --config $(EXACT_CONFIG) --steps $(EXACT_STEPS) --out $(EXACT_DIR) --check
	./$(BIN) exact --config $(EXACT_NOISY_CONFIG) --reward-noise --objectives anchortb,tb --steps $(EXACT_STEPS) --out $(EXACT_DIR)-noisy --check

## exact-lm: the exact world with the language-model orchestrator (internal/exact,
## TestCausalLMReachesItsTarget): a tiny random Qwen3 with Qwen3's tokenizer as θ (its LoRA adapter)
## and ρ (adapter off), AnchorTB 300 steps on the tests' world, checked against P* ∝ ρ·R_β (about
## 6.5 minutes on 2 cores). It fails for now: θ ends at TV 0.081, not below 0.05 (docs/RESULTS.md,
## "The exact world with the language-model orchestrator"). The test writes its own model (a random
## Qwen3 whose q/k norm gains are doubled, documented there); `evosteer exact --causal-lm DIR` trains
## any model folder, e.g. one of `evosteer lm random --out DIR`.
.PHONY: exact-lm
exact-lm:
	EVOSTEER_EXACT_LM=1 $(GO) test -tags $(TAGS) -count=1 -timeout 60m -run '^TestCausalLMReachesItsTarget$$' -v ./internal/exact/

# The world fit's output folder; make calibrate then compares its world with the committed one.
CAL_DIR     ?= runs/calibrate

## calibrate: fit the simulated world to the paper's Table 2 baseline rows
## (configs/paper-table2-baselines.csv), check it on fresh seeds and refit from a second seed
## (about 30 minutes on 2 cores, 14 without the refit); fails unless the fit writes configs/world-paper.yaml byte for byte
.PHONY: calibrate
calibrate: build
	./$(BIN) calibrate --targets configs/paper-table2-baselines.csv --out $(CAL_DIR)
	@cmp $(CAL_DIR)/world.yaml configs/world-paper.yaml && echo "$(CAL_DIR)/world.yaml is the committed default world, byte for byte"

## admission-study: the admission study (comparisons/admission, docs/RESULTS.md "Admission
## study"): ADMISSION_RUNS (2000) seeded runs per setting and rule (ADMISSION_RULES, all six by
## default) through the project's ledger, schedule and windows; prints the table and the paired
## contrasts of attainable spending, progress on stderr (about 70 minutes on 2 cores at 2000)
ADMISSION_RUNS ?= 2000
ADMISSION_RULES ?= released,undecided,attainable,paper,paper-attainable,fixed
.PHONY: admission-study
admission-study:
	go run -tags duckdb_arrow ./cmd/admission-study -runs $(ADMISSION_RUNS) -rules $(ADMISSION_RULES)

## test: the default suite (what CI runs), every benchmark once at its -short size (a few seconds
## in all, so none rots), plus the build without the duckdb_arrow tag
test:
	$(GO) test -tags $(TAGS) -count=1 -timeout 30m ./...
	$(GO) test -tags $(TAGS) -short -run '^$$' -bench . -benchtime 1x -count=1 ./...
	$(GO) test -count=1 ./internal/duck

## gpu-check: on a GPU machine (Go, and Python's PJRT CUDA plugin; transformers and peft for the
## model), check the policy network on xla:cuda against the CPU kernels, the Qwen3 model against the
## CPU backend and transformers + peft, and run the benchmarks on both
.PHONY: gpu-check
gpu-check:
	./scripts/gpu-check.sh

## same-outputs: check that this tree writes byte-identical run files to commit BASE (default
## HEAD) over SAME_STEPS steps and an evaluation: the check of a refactor that keeps behaviour
BASE        ?= HEAD
SAME_STEPS  ?= 3
.PHONY: same-outputs
same-outputs:
	scripts/same-outputs.sh $(BASE) $(SAME_STEPS)

## test-short: the everyday loop: the default suite without the multi-minute learning,
## calibration and kill-and-resume tests (-short)
.PHONY: test-short
test-short:
	$(GO) test -tags $(TAGS) -short -count=1 ./...

# Fuzzing time per fuzz target; the default suite runs only the targets' seeds. Go minimizes
# every new input for up to a minute by default, which leaves little time to fuzz.
FUZZTIME    ?= 60s
FUZZFLAGS   ?= -fuzzminimizetime 1s

## fuzz: mutate a small real file of every table (schema/testdata/seeds) through the readers
## for FUZZTIME per target; a panic, a fatal error or an error not naming the file fails
.PHONY: fuzz
fuzz:
	@for t in $$($(GO) test -tags $(TAGS) -list '^Fuzz' ./schema | grep '^Fuzz'); do \
		echo "fuzz schema $$t for $(FUZZTIME)"; \
		$(GO) test -tags $(TAGS) -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./schema || exit 1; \
	done

## bench: every benchmark at full size (BenchmarkUpdate prints its share of the fp32 matmul peak)
bench:
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchtime 1x -count=1 ./...

## fmt: fail on any file gofmt would change
fmt:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

## vet: go vet and staticcheck, with and without the build tag
vet:
	$(GO) vet -tags $(TAGS) ./...
	$(GO) vet ./internal/duck
	$(GO) run $(STATICCHECK) -tags $(TAGS) ./...

check: fmt vet test

clean:
	rm -rf bin

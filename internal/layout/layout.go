package layout

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// The stage folders of a step. internal/pipeline.Stages runs them in this order.
const (
	Rollout   = "rollout"
	Rescore   = "rescore"
	Aggregate = "aggregate"
	Update    = "update"
	Validate  = "validate"
	Author    = "author"
)

// The tables a rollout writes, each as one file (File) or as the shards of a sharded rollout
// (ShardFile).
const (
	Episodes   = "episodes"
	Decisions  = "decisions"
	Executions = "executions"
	SimTruth   = "sim_truth" // the hidden truths of the simulated world (also the author's)
	Prompts    = "prompts"   // the controller prompts a served reference scored (served_reference only)
)

// The files of the other stages, in their stage folder.
const (
	ScoresFile   = "scores.arrow"    // rescore
	RhoDriftFile = "rho_drift.arrow" // rescore, served_reference only

	AnchorsFile     = "anchors.arrow" // aggregate
	BucketsFile     = "buckets.arrow"
	CorrectionsFile = "corrections.arrow"
	ValueDataFile   = "value_data.arrow"
	PairsFile       = "pairs.arrow"
	AnchorPoolFile  = "anchor_pool.arrow" // aggregate's running state, read by the next step
	PairsUsedFile   = "pairs_used.arrow"

	LossesFile        = "losses.arrow" // update
	CoefficientsFile  = "coefficients.arrow"
	UpdateMetricsFile = "update_metrics.arrow"
	CheckpointFile    = "checkpoint/learner.arrow" // the learner after the update; step 0's is written by init
	// AdapterConfigFile and AdapterModelFile are the causal-LM policy's LoRA adapter after the
	// update, as a PEFT adapter folder (checkpoint/adapter) that PEFT, vLLM and SGLang load.
	AdapterConfigFile = "checkpoint/adapter/adapter_config.json"
	AdapterModelFile  = "checkpoint/adapter/adapter_model.safetensors"

	LedgerFile       = "ledger.arrow"       // validate and author: the stage's segment of the ledger
	SkillsFile       = "skills.arrow"       // validate and author: the library after the stage
	LedgerStateFile  = "ledger_state.arrow" // validate and author: the ledger's state after the stage
	ProposalsFile    = "proposals.arrow"
	EvidencePoolFile = "evidence_pool.arrow" // author: the evidence pool after the step
	AuthorStateFile  = "author_state.arrow"  // author: the windows without a candidate so far, per family
	SimTruthFile     = "sim_truth.arrow"     // author (and an unsharded rollout), simulated world only
)

// RunFile is the run's record of its resolved configuration; a folder holding it is a run.
const RunFile = "run.yaml"

// TasksDir holds the run's task records, one file per split (TasksFile), written by init.
const TasksDir = "tasks"

// TasksFile is the task file of a split ("train" or "test") relative to the run folder.
func TasksFile(split string) string { return path.Join(TasksDir, File(split)) }

// Eval is the folder of `evosteer eval`; EvalResultsFile, EvalTableFile and (after a workflow
// search) EvalWorkflowsFile its files.
const (
	Eval              = "eval"
	EvalResultsFile   = "results.arrow"
	EvalTableFile     = "table.md"
	EvalWorkflowsFile = "workflows.json"
)

// File is the file of a table written whole.
func File(table string) string { return table + ".arrow" }

// Shard names shard index of count (1-based), "2-of-8"; "" for a whole stage (count <= 1).
func Shard(index, count int) string {
	if count <= 1 {
		return ""
	}
	return fmt.Sprintf("%d-of-%d", index, count)
}

// ShardFile is the file of a table in shard index of count: table-2-of-8.arrow, or File(table)
// when the stage is whole.
func ShardFile(table string, index, count int) string {
	if count <= 1 {
		return File(table)
	}
	return table + "-" + Shard(index, count) + ".arrow"
}

// ShardPattern matches the shard files of a table (path.Match syntax).
func ShardPattern(table string) string { return table + "-*-of-*.arrow" }

// ParseShardFile reads the shard of a table's shard file name, table-i-of-n.arrow.
func ParseShardFile(table, name string) (index, count int, err error) {
	var i, n string
	rest, ok := strings.CutPrefix(name, table+"-")
	if ok {
		rest, ok = strings.CutSuffix(rest, ".arrow")
	}
	if ok {
		i, n, ok = strings.Cut(rest, "-of-")
	}
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || index < 1 || index > count {
		return 0, 0, fmt.Errorf("not a shard name (%s-i-of-n.arrow)", table)
	}
	return index, count, nil
}

// StepDir is the folder of training step k, relative to the run folder: step-000001.
func StepDir(step int) string { return fmt.Sprintf("step-%06d", step) }

// ParseStepDir reads the step of a step folder's name; ok is false for any other name.
func ParseStepDir(name string) (step int, ok bool) {
	digits, ok := strings.CutPrefix(name, "step-")
	if !ok {
		return 0, false
	}
	step, err := strconv.Atoi(digits)
	if err != nil || step < 0 || StepDir(step) != name {
		return 0, false
	}
	return step, true
}

// MissingInput is the error for an input file that does not exist. rel is its path relative
// to the run folder runDir; the message names the command that writes it, read off the path:
// `evosteer STAGE --step K` for a stage's file of step K ≥ 1, `evosteer init` for the task
// records and step 0.
func MissingInput(runDir, rel string) error { return &MissingInputError{Run: runDir, Path: rel} }

// MissingInputError is MissingInput's error.
type MissingInputError struct {
	Run  string // the run folder
	Path string // the missing file, relative to Run
}

func (e *MissingInputError) Error() string {
	parts := strings.Split(e.Path, "/")
	step, isStep := ParseStepDir(parts[0])
	switch {
	case parts[0] == TasksDir || (isStep && step == 0 && len(parts) > 2):
		return fmt.Sprintf("missing input %s: it is written by `evosteer init`", e.Path)
	case isStep && len(parts) > 2:
		return fmt.Sprintf("missing input %s: run `evosteer %s --step %d --run %s` first", e.Path, parts[1], step, e.Run)
	}
	return fmt.Sprintf("missing input %s", e.Path)
}

package calibrate

import (
	"fmt"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/sim"
)

// Param is one fitted value of the world: its configuration key, the block that fits it, its
// bounds, and how to read and set it.
type Param struct {
	Name   string // the key in the world file, e.g. sim.families.hotpotqa.base_logit
	Block  string // a benchmark, ReferenceBlock or FailureBlock
	Lo, Hi float64
	Step   float64 // the initial simplex step
	Start  float64 // where every fit starts, whatever the base configuration holds
	get    func(*config.Config) float64
	set    func(*config.Config, float64)
}

// Get reads the parameter's value in cfg.
func (p Param) Get(cfg *config.Config) float64 { return p.get(cfg) }

// Set writes v into cfg.
func (p Param) Set(cfg *config.Config, v float64) { p.set(cfg, v) }

// ReferenceBlock is the block of ρ's prior weights; FailureBlock the block of the world's
// failure rate, which every cell shares.
const (
	ReferenceBlock = "reference"
	FailureBlock   = "failures"
)

// benchmarkParams are the fitted values of one benchmark's row: its level (the solver's logit at
// difficulty 0), the weight of the tool its task type offers (search for question answering and
// multiple choice, python for math and code; none on the interactive benchmarks), how much a plan
// helps, how reliably a verifier's check tells right from wrong on a text benchmark or the share
// of tasks no agent solves on an interactive one, and the executor-alone offset (bare, fitted to
// the direct cell alone).
func benchmarkParams(benchmark string) (fitted []Param, bare Param) {
	row := func(c *config.Config) *config.SimFamily { return c.Sim.Families.Row(benchmark) }
	key := "sim.families." + benchmark + "."
	fitted = append(fitted, Param{Name: key + "base_logit", Block: benchmark, Lo: -6, Hi: 16, Step: 0.6, Start: 1.1,
		get: func(c *config.Config) float64 { return row(c).BaseLogit },
		set: func(c *config.Config, v float64) { row(c).BaseLogit = v }})
	switch tool := sim.ToolOf(benchmark); tool {
	case "search":
		fitted = append(fitted, Param{Name: key + "search_weight", Block: benchmark, Lo: 0, Hi: 10, Step: 0.6, Start: 1,
			get: func(c *config.Config) float64 { return row(c).SearchWeight },
			set: func(c *config.Config, v float64) { row(c).SearchWeight = v }})
	case "python":
		fitted = append(fitted, Param{Name: key + "python_weight", Block: benchmark, Lo: 0, Hi: 10, Step: 0.6, Start: 1,
			get: func(c *config.Config) float64 { return row(c).PythonWeight },
			set: func(c *config.Config, v float64) { row(c).PythonWeight = v }})
	}
	fitted = append(fitted, Param{Name: key + "plan_weight", Block: benchmark, Lo: -12, Hi: 10, Step: 1, Start: 1,
		get: func(c *config.Config) float64 { return row(c).PlanWeight },
		set: func(c *config.Config, v float64) { row(c).PlanWeight = v }})
	if sim.Interactive(benchmark) {
		// Where the measured systems saturate: the share of tasks out of every agent's reach.
		fitted = append(fitted, Param{Name: key + "unsolvable_share", Block: benchmark, Lo: 0, Hi: 0.6, Step: 0.05, Start: HeldShare,
			get: func(c *config.Config) float64 { return row(c).UnsolvableShare },
			set: func(c *config.Config, v float64) { row(c).UnsolvableShare = v }})
	} else {
		// How reliably a check tells right from wrong: the fixed template ends in a verifier, and
		// so do some searched workflows and ρ's teams, so this is the lever that sets the
		// template against the single agent. An interactive benchmark has no answer to check.
		fitted = append(fitted, Param{Name: key + "verify_quality", Block: benchmark, Lo: 0, Hi: 8, Step: 0.5, Start: 1,
			get: func(c *config.Config) float64 { return row(c).VerifyQuality },
			set: func(c *config.Config, v float64) { row(c).VerifyQuality = v }})
	}
	bare = Param{Name: key + "bare_logit", Block: benchmark, Lo: -8, Hi: 4, Step: 0.6, Start: 0,
		get: func(c *config.Config) float64 { return row(c).BareLogit },
		set: func(c *config.Config, v float64) { row(c).BareLogit = v }}
	return fitted, bare
}

// HeldShare is the share of a text benchmark's tasks out of every agent's reach in a fitted
// world (and where an interactive benchmark's fitted share starts). On a text benchmark it moves
// the cells alike, as the level does, so the fit holds it and spends the parameter on the
// verifier's quality instead.
const HeldShare = 0.05

// holdShares sets every text benchmark's unsolvable share to HeldShare, whatever cfg held.
func holdShares(cfg *config.Config, benchmarks []string) {
	for _, b := range benchmarks {
		if !sim.Interactive(b) {
			cfg.Sim.Families.Row(b).UnsolvableShare = HeldShare
		}
	}
}

// referenceParams are the fitted weights of ρ's prior: how strongly it opens with a solver, and
// with a tool role where the task type offers one, how readily it adds a verifier once an answer stands, and how
// readily it lets the acting agent act on in an interactive environment that runs on.
func referenceParams() []Param {
	return []Param{
		{Name: "reference_prior.add_solver_to_empty_team", Block: ReferenceBlock, Lo: -6, Hi: 10, Step: 1, Start: 1,
			get: func(c *config.Config) float64 { return c.Prior.AddSolverToEmptyTeam },
			set: func(c *config.Config, v float64) { c.Prior.AddSolverToEmptyTeam = v }},
		{Name: "reference_prior.add_tool_agent_to_empty_team", Block: ReferenceBlock, Lo: -6, Hi: 10, Step: 1,
			get: func(c *config.Config) float64 { return c.Prior.AddToolAgentToEmptyTeam },
			set: func(c *config.Config, v float64) { c.Prior.AddToolAgentToEmptyTeam = v }},
		{Name: "reference_prior.add_verifier_to_check_output", Block: ReferenceBlock, Lo: -6, Hi: 12, Step: 1,
			get: func(c *config.Config) float64 { return c.Prior.AddVerifierToCheckOutput },
			set: func(c *config.Config, v float64) { c.Prior.AddVerifierToCheckOutput = v }},
		{Name: "reference_prior.rerun_output_while_environment_runs", Block: ReferenceBlock, Lo: -6, Hi: 12, Step: 1,
			get: func(c *config.Config) float64 { return c.Prior.RerunOutputWhileEnvironmentRuns },
			set: func(c *config.Config, v float64) { c.Prior.RerunOutputWhileEnvironmentRuns = v }},
	}
}

// failureParams are the world's failure rate, p_fail = fail_base + fail_slope·d, how often an
// execution times out or is truncated, and how far agents of the model fail together on a task
// (failure_correlation). Every execution of every policy draws them, so they move teams (which
// run more executions, lose the episode when their output agent's last run fails, and escape
// independent failures by asking several agents) against a single agent on every benchmark.
func failureParams() []Param {
	return []Param{
		{Name: "sim.fail_base", Block: FailureBlock, Lo: 0, Hi: 0.3, Step: 0.02, Start: 0.03,
			get: func(c *config.Config) float64 { return c.Sim.FailBase },
			set: func(c *config.Config, v float64) { c.Sim.FailBase = v }},
		{Name: "sim.fail_slope", Block: FailureBlock, Lo: 0, Hi: 0.6, Step: 0.04, Start: 0.1,
			get: func(c *config.Config) float64 { return c.Sim.FailSlope },
			set: func(c *config.Config, v float64) { c.Sim.FailSlope = v }},
		{Name: "sim.failure_correlation", Block: FailureBlock, Lo: 0, Hi: 1, Step: 0.1, Start: 0.8,
			get: func(c *config.Config) float64 { return c.Sim.FailureCorrelation },
			set: func(c *config.Config, v float64) { c.Sim.FailureCorrelation = v }},
	}
}

// AllParams are every fitted parameter of the benchmarks' rows, of ρ and of the failure rate, in
// report order.
func AllParams(benchmarks []string) []Param {
	var out []Param
	for _, b := range benchmarks {
		fitted, bare := benchmarkParams(b)
		out = append(out, fitted...)
		out = append(out, bare)
	}
	out = append(out, referenceParams()...)
	return append(out, failureParams()...)
}

// AtBound reports whether v sits within 1% of the range of one of p's bounds.
func (p Param) AtBound(v float64) bool {
	eps := 0.01 * (p.Hi - p.Lo)
	return v <= p.Lo+eps || v >= p.Hi-eps
}

func (p Param) String() string { return fmt.Sprintf("%s in [%g, %g]", p.Name, p.Lo, p.Hi) }

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/calibrate"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/schema"
)

// The files calibrate writes into --out.
const (
	worldFile     = "world.yaml"
	workflowsFile = "workflows.json"
	fitMarkdown   = "fit.md"
	fitArrow      = "fit.arrow"
	fitFigure     = "fit.png"
)

// calibrateOutputs are every file calibrate writes into --out; none may be an input.
var calibrateOutputs = []string{worldFile, workflowsFile, fitMarkdown, fitArrow, fitFigure}

func newCalibrateCmd() *cobra.Command {
	var targets, cfgPath, out string
	var checkTasks, checkRuns int
	var refitSeed uint64
	o := calibrate.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "calibrate --targets FILE.csv [--out DIR]",
		Short: "Fit the simulated world to measured baseline scores",
		Long: `Fit the simulated world (internal/sim) to a table of measured baseline scores and write the
fitted world as a configuration overlay with its fit report.

--targets is a CSV with a header naming benchmark, policy and score (optional std and n; other
columns are ignored), one row per cell with one field per column, scores in points as plain
decimals (a UTF-8 byte-order mark and CRLF line ends are read). Policies: direct (the executor alone),
single_agent, fixed_template, plan_execute, searched_workflow and reference (the untrained
architecture ρ). The method's own rows are predictions of the world and are refused, as are
unknown benchmarks, scores outside [0, 100], repeated cells, repeated columns, rows of another
length and numbers such as 5_0 or 0x1p5 (with file, line and column).

What is fitted, per benchmark: the level (base_logit), the weight of the task type's tool
(search_weight or python_weight), how much a plan helps (plan_weight), on a text benchmark
how reliably a verifier's check tells right from wrong (verify_quality; the share of tasks out of
every agent's reach, unsolvable_share, is held at 5% there, since it moves the cells alike, as
the level does), on an interactive one that share, and the executor-alone offset (bare_logit,
matched to the direct cell); for ρ, the prior's weights of opening with a solver or a tool role,
of adding a verifier once an answer stands and of letting the acting agent act on in a running
environment; for the whole world, the failure rate and how far agents of one model fail
together (fail_base, fail_slope, failure_correlation). Everything else is
taken from --config (failure costs, roles, budgets), and every fitted value starts from the same
point whatever --config holds, so a fit is reproducible from its inputs. The fit plays the check's
test tasks (--tasks per benchmark, --runs runs) with the same seeds at every evaluation (common
random numbers) and runs block-coordinate Nelder–Mead (gonum/optimize): one block per benchmark,
then ρ's block, then the failure rate's, for --rounds rounds; the searched workflow is searched
afresh at the start of each round.

Then the fitted world is measured on fresh seeds: --check-tasks test tasks per benchmark (AIME has
30), --check-runs evaluation runs; and, with --refit-seed, fitted a second time from another seed
and measured on the same runs.

Writes DIR/world.yaml (the overlay: the whole sim: and reference_prior: blocks, with the targets'
sha256 and the fit's options in its header; byte-identical for the same inputs), DIR/fit.md
(every cell's target, fit-sample and check scores, residuals and tolerances, every parameter and
whether it sits at a bound, the degrees of freedom, the refit), DIR/fit.arrow (table
calibration_fit: every cell's score per source and run, for evosteer sql), DIR/fit.png (every
cell on the check against its target) and DIR/workflows.json (the searched workflows of the last
round); none of them may be --targets or --config (a link to one counts). Prints one line per
block.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if targets == "" {
				return fmt.Errorf("calibrate: --targets FILE.csv is required")
			}
			t, err := calibrate.ReadTargets(targets)
			if err != nil {
				return err
			}
			var outputs []pathFlag
			for _, name := range calibrateOutputs {
				outputs = append(outputs, pathFlag{"--out", filepath.Join(out, name)})
			}
			if err := refuseOverwrite("calibrate", outputs, []pathFlag{{"--targets", targets}, {"--config", cfgPath}}); err != nil {
				return err
			}
			base, err := loadConfig(cfgPath)
			if err != nil {
				return err
			}
			if base.Executor.Backend != "sim" {
				return fmt.Errorf("calibrate: the executor backend is %q: calibrate fits the simulated world (executor.backend: sim)", base.Executor.Backend)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			o.Log = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
			fmt.Fprintf(stderr, "calibrate: %d cells of %s; fit seed %d\n", len(t.Cells), targets, o.Seed)
			res, err := calibrate.Fit(cmd.Context(), base, t, o)
			if err != nil {
				return err
			}
			world, err := calibrate.WorldFile(res.Config, t, o)
			if err != nil {
				return err
			}
			if err := atomicfile.WriteBytes(filepath.Join(out, worldFile), world, 0o644); err != nil {
				return err
			}
			wf, err := json.MarshalIndent(res.Workflows, "", "  ")
			if err != nil {
				return err
			}
			if err := atomicfile.WriteBytes(filepath.Join(out, workflowsFile), append(wf, '\n'), 0o644); err != nil {
				return err
			}
			start := time.Now()
			check, err := calibrate.NewSample(res.Config, t.Benchmarks(), "test", checkTasks, checkRuns, seed.Derive(o.Seed, "calibrate", "check"))
			if err != nil {
				return err
			}
			c := calibrate.Check{TasksPer: map[string]int{}, RefitSeed: refitSeed}
			for b, ts := range check.Tasks {
				c.TasksPer[b] = len(ts)
			}
			if c.Runs, err = calibrate.EvaluateRuns(cmd.Context(), res.Config, check, t.Benchmarks(), calibrate.Policies, res.Workflows); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "check: %d runs on the test split (%s)\n", checkRuns, time.Since(start).Round(time.Second))
			// The report is written before the refit and again after it, so a long refit never
			// holds back the fit's own results.
			report := func() error {
				md := calibrate.Markdown(t, o, res, c, version)
				if err := atomicfile.WriteBytes(filepath.Join(out, fitMarkdown), []byte(md), 0o644); err != nil {
					return err
				}
				lin := schema.Lineage{Run: filepath.Base(out), Stage: "calibrate", ConfigSHA256: res.Config.SHA256(), Inputs: map[string]string{filepath.Base(targets): t.SHA256}}
				rows := calibrate.ArrowRows(res.Config, t, o.PerBenchmark, res, c)
				if err := schema.WriteRows(schema.CalibrationFit, filepath.Join(out, fitArrow), lin, rows); err != nil {
					return err
				}
				png, err := calibrate.Figure(rows)
				if err != nil {
					return err
				}
				return atomicfile.WriteBytes(filepath.Join(out, fitFigure), png, 0o644)
			}
			if err := report(); err != nil {
				return err
			}
			if refitSeed != 0 {
				ro := o
				ro.Seed = refitSeed
				fmt.Fprintf(stderr, "refit from seed %d\n", refitSeed)
				again, err := calibrate.Fit(cmd.Context(), base, t, ro)
				if err != nil {
					return err
				}
				if c.RefitRuns, err = calibrate.EvaluateRuns(cmd.Context(), again.Config, check, t.Benchmarks(), calibrate.Policies, again.Workflows); err != nil {
					return err
				}
				if err := report(); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "world: %s\nreport: %s\n", filepath.Join(out, worldFile), filepath.Join(out, fitMarkdown))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&targets, "targets", "", "CSV of measured baseline scores: benchmark,policy,score[,std][,n] (required)")
	f.StringVar(&cfgPath, "config", "", "configuration overlaid on the built-in pipeline.yaml: the structure the fit leaves alone")
	f.StringVar(&out, "out", "runs/calibrate", "folder for world.yaml and fit.md")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the fit sample's episodes and of the workflow search")
	f.IntVar(&o.Rounds, "rounds", o.Rounds, "sweeps over the blocks")
	f.IntVar(&o.PerBenchmark, "tasks", o.PerBenchmark, "test tasks per benchmark in the fit sample (the check's, fewer where the split has fewer)")
	f.IntVar(&o.Runs, "runs", o.Runs, "runs of the fit sample, each with its own episode seeds")
	f.IntVar(&o.SearchPerType, "search-tasks", o.SearchPerType, "training tasks per task type on which the workflow search plays every template")
	f.IntVar(&o.FinalSearch, "final-search-tasks", o.FinalSearch, "training tasks per task type on which the search plays its best four templates again")
	f.IntVar(&o.MaxEvals, "evals", o.MaxEvals, "objective evaluations per block and round")
	f.IntVar(&checkTasks, "check-tasks", 128, "test tasks per benchmark in the check (fewer where the split has fewer)")
	f.IntVar(&checkRuns, "check-runs", 5, "evaluation runs of the check")
	f.Uint64Var(&refitSeed, "refit-seed", 2, "seed of a second fit measured on the same check (0: no refit)")
	return cmd
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/doctor"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// doctorChecks is what the doctor checks, for its --help and that of init and train.
const doctorChecks = `  - executor.openai (executor.backend openai): GET base_url/models names executor.openai.model,
    and a chat completion with max_tokens 1 answers;
  - served_reference (when set): its own preflight (the server answers, serves the model, returns
    prompt log-probabilities, the template's end of turn is one token);
  - author (author.backend openai, skill evolution on): the same two requests at author.base_url;
  - sandbox (openai executor, a family graded in it or offered python): tools.python.interpreter
    runs as the sandbox's unprivileged user, and imports numpy where MBPP+ is graded;
  - search (openai executor, a family whose roles are offered search): tools.search.url answers
    POST /retrieve, or, unset, every such family's tasks ship passages;
  - families (openai executor): every family has a grader (ALFWorld, WebShop and SWE-bench
    Verified have no harness in this build).`

func newDoctorCmd() *cobra.Command {
	var path, run string
	var taskFiles []string
	cmd := &cobra.Command{
		Use:   "doctor [--config FILE] [--tasks FILE...] | doctor --run DIR",
		Short: "Check the serving stack a run would use (model servers, sandbox, search) in 15 s at most",
		Long: `Check, before a run, everything outside this process that its configuration uses, so that a
server that is down or misconfigured fails now in one line instead of after every episode has
spent its outage budget. The configuration is the built-in pipeline.yaml with --config overlaid
(as init reads it), or, with --run DIR, the run's own run.yaml and task records. With --tasks the
families checked are those of the task files (as init --tasks would import them); otherwise every
configured family.

The checks run concurrently, one attempt per request with a short timeout, and the command ends
within 15 s whatever the servers do (a check still running then is reported as timed out). It
prints one line per check: "ok   CHECK: ..." or "FAIL CHECK: what failed, where: the fix". It
exits 0 when every check passes and 1 when any fails. It writes nothing, and API keys never
appear in its output. With the simulated world (executor.backend sim, no served_reference, the
simulated author) there is nothing remote: it says so and exits 0.

What it checks:
` + doctorChecks + `

init, train and step run the same checks first when a remote backend is configured
(--skip-doctor bypasses them).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if run != "" && (path != "" || len(taskFiles) > 0) {
				return errors.New("doctor: --run checks the run's own run.yaml and tasks; --config and --tasks are for a run not created yet")
			}
			cfg, r, err := doctorConfig(run, path, nil)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !doctor.Remote(cfg) {
				fmt.Fprintln(out, doctor.Nothing)
				return nil
			}
			ts, err := doctorTasks(r, taskFiles)
			if err != nil {
				return err
			}
			lines := doctor.Run(cmd.Context(), cfg, doctor.Options{Tasks: ts})
			for _, l := range lines {
				fmt.Fprintln(out, l)
			}
			if n := doctor.Failed(lines); n > 0 {
				return fmt.Errorf("doctor: %d check(s) failed (the FAIL lines above)", n)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "configuration file overlaid on the built-in pipeline.yaml")
	cmd.Flags().StringVar(&run, "run", "", "check an existing run: its run.yaml and task records")
	cmd.Flags().StringSliceVar(&taskFiles, "tasks", nil, "task files (JSONL or Arrow) whose families are checked; repeat or comma-separate")
	return cmd
}

// doctorConfig is the configuration a doctor checks: the run's (run set), or --config with
// ablate switched on.
func doctorConfig(run, path string, ablate []string) (*config.Config, *rundir.Folder, error) {
	if run != "" {
		r, err := rundir.Open(run)
		if err != nil {
			return nil, nil, err
		}
		return r.Config, r, nil
	}
	cfg, err := loadConfig(path)
	if err != nil {
		return nil, nil, err
	}
	if err := cfg.Ablate(ablate...); err != nil {
		return nil, nil, err
	}
	return cfg, nil, nil
}

// doctorTasks are the task records whose families a doctor checks: the run's (r set), else the
// task files; nil when there are none.
func doctorTasks(r *rundir.Folder, taskFiles []string) ([]tasks.Task, error) {
	var ts []tasks.Task
	if r != nil {
		for _, split := range []string{"train", "test"} {
			p := r.TasksPath(split)
			if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			got, err := tasks.ReadFile(p)
			if err != nil {
				return nil, err
			}
			ts = append(ts, got...)
		}
		return ts, nil
	}
	if len(taskFiles) == 0 {
		return nil, nil
	}
	byID, err := tasks.LoadFiles(taskFiles)
	if err != nil {
		return nil, err
	}
	for _, t := range byID {
		ts = append(ts, t)
	}
	return ts, nil
}

// withDoctor makes cmd (init, train or step) run the doctor's checks before anything else when its
// configuration uses a remote backend, failing with the doctor's lines; --skip-doctor bypasses
// them. With the simulated world it does nothing: no network, no output. train and step check an
// existing run's own run.yaml; a configuration or task file that does not load is left to the
// command itself to report.
func withDoctor(cmd *cobra.Command) *cobra.Command {
	var skip bool
	cmd.Flags().BoolVar(&skip, "skip-doctor", false, "do not check the serving stack first (the checks of evosteer doctor, run when a remote backend is configured)")
	cmd.Long += `

Before anything else, when the configuration uses a remote backend (executor.backend openai, a
served_reference, or author.backend openai), it runs the checks of ` + "`evosteer doctor`" + ` (15 s at
most) and stops with their FAIL lines when one fails, before any episode; --skip-doctor skips
them. With the simulated world nothing is checked.`
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if skip {
			return nil
		}
		flags := cmd.Flags()
		run, _ := flags.GetString("run")
		path, _ := flags.GetString("config")
		ablate, _ := flags.GetStringArray("ablate")
		var taskFiles []string
		if flags.Lookup("tasks") != nil {
			taskFiles, _ = flags.GetStringSlice("tasks")
		}
		if cmd.Name() == "init" || run == "" {
			run = ""
		} else if _, err := os.Stat(filepath.Join(run, rundir.RunFileName)); err != nil {
			if cmd.Name() == "step" {
				return nil // step reports a run that does not exist
			}
			run = "" // a new run: train initialises it from --config
		} else if path != "" || len(ablate) > 0 {
			return nil // train refuses --config for an existing run
		}
		// The configuration first, without the task files: the simulated default reads nothing
		// more and prints nothing.
		cfg, r, err := doctorConfig(run, path, ablate)
		if err != nil || !doctor.Remote(cfg) {
			return nil // the command reports a configuration that does not load
		}
		ts, err := doctorTasks(r, taskFiles)
		if err != nil {
			return nil // the command reports task files that do not load
		}
		lines := doctor.Run(cmd.Context(), cfg, doctor.Options{Tasks: ts})
		log := cmd.ErrOrStderr()
		for _, l := range lines {
			fmt.Fprintln(log, l)
		}
		if n := doctor.Failed(lines); n > 0 {
			return fmt.Errorf("%s: the serving stack failed %d check(s) (the FAIL lines above): fix them, or pass --skip-doctor to start anyway", cmd.Name(), n)
		}
		return nil
	}
	return cmd
}

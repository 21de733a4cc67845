// Command admission-study runs the admission study (comparisons/admission, docs/RESULTS.md
// "Admission study") through the project's own ledger, schedule and window rules and prints
// its markdown table; progress goes to stderr.
//
//	admission-study [-runs 2000] [-seed 1] [-workers 0] [-config overlay.yaml]
//	                [-rules released,attainable,...] [-settings 0,4,6] [-candidates N]
//
// With a configuration under tasks.pilot (configs/paper-run.yaml) the families hold the pilot
// pool's training tasks, which init would write; -candidates sets every setting's proposing
// families (a pool of five families holds at most five candidates).
//
// -settings picks settings by their index in admission.Settings (the table's order, from 0); a
// setting's numbers do not depend on which others run.
//
// After the table it prints the contrasts of attainable against released spending paired by
// run (admission.PairedTable), for the rules it ran.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/evosteer/evosteer-go/comparisons/admission"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/pipeline"
)

func main() {
	runs := flag.Int("runs", 2000, "simulated runs per setting and rule")
	seed := flag.Uint64("seed", 1, "seed of the simulated pair outcomes")
	workers := flag.Int("workers", 0, "parallel runs (0: GOMAXPROCS)")
	overlay := flag.String("config", "", "configuration overlay (default: the built-in pipeline.yaml)")
	ruleKeys := flag.String("rules", strings.Join(keys(admission.Rules()), ","), "comma-separated rules to run")
	settingIdx := flag.String("settings", "", "comma-separated indices of the settings to run, from 0 in the table's order (default: all)")
	candidates := flag.Int("candidates", 0, "proposing families of every setting run (0: each setting's own)")
	flag.Parse()
	if err := run(*runs, *seed, *workers, *overlay, strings.Split(*ruleKeys, ","), *settingIdx, *candidates); err != nil {
		fmt.Fprintln(os.Stderr, "admission-study:", err)
		os.Exit(1)
	}
}

func run(runs int, seed uint64, workers int, overlay string, ruleKeys []string, settingIdx string, candidates int) error {
	rules, err := admission.SelectRules(ruleKeys)
	if err != nil {
		return fmt.Errorf("-rules: %w", err)
	}
	settings, err := selectSettings(settingIdx)
	if err != nil {
		return fmt.Errorf("-settings: %w", err)
	}
	base, err := config.Default()
	if overlay != "" {
		base, err = config.Load(overlay)
	}
	if err != nil {
		return err
	}
	start := time.Now()
	st := admission.Study{Base: base, Runs: runs, Seed: seed, FixedN: 256, Workers: workers, Progress: os.Stderr}
	if base.Tasks.Pilot != nil {
		// The configuration trains on a pilot pool (configs/paper-run.yaml): size the families by it.
		pool, err := pipeline.PilotTrainingPool(context.Background(), base)
		if err != nil {
			return err
		}
		st.TasksPerFamily = map[string]int{}
		for _, t := range pool {
			st.TasksPerFamily[t.Family]++
		}
		fmt.Fprintf(os.Stderr, "admission-study: the pilot pool of tasks.pilot: %d tasks, by family %v\n", len(pool), st.TasksPerFamily)
	}
	if candidates > 0 {
		for i := range settings {
			settings[i].Candidates = candidates
		}
	}
	res, err := st.Run(settings, rules)
	if err != nil {
		return err
	}
	fmt.Printf("admission study: %d runs per setting and rule, seed %d, rules %s, config sha256 %s (%s)\n\n",
		runs, seed, strings.Join(keys(rules), ","), base.SHA256(), time.Since(start).Round(time.Second))
	admission.Table(os.Stdout, res)
	fmt.Println()
	return admission.PairedTable(os.Stdout, res)
}

// selectSettings returns the settings of admission.Settings at the comma-separated indices,
// all of them when there are none.
func selectSettings(indices string) ([]admission.Setting, error) {
	all := admission.Settings()
	if indices == "" {
		return all, nil
	}
	var out []admission.Setting
	for _, f := range strings.Split(indices, ",") {
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 || i >= len(all) {
			return nil, fmt.Errorf("%q is not an index from 0 to %d", f, len(all)-1)
		}
		out = append(out, all[i])
	}
	return out, nil
}

func keys(rules []admission.Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Key
	}
	return out
}

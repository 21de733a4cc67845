// Command admission-study runs the admission study (comparisons/admission, docs/RESULTS.md
// "Admission study") through the project's own ledger, schedule and window rules and prints
// its markdown table; progress goes to stderr.
//
//	admission-study [-runs 2000] [-seed 1] [-workers 0] [-config overlay.yaml]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/evosteer/evosteer-go/comparisons/admission"
	"github.com/evosteer/evosteer-go/internal/config"
)

func main() {
	runs := flag.Int("runs", 2000, "simulated runs per setting and rule")
	seed := flag.Uint64("seed", 1, "seed of the simulated pair outcomes")
	workers := flag.Int("workers", 0, "parallel runs (0: GOMAXPROCS)")
	overlay := flag.String("config", "", "configuration overlay (default: the built-in pipeline.yaml)")
	flag.Parse()
	base, err := config.Default()
	if *overlay != "" {
		base, err = config.Load(*overlay)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "admission-study:", err)
		os.Exit(1)
	}
	start := time.Now()
	st := admission.Study{Base: base, Runs: *runs, Seed: *seed, FixedN: 256, Workers: *workers, Progress: os.Stderr}
	res, err := st.Run(admission.Settings(), admission.Rules())
	if err != nil {
		fmt.Fprintln(os.Stderr, "admission-study:", err)
		os.Exit(1)
	}
	fmt.Printf("admission study: %d runs per setting and rule, seed %d, config sha256 %s (%s)\n\n", *runs, *seed, base.SHA256(), time.Since(start).Round(time.Second))
	admission.Table(os.Stdout, res)
}

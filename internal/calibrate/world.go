package calibrate

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/evosteer/evosteer-go/internal/config"
)

// Algorithm is the version of the fit (blocks, objective, sample and seeds): a world file
// records it, and a change to any of them that moves a fitted value bumps it.
const Algorithm = 4

// WorldFile renders a fitted world as a configuration overlay: the whole sim: block and the
// whole reference_prior: block of cfg, under a header with the provenance (the targets' file name
// and sha256, the fit's algorithm version, options and seed). It holds nothing that varies between
// two runs of the same fit, so a refit from the same inputs writes the same bytes.
func WorldFile(cfg *config.Config, t *Targets, o Options) ([]byte, error) {
	body := struct {
		Sim   config.Sim            `yaml:"sim"`
		Prior config.ReferencePrior `yaml:"reference_prior"`
	}{cfg.Sim, cfg.Prior}
	y, err := yaml.MarshalWithOptions(body, yaml.IndentSequence(true))
	if err != nil {
		return nil, fmt.Errorf("calibrate: render world: %w", err)
	}
	var b bytes.Buffer
	name := t.Path
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	fmt.Fprintf(&b, "# A simulated world fitted by `evosteer calibrate` to measured baseline scores.\n")
	fmt.Fprintf(&b, "# Use it as a configuration overlay: evosteer init --config THIS_FILE --run DIR.\n")
	fmt.Fprintf(&b, "# targets: %s (sha256 %s, %d cells)\n", name, t.SHA256, len(t.Cells))
	fmt.Fprintf(&b, "# fit: algorithm %d, seed %d, %d rounds, %d test tasks per benchmark in %d runs, search on %d then %d tasks per task type, %d evaluations per block\n",
		Algorithm, o.Seed, o.Rounds, o.PerBenchmark, o.Runs, o.SearchPerType, o.FinalSearch, o.MaxEvals)
	b.Write(y)
	return b.Bytes(), nil
}

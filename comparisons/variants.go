package comparisons

import (
	"fmt"
	"github.com/evosteer/evosteer-go/internal/paper"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/paradigms"
)

// Variant is one trained configuration of the study.
type Variant struct {
	Name      string  // run folder prefix and row key: "full", an ablation or objective name, "beta-<β>"
	Ablation  string  // the ablation switched on ("" for none)
	Objective string  // the training objective (config.Objectives)
	Beta      float64 // anchortb.beta of the run (0: the configuration's)
}

// Full is the full method's variant key; its runs also evaluate ρ and the fixed paradigms.
const Full = paper.Full

// BetaStudy are the temperatures β of the β study's runs besides the full method's own (the
// configuration's anchortb.beta, 2 by default).
var BetaStudy = []float64{4, 6}

// evaluatesReference says whether the variant's runs evaluate ρ besides θ: the full method's
// (ρ's rows of Table 2 and Figure 4a) and the β study's, whose θ − ρ is paired within the run
// folder — same tasks, episode seeds and skill menus (a run's ρ plays with the run's own library,
// which depends on its training).
func (v Variant) evaluatesReference() bool { return v.Name == Full || v.Beta != 0 }

// Variants are the full method, the eight ablations (paper appendix D order), the four other
// objectives (Figure 4a) and the full method at the β study's temperatures.
func Variants() []Variant {
	vs := []Variant{{Name: Full, Objective: "anchortb"}}
	for _, a := range config.Ablations {
		vs = append(vs, Variant{Name: a, Ablation: a, Objective: "anchortb"})
	}
	for _, o := range config.Objectives {
		if o != "anchortb" {
			vs = append(vs, Variant{Name: o, Objective: o})
		}
	}
	for _, b := range BetaStudy {
		vs = append(vs, Variant{Name: fmt.Sprintf("beta-%g", b), Objective: "anchortb", Beta: b})
	}
	return vs
}

// lookup is the variant of that name.
func lookup(name string) (Variant, bool) {
	all := Variants()
	i := slices.IndexFunc(all, func(v Variant) bool { return v.Name == name })
	if i < 0 {
		return Variant{}, false
	}
	return all[i], true
}

// Select keeps the named variants (all when names is empty); the full method is always kept,
// since ρ, the paradigms and the paired differences come from its runs.
func Select(names []string) ([]Variant, error) {
	all := Variants()
	if len(names) == 0 {
		return all, nil
	}
	var out []Variant
	for _, v := range all {
		keep := v.Name == Full
		for _, n := range names {
			keep = keep || n == v.Name
		}
		if keep {
			out = append(out, v)
		}
	}
	for _, n := range names {
		if _, found := lookup(n); !found {
			known := make([]string, len(all))
			for i, v := range all {
				known[i] = v.Name
			}
			return nil, fmt.Errorf("unknown variant %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// Row labels of the tables, in the paper's wording.
var labels = map[string]string{
	Full:                       "EvoSteer (full)",
	paradigms.Direct:           "Executor alone (direct)",
	"reference":                "EvoSteer arch., untrained (ρ)",
	paradigms.SingleAgent:      "Single agent with tools",
	paradigms.FixedTemplate:    "Fixed multi-agent template",
	paradigms.PlanExecute:      "Plan-then-execute",
	paradigms.SearchedWorkflow: "Searched workflow",
	"interleaved-execution":    "− Interleaved execution",
	"execution-features":       "− Execution features",
	"learnable-repair":         "− Learnable repair",
	"value-head":               "− Reference value head",
	"measured-flows":           "− Measured flows",
	"flow-corrections":         "− Flow corrections",
	"skill-evolution":          "− Skill evolution",
	"sequential-validation":    "− Sequential validation",
	"anchortb":                 "AnchorTB (ours)",
	"tb":                       "Trajectory balance",
	"ttb":                      "Tempered TB",
	"ppo":                      "PPO",
	"grpo":                     "GRPO",
}

package comparisons

import (
	"fmt"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/paradigms"
)

// Variant is one trained configuration of the study.
type Variant struct {
	Name      string // run folder prefix and row key: "full", an ablation name or an objective name
	Ablation  string // the ablation switched on ("" for none)
	Objective string // the training objective (config.Objectives)
}

// Full is the full method's variant key; its runs also evaluate ρ and the fixed paradigms.
const Full = "full"

// Variants are the full method, the eight ablations (paper appendix D order) and the four other
// objectives (Figure 4a).
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
	return vs
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
		found := false
		for _, v := range all {
			found = found || v.Name == n
		}
		if !found {
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

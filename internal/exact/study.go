package exact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/schema"
)

// Study is what `evosteer exact` runs: each objective trained on one world for Steps steps.
type Study struct {
	Objectives             []string
	Steps                  int
	Families, Tasks, Roles int
	RewardNoise            bool
	Out                    string // folder of curve.arrow and curve.md
	// Progress, when not nil, is told of every 25th step and the last of each objective.
	Progress func(objective string, p Point)
}

// StudyResult is a finished study: the summary written to curve.md, the curve file, and the
// objectives whose verdict failed (each with its verdict).
type StudyResult struct {
	Markdown string
	Curve    string
	Failed   []string
}

// Run trains every objective of the study on the world of cfg's seed with cfg's policy (the
// network, or with policy.kind causal_lm the language model, whose summary then names it),
// optimizer, β and ablations, and writes Out/curve.arrow (table exact_curve) and Out/curve.md.
func (s Study) Run(ctx context.Context, eng *gpu.Engine, cfg *config.Config) (*StudyResult, error) {
	w, err := NewWorld(s.Families, s.Tasks, s.Roles, cfg.Seed, s.RewardNoise)
	if err != nil {
		return nil, err
	}
	var rows []schema.ExactCurveRow
	var curves [][]Point
	for _, o := range s.Objectives {
		c := *cfg
		c.Objective = o
		curve, err := Train(ctx, eng, w, &c, s.Steps, func(p Point) {
			if s.Progress != nil && (p.Step%25 == 0 || p.Step == s.Steps) {
				s.Progress(o, p)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("objective %s: %w", o, err)
		}
		curves = append(curves, curve)
		rows = append(rows, Rows(o, curve)...)
	}
	if err := os.MkdirAll(s.Out, 0o755); err != nil {
		return nil, err
	}
	res := &StudyResult{Curve: filepath.Join(s.Out, "curve.arrow")}
	lin := schema.Lineage{Run: filepath.Base(s.Out), Stage: "exact", ConfigSHA256: cfg.SHA256()}
	if err := schema.WriteRows(schema.ExactCurve, res.Curve, lin, rows); err != nil {
		return nil, err
	}
	title := "Exact world"
	if s.RewardNoise {
		title = "Exact world with noisy rewards"
	}
	policy := ""
	if cfg.Policy.IsCausalLM() {
		l, err := w.NewLearner(cfg)
		if err != nil {
			return nil, err
		}
		policy = "Policy: " + l.Policy.Describe() + ", adapter_lr " + fmt.Sprint(cfg.Optimizer.AdapterLR) + ".\n\n"
	}
	res.Markdown = fmt.Sprintf("# %s: %d tasks × %d histories, β = %g, %d steps\n\n%s%s", title, w.Tasks(), w.Histories(), cfg.AnchorTB.Beta, s.Steps, policy, Markdown(s.Objectives, curves, s.RewardNoise))
	if err := atomicfile.WriteBytes(filepath.Join(s.Out, "curve.md"), []byte(res.Markdown), 0o644); err != nil {
		return nil, err
	}
	for i, o := range s.Objectives {
		if v, ok := Verdict(o, curves[i], s.RewardNoise); !ok {
			res.Failed = append(res.Failed, o+": "+v)
		}
	}
	return res, nil
}

package sim

import (
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
)

// TestConfigSimBlock checks the sim: block of pipeline.yaml: it loads strictly, overlays, and
// out-of-range values fail with their dotted key and position.
func TestConfigSimBlock(t *testing.T) {
	p := defaultSim(t)
	if p.VerifierRecall != 0.7 || p.VerifierFalseAlarm != 0.15 || p.FailBase != 0.03 || p.FailSlope != 0.1 ||
		p.EnvStepsPerNode != 25 || p.EnvMaxSteps != 50 || p.Families.MedQA.Distractors != 3 || p.Roles.Solver.Offset != 0 {
		t.Errorf("defaults not as documented: %+v", p)
	}
	c, err := config.Parse("over.yaml", []byte("sim:\n  verifier_recall: 0.9\n  families:\n    medqa:\n      kappa: 1.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sim.VerifierRecall != 0.9 || c.Sim.Families.MedQA.Kappa != 1.5 || c.Sim.Families.MedQA.Distractors != 3 || c.Sim.FailBase != 0.03 {
		t.Errorf("overlay: %+v", c.Sim)
	}
	bad := []struct{ text, want string }{
		{"sim:\n  verifier_recall: 1.5\n", "sim.verifier_recall"},
		{"sim:\n  fail_base: 0.5\n  fail_slope: 0.6\n", "sim.fail_slope"},
		{"sim:\n  skill_helpful_prob: 0.8\n  skill_harmful_prob: 0.3\n", "sim.skill_harmful_prob"},
		{"sim:\n  skill_harmful_effect: 0.2\n", "sim.skill_harmful_effect"},
		{"sim:\n  env_steps_per_node: 0\n", "sim.env_steps_per_node"},
		{"sim:\n  families:\n    medqa:\n      distractors: 4\n", "sim.families.medqa.distractors"},
		{"sim:\n  families:\n    hotpotqa:\n      difficulty_a: 0\n", "sim.families.hotpotqa.difficulty_a"},
		{"sim:\n  roles:\n    finalizer:\n      adopt: -0.1\n", "sim.roles.finalizer.adopt"},
		{"sim:\n  roles:\n    planner:\n      output_tokens: 0\n", "sim.roles.planner.output_tokens"},
		{"sim:\n  ood_difficulty_shift: 1\n", "sim.ood_difficulty_shift"},
		{"sim:\n  no_such_key: 1\n", "no_such_key"},
		{"sim:\n  roles:\n    oracle:\n      offset: 1\n", "oracle"},
	}
	for _, b := range bad {
		_, err := config.Parse("bad.yaml", []byte(b.text))
		if err == nil || !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), "bad.yaml:") {
			t.Errorf("%q: error %v, want one naming %s with its position", b.text, err, b.want)
		}
	}
}

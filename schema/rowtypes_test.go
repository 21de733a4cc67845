package schema

import "testing"

// Every table's row struct binds to its declaration (a column added to a table without its
// field, or a field of the wrong type, fails here).
func TestRowTypesBindToTheirTables(t *testing.T) {
	for _, c := range []struct {
		table *Table
		build func() error
	}{
		{Episodes, func() error { _, err := Build(Episodes, []EpisodeRow{{}}); return err }},
		{Decisions, func() error { _, err := Build(Decisions, []DecisionRow{{}}); return err }},
		{Executions, func() error { _, err := Build(Executions, []ExecutionRow{{}}); return err }},
		{Prompts, func() error { _, err := Build(Prompts, []PromptRow{{}}); return err }},
		{RhoDrift, func() error { _, err := Build(RhoDrift, []RhoDriftRow{{}}); return err }},
		{Anchors, func() error { _, err := Build(Anchors, []AnchorRow{{}}); return err }},
		{Buckets, func() error { _, err := Build(Buckets, []BucketRow{{}}); return err }},
		{Corrections, func() error { _, err := Build(Corrections, []CorrectionRow{{}}); return err }},
		{ValueData, func() error { _, err := Build(ValueData, []ValueRow{{}}); return err }},
		{Pairs, func() error { _, err := Build(Pairs, []PairRow{{}}); return err }},
		{AnchorPool, func() error { _, err := Build(AnchorPool, []AnchorPoolRow{{}}); return err }},
		{PairsUsed, func() error { _, err := Build(PairsUsed, []PairsUsedRow{{}}); return err }},
		{Tasks, func() error { _, err := Build(Tasks, []TaskRow{{}}); return err }},
		{SimTruth, func() error { _, err := Build(SimTruth, []SimTruthRow{{}}); return err }},
		{Scores, func() error { _, err := Build(Scores, []ScoreRow{{}}); return err }},
		{Losses, func() error { _, err := Build(Losses, []LossRow{{}}); return err }},
		{Coefficients, func() error { _, err := Build(Coefficients, []CoefficientRow{{}}); return err }},
		{Checkpoint, func() error { _, err := Build(Checkpoint, []CheckpointRow{{}}); return err }},
		{UpdateMetrics, func() error { _, err := Build(UpdateMetrics, []UpdateMetricsRow{{}}); return err }},
		{EvalResults, func() error { _, err := Build(EvalResults, []EvalRow{{}}); return err }},
		{Probe, func() error { _, err := Build(Probe, []ProbeRow{{}}); return err }},
		{ExactCurve, func() error { _, err := Build(ExactCurve, []ExactCurveRow{{}}); return err }},
		{CalibrationFit, func() error { _, err := Build(CalibrationFit, []CalibrationFitRow{{}}); return err }},
		{Pilot, func() error { _, err := Build(Pilot, []PilotRow{{}}); return err }},
		{Ledger, func() error { _, err := Build(Ledger, []LedgerRow{{}}); return err }},
		{Skills, func() error { _, err := Build(Skills, []SkillRow{{}}); return err }},
		{Proposals, func() error { _, err := Build(Proposals, []ProposalRow{{}}); return err }},
		{LedgerState, func() error { _, err := Build(LedgerState, []LedgerStateRow{{}}); return err }},
		{EvidencePool, func() error { _, err := Build(EvidencePool, []EpisodeRow{{}}); return err }},
		{AuthorState, func() error { _, err := Build(AuthorState, []AuthorStateRow{{}}); return err }},
	} {
		if err := c.build(); err != nil {
			t.Errorf("%s: %v", c.table.Name, err)
		}
	}
}

package config

import (
	"path/filepath"
	"testing"
)

// TestThePaperRunConfiguration: configs/paper-run.yaml loads and sets exactly the disclosed
// settings of the paper's run that differ from the released configuration, and nothing else.
func TestThePaperRunConfiguration(t *testing.T) {
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	run, err := Load(filepath.Join("..", "..", "configs", "paper-run.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if a := run.Admission; a.ValidationInterval != 30 || !a.AllowRepeatedTasks {
		t.Fatalf("admission %+v: want looks every 30 steps with repeated tasks", a)
	}
	if run.Author.StartFamilies != 5 || run.Author.MaxTrajectories != 6 || run.AnchorTB.Beta != 2 || run.Optimizer.AdapterBeta1 != 0.95 {
		t.Fatalf("author %+v, β %v, adapter β1 %v", run.Author, run.AnchorTB.Beta, run.Optimizer.AdapterBeta1)
	}
	want := *def
	want.Admission.ValidationInterval, want.Admission.AllowRepeatedTasks = 30, true
	want.Author.StartFamilies, want.Author.MaxTrajectories = 5, 6
	want.Tasks.Pilot = &Pilot{Samples: 8, ExcludeFamilies: []string{"alfworld"}}
	if run.SHA256() != want.SHA256() {
		t.Fatal("configs/paper-run.yaml changes more than its commented settings")
	}
}

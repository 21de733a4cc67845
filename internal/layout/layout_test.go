package layout

import (
	"errors"
	"testing"
)

// Step folders and shard files read back to what named them, and nothing else reads as one.
func TestNamesRoundTrip(t *testing.T) {
	for _, k := range []int{0, 1, 42, 999999, 1234567} {
		if got, ok := ParseStepDir(StepDir(k)); !ok || got != k {
			t.Errorf("ParseStepDir(%q) = %d, %v", StepDir(k), got, ok)
		}
	}
	for _, name := range []string{"step-1", "step-0000001", "step--00001", "step-00000a", "steps-000001", "step-", "eval"} {
		if k, ok := ParseStepDir(name); ok {
			t.Errorf("ParseStepDir(%q) = %d, want no step folder", name, k)
		}
	}
	if got := ShardFile(Episodes, 2, 8); got != "episodes-2-of-8.arrow" {
		t.Errorf("ShardFile = %q", got)
	}
	if got := ShardFile(Decisions, 1, 1); got != "decisions.arrow" || Shard(1, 1) != "" || Shard(3, 4) != "3-of-4" {
		t.Errorf("whole stage: file %q, shard %q", got, Shard(1, 1))
	}
	if i, n, err := ParseShardFile(Episodes, "episodes-10-of-12.arrow"); err != nil || i != 10 || n != 12 {
		t.Errorf("ParseShardFile = %d, %d, %v", i, n, err)
	}
	for _, name := range []string{"episodes-3-of-2.arrow", "episodes-0-of-2.arrow", "episodes-1-of-2.arrows", "decisions-1-of-2.arrow", "episodes-x-of-2.arrow", "episodes.arrow"} {
		if _, _, err := ParseShardFile(Episodes, name); err == nil {
			t.Errorf("ParseShardFile(%q) accepted", name)
		}
	}
}

// The one missing-input message names the command that writes the file, read off its path.
func TestMissingInputNamesTheWriter(t *testing.T) {
	for rel, want := range map[string]string{
		"step-000003/rollout/episodes.arrow":          "missing input step-000003/rollout/episodes.arrow: run `evosteer rollout --step 3 --run runs/demo` first",
		"step-000002/update/checkpoint/learner.arrow": "missing input step-000002/update/checkpoint/learner.arrow: run `evosteer update --step 2 --run runs/demo` first",
		"step-000000/update/checkpoint/learner.arrow": "missing input step-000000/update/checkpoint/learner.arrow: it is written by `evosteer init`",
		"tasks/train.arrow":                           "missing input tasks/train.arrow: it is written by `evosteer init`",
		"elsewhere.arrow":                             "missing input elsewhere.arrow",
	} {
		err := MissingInput("runs/demo", rel)
		var m *MissingInputError
		if err.Error() != want || !errors.As(err, &m) || m.Path != rel {
			t.Errorf("%s: %q, want %q", rel, err, want)
		}
	}
}

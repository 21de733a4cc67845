package rollout

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// AsShard is the stage as shard i of n, with the same progress (rundir.Mergeable).
func (s Stage) AsShard(i, n int) rundir.Stage {
	return Stage{Shard: Shard{Index: i, Count: n}, Progress: s.Progress}
}

// MergeShards writes the whole step's files from its n complete shards in the stage folder,
// without playing anything (rundir.Mergeable): every episode of a shard is played exactly as in
// a whole rollout (seeded by its id, its network work row by row), so its rows are the whole
// rollout's, and put back in the whole rollout's order — the step's jobs in plan order, each
// episode's decisions, executions and prompts in their order, the tasks' truths in schedule
// order — under the whole stage's lineage, they make the files a whole rollout writes, byte for
// byte. Episodes missing from the shards, or not of the step's plan, are an error.
func (s Stage) MergeShards(_ context.Context, sc *rundir.StageContext, n int) error {
	if s.Shard.Count > 1 {
		return fmt.Errorf("merge: shard %d/%d is not the whole stage", s.Shard.Index, s.Shard.Count)
	}
	cfg := sc.Folder.Config
	train, err := tasks.ReadFile(sc.Folder.TasksPath("train"))
	if err != nil {
		return err
	}
	lib, err := skills.LoadLibrary(sc.Folder, sc.Step)
	if err != nil {
		return err
	}
	jobs, picked := plan(cfg, sc.Step, train, Shard{}, lib)
	dir := sc.Folder.StageDir(sc.Step, layout.Rollout)
	files := func(table string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = filepath.Join(dir, layout.ShardFile(table, i+1, n))
		}
		return out
	}
	eps, err := schema.ReadFiles[schema.EpisodeRow](schema.Episodes, files(layout.Episodes))
	if err != nil {
		return err
	}
	byID := make(map[string]*episode.Played, len(eps))
	for _, e := range eps {
		if byID[e.EpisodeID] != nil {
			return fmt.Errorf("merge: episode %s appears in two shards of step %d", e.EpisodeID, sc.Step)
		}
		byID[e.EpisodeID] = &episode.Played{Episode: e}
	}
	find := func(table, id string) (*episode.Played, error) {
		if p := byID[id]; p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("merge: the %s shards of step %d hold rows of episode %s, which no episodes shard holds", table, sc.Step, id)
	}
	decisions, err := schema.ReadFiles[schema.DecisionRow](schema.Decisions, files(layout.Decisions))
	if err != nil {
		return err
	}
	for _, d := range decisions {
		p, err := find(layout.Decisions, d.EpisodeID)
		if err != nil {
			return err
		}
		p.Decisions = append(p.Decisions, d)
	}
	executions, err := schema.ReadFiles[schema.ExecutionRow](schema.Executions, files(layout.Executions))
	if err != nil {
		return err
	}
	for _, x := range executions {
		p, err := find(layout.Executions, x.EpisodeID)
		if err != nil {
			return err
		}
		p.Executions = append(p.Executions, x)
	}
	if cfg.KeepsPrompts() {
		prompts, err := schema.ReadFiles[schema.PromptRow](schema.Prompts, files(layout.Prompts))
		if err != nil {
			return err
		}
		for _, x := range prompts {
			p, err := find(layout.Prompts, x.EpisodeID)
			if err != nil {
				return err
			}
			p.Prompts = append(p.Prompts, x)
		}
	}
	if len(eps) != len(jobs) {
		return fmt.Errorf("merge: the %d shards of step %d hold %d episodes, the step plans %d", n, sc.Step, len(eps), len(jobs))
	}
	played := make([]episode.Played, len(jobs))
	for k, j := range jobs {
		p := byID[j.ID]
		if p == nil {
			return fmt.Errorf("merge: no shard of step %d holds episode %s", sc.Step, j.ID)
		}
		played[k] = *p
	}
	onSim := cfg.Executor.Backend == "sim"
	var truth []schema.SimTruthRow
	if onSim {
		rows, err := schema.ReadFiles[schema.SimTruthRow](schema.SimTruth, files(layout.SimTruth))
		if err != nil {
			return err
		}
		byTask := make(map[string]schema.SimTruthRow, len(rows))
		for _, row := range rows {
			byTask[row.Kind+"\x00"+row.ID] = row
		}
		for _, t := range picked {
			row, ok := byTask["task\x00"+t.ID]
			if !ok {
				return fmt.Errorf("merge: no shard of step %d holds the truth of task %s", sc.Step, t.ID)
			}
			truth = append(truth, row)
		}
		if len(truth) != len(rows) {
			return fmt.Errorf("merge: the %d shards of step %d hold %d truths, the step has %d tasks", n, sc.Step, len(rows), len(truth))
		}
	}
	return writeOutputs(sc, sc.Lineage(), Shard{}, played, onSim, truth)
}

var _ rundir.Mergeable = Stage{}

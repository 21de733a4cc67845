package rollout

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// A rollout keeps its finished episodes as it goes: when the last of a task's episodes
// (current, natural-reference and paired arms) finishes, the task is kept, and the tasks kept
// since the last part are written as the next part, PARTS/part-NNNNNN/ (PARTS the stage's
// StageContext.PartsDir, a hidden sibling of the stage folder): a folder of the episodes,
// decisions, executions (and prompts) tables of those tasks, put in place by one rename. A part
// is written at most every keepEvery (the first at once), so keeping costs a few file writes a
// second however fast episodes finish (the simulated world's take microseconds; a part's
// fsyncs take milliseconds), and a kill loses at most keepEvery of finished tasks besides those
// in flight. A rollout killed midway and run again reads back every part whose lineage is its
// own and plays only the episodes of the other tasks; since an episode is the same whichever
// others are played with it (seeded by its id, its network work row by row), and Arrow rows read
// back are the rows written, the stage writes the bytes of an unkilled run. RunStage removes the
// parts once the stage commits.

// keepEvery is the least time between two parts of a rollout.
var keepEvery = time.Second

// The keys of a part's lineage (Lineage.Inputs) beyond the stage's input files: which run of
// the rollout made it, so that a part says itself where it belongs.
const (
	partShard = "rollout:shard"
	partSeed  = "rollout:seed"
)

// group is the jobs of one task of the plan: jobs[start:end] (plan lists a task's jobs together).
type group struct{ start, end int }

// groups splits the plan's jobs by task, in plan order.
func groups(jobs []episode.Job) []group {
	var gs []group
	for i, j := range jobs {
		if i == 0 || j.Task.ID != jobs[i-1].Task.ID {
			gs = append(gs, group{start: i})
		}
		gs[len(gs)-1].end = i + 1
	}
	return gs
}

// partLineage is the lineage of a part: the stage's (its run, step, configuration and input
// files' sha256) and the shard and the stage seed.
func partLineage(sc *rundir.StageContext, shard Shard) schema.Lineage {
	lin := sc.Lineage()
	if lin.Inputs == nil {
		lin.Inputs = map[string]string{}
	}
	name := layout.Shard(shard.Index, shard.Count)
	if name == "" {
		name = "whole"
	}
	lin.Inputs[partShard] = name
	lin.Inputs[partSeed] = strconv.FormatUint(sc.Seed, 10)
	return lin
}

// partPrefix begins the name of every part folder: part-NNNNNN.
const partPrefix = "part-"

// writePart writes finished episodes (whole tasks) as part seq, atomically: into a temporary
// folder beside it, renamed into place (atomicfile.ReplaceDir), so a kill leaves the whole part
// or none.
func writePart(dir string, seq int, lin schema.Lineage, eps []episode.Played, served bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".tmp-"+partPrefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	file := func(table string) string { return filepath.Join(tmp, layout.File(table)) }
	if err := writeEpisodes(file, lin, eps, served); err != nil {
		return err
	}
	return atomicfile.ReplaceDir(tmp, filepath.Join(dir, fmt.Sprintf("%s%06d", partPrefix, seq)))
}

// kept is what the parts in a parts folder hold for a plan.
type kept struct {
	eps      map[int][]episode.Played // by group: the task's episodes in plan order
	next     int                      // the number of the next part to write
	replayed []string                 // the parts not resumed, and why
}

// readParts reads back the parts in dir for the plan's jobs, split in gs: every task all of
// whose episodes a part with lineage want holds. A part of other inputs (another lineage),
// unreadable, or holding an episode not of the plan, or a task's episodes only in part, is not
// resumed (its tasks are played again) and named in replayed.
func readParts(dir string, want schema.Lineage, jobs []episode.Job, gs []group, served bool) kept {
	k := kept{eps: map[int][]episode.Played{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return k // none yet
	}
	at := make(map[string]int, len(jobs))
	for i, j := range jobs {
		at[j.ID] = i
	}
	groupOf := make([]int, len(jobs))
	for g, gr := range gs {
		for i := gr.start; i < gr.end; i++ {
			groupOf[i] = g
		}
	}
	for _, e := range entries {
		name := e.Name()
		seq, err := strconv.Atoi(strings.TrimPrefix(name, partPrefix))
		if !e.IsDir() || !strings.HasPrefix(name, partPrefix) || err != nil {
			continue
		}
		k.next = max(k.next, seq+1)
		path := filepath.Join(dir, name)
		eps, why := readPart(path, want, served)
		found := map[int][]episode.Played{}
		for _, p := range eps {
			i, ok := at[p.Episode.EpisodeID]
			if !ok {
				why = fmt.Sprintf("holds episode %s, not of this rollout's plan", p.Episode.EpisodeID)
				break
			}
			found[groupOf[i]] = append(found[groupOf[i]], p)
		}
		for g, got := range found {
			if why != "" {
				break
			}
			for n, p := range got {
				if gr := gs[g]; len(got) != gr.end-gr.start || p.Episode.EpisodeID != jobs[gr.start+n].ID {
					why = fmt.Sprintf("holds task %s's episodes other than its plan's", jobs[gr.start].Task.ID)
					break
				}
			}
		}
		if why != "" {
			k.replayed = append(k.replayed, path+": "+why)
			continue
		}
		for g, got := range found {
			if k.eps[g] == nil { // two processes running the same shard write the same tasks
				k.eps[g] = got
			}
		}
	}
	return k
}

// readPart reads back the episodes of a part, in its order, when its lineage is want; else it
// says why not: unreadable, or made from other inputs (lineageDiff).
func readPart(path string, want schema.Lineage, served bool) ([]episode.Played, string) {
	file := func(table string) string { return filepath.Join(path, layout.File(table)) }
	tables := []*schema.Table{schema.Episodes, schema.Decisions, schema.Executions}
	names := []string{layout.Episodes, layout.Decisions, layout.Executions}
	if served {
		tables, names = append(tables, schema.Prompts), append(names, layout.Prompts)
	}
	for i, t := range tables {
		f, err := t.Open(file(names[i]))
		if err != nil {
			return nil, fmt.Sprintf("unreadable (%v)", err)
		}
		diff := lineageDiff(f.Lineage, want)
		f.Close()
		if diff != "" {
			return nil, "made with " + diff
		}
	}
	rows, err := schema.ReadFile[schema.EpisodeRow](schema.Episodes, file(layout.Episodes))
	if err != nil {
		return nil, fmt.Sprintf("unreadable (%v)", err)
	}
	out := make([]episode.Played, len(rows))
	byID := make(map[string]*episode.Played, len(rows))
	for i, r := range rows {
		if byID[r.EpisodeID] != nil {
			return nil, fmt.Sprintf("holds episode %s twice", r.EpisodeID)
		}
		out[i].Episode = r
		byID[r.EpisodeID] = &out[i]
	}
	missing := func(table, id string) string {
		return fmt.Sprintf("holds %s rows of episode %s, which its episodes do not", table, id)
	}
	decisions, err := schema.ReadFile[schema.DecisionRow](schema.Decisions, file(layout.Decisions))
	if err != nil {
		return nil, fmt.Sprintf("unreadable (%v)", err)
	}
	for _, d := range decisions {
		p := byID[d.EpisodeID]
		if p == nil {
			return nil, missing(layout.Decisions, d.EpisodeID)
		}
		p.Decisions = append(p.Decisions, d)
	}
	executions, err := schema.ReadFile[schema.ExecutionRow](schema.Executions, file(layout.Executions))
	if err != nil {
		return nil, fmt.Sprintf("unreadable (%v)", err)
	}
	for _, x := range executions {
		p := byID[x.EpisodeID]
		if p == nil {
			return nil, missing(layout.Executions, x.EpisodeID)
		}
		p.Executions = append(p.Executions, x)
	}
	if served {
		prompts, err := schema.ReadFile[schema.PromptRow](schema.Prompts, file(layout.Prompts))
		if err != nil {
			return nil, fmt.Sprintf("unreadable (%v)", err)
		}
		for _, x := range prompts {
			p := byID[x.EpisodeID]
			if p == nil {
				return nil, missing(layout.Prompts, x.EpisodeID)
			}
			p.Prompts = append(p.Prompts, x)
		}
	}
	return out, ""
}

// lineageDiff says how a part's lineage differs from this run's, "" when it does not.
func lineageDiff(got, want schema.Lineage) string {
	var diffs []string
	if got.Run != want.Run {
		diffs = append(diffs, fmt.Sprintf("run %q, this one's %q", got.Run, want.Run))
	}
	if got.Step != want.Step || got.Stage != want.Stage {
		diffs = append(diffs, fmt.Sprintf("step %d stage %s, this one's step %d stage %s", got.Step, got.Stage, want.Step, want.Stage))
	}
	if got.ConfigSHA256 != want.ConfigSHA256 {
		diffs = append(diffs, fmt.Sprintf("configuration sha256 %s, this one's %s", got.ConfigSHA256, want.ConfigSHA256))
	}
	diffs = append(diffs, schema.InputDiffs(got.Inputs, want.Inputs, "this one", func(k string) string { return k })...)
	return strings.Join(diffs, "; ")
}

package author

import (
	"cmp"
	"slices"

	"github.com/evosteer/evosteer-go/schema"
)

// Episode sources (the episodes table's source column).
const (
	sourceCurrent   = "current"
	sourceReference = "natural_reference"
)

func natural(e *schema.EpisodeRow) bool {
	return e.Source == sourceCurrent || e.Source == sourceReference
}

// familyEpisodes is what the author sees of one family at one step: the evidence pool carried
// over from the earlier steps (at most author.evidence_pool) and the step's episodes.
type familyEpisodes struct {
	pool, current []schema.EpisodeRow
}

// updatePool is a family-keyed evidence pool after one more step, as the reference carries it
// from batch to batch (METHOD.md §5.3): each family's pool is re-ranked together with the
// step's natural episodes by the author's own selection rule (selectEvidence: same-task
// success/failure contrasts first), keeping at most capacity, so a pool accumulated over the
// warm-up keeps the most informative contrasts seen so far, across steps.
func updatePool(pool map[string][]schema.EpisodeRow, step []schema.EpisodeRow, capacity int, threshold float64) map[string][]schema.EpisodeRow {
	next := map[string]*familyEpisodes{}
	for f, eps := range pool {
		next[f] = &familyEpisodes{pool: eps}
	}
	for _, e := range step {
		if !natural(&e) {
			continue
		}
		if next[e.Family] == nil {
			next[e.Family] = &familyEpisodes{}
		}
		next[e.Family].current = append(next[e.Family].current, e)
	}
	out := map[string][]schema.EpisodeRow{}
	for f, fe := range next {
		if kept := selectEvidence(fe, threshold, capacity); len(kept) > 0 {
			out[f] = kept
		}
	}
	return out
}

// groupEpisodes splits the step's episodes by family, beside each family's carried pool.
func groupEpisodes(current []schema.EpisodeRow, pool map[string][]schema.EpisodeRow) map[string]*familyEpisodes {
	out := map[string]*familyEpisodes{}
	get := func(f string) *familyEpisodes {
		if out[f] == nil {
			out[f] = &familyEpisodes{}
		}
		return out[f]
	}
	for f, eps := range pool {
		get(f).pool = slices.Clone(eps)
	}
	for _, e := range current {
		get(e.Family).current = append(get(e.Family).current, e)
	}
	for _, fe := range out {
		slices.SortFunc(fe.pool, func(a, b schema.EpisodeRow) int { return cmp.Compare(a.EpisodeID, b.EpisodeID) })
		slices.SortFunc(fe.current, func(a, b schema.EpisodeRow) int { return cmp.Compare(a.EpisodeID, b.EpisodeID) })
	}
	return out
}

// naturals is the pool and the step's natural episodes.
func (fe *familyEpisodes) naturals() []schema.EpisodeRow {
	if fe == nil {
		return nil
	}
	out := slices.Clone(fe.pool)
	for _, e := range fe.current {
		if natural(&e) {
			out = append(out, e)
		}
	}
	return out
}

// FamilyStats summarise a family's natural episodes (pool and step) for the priority of
// author windows and the author's data block.
type FamilyStats struct {
	Rollouts      int     // natural episodes
	DistinctTasks int     // tasks among them
	Successes     int     // reward >= success_threshold
	MixedTasks    int     // tasks with both a success and a failure
	MeanScore     float64 // mean reward (0 without episodes)
}

func familyStats(eps []schema.EpisodeRow, threshold float64) FamilyStats {
	var s FamilyStats
	type seen struct{ win, loss bool }
	tasks := map[string]*seen{}
	sum := 0.0
	for _, e := range eps {
		s.Rollouts++
		sum += e.Reward
		if tasks[e.TaskID] == nil {
			tasks[e.TaskID] = &seen{}
		}
		if e.Reward >= threshold {
			s.Successes++
			tasks[e.TaskID].win = true
		} else {
			tasks[e.TaskID].loss = true
		}
	}
	s.DistinctTasks = len(tasks)
	for _, t := range tasks {
		if t.win && t.loss {
			s.MixedTasks++
		}
	}
	if s.Rollouts > 0 {
		s.MeanScore = sum / float64(s.Rollouts)
	}
	return s
}

// priority orders the families that can take a candidate (METHOD.md §5.3), ascending: fewest
// skills, fewest earlier windows that proposed nothing, families with rewards first, most tasks
// with both a success and a failure, lowest mean natural reward, most failures, config order.
func priority(families []string, skillCount, failedReports map[string]int, st map[string]FamilyStats) []string {
	out := slices.Clone(families)
	index := map[string]int{}
	for i, f := range families {
		index[f] = i
	}
	noRewards := func(f string) int {
		if st[f].Rollouts == 0 {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(out, func(a, b string) int {
		return cmp.Or(
			cmp.Compare(skillCount[a], skillCount[b]),
			cmp.Compare(failedReports[a], failedReports[b]),
			cmp.Compare(noRewards(a), noRewards(b)),
			cmp.Compare(st[b].MixedTasks, st[a].MixedTasks),
			cmp.Compare(st[a].MeanScore, st[b].MeanScore),
			cmp.Compare(st[b].Rollouts-st[b].Successes, st[a].Rollouts-st[a].Successes),
			cmp.Compare(index[a], index[b]),
		)
	})
	return out
}

// selectEvidence picks at most limit episodes to show the author (METHOD.md §5.4; the release's
// `_select`): of the family's stopped, healthy episodes (pool and step, paired arms included),
// first success/failure contrasts per task (best success against worst failure, largest reward gap
// first, ties by task id), then the rest alternating failures and successes, episodes of
// tasks not yet shown first. Ties break by episode id, so the choice is deterministic.
func selectEvidence(fe *familyEpisodes, threshold float64, limit int) []schema.EpisodeRow {
	if fe == nil {
		return nil
	}
	var eps []schema.EpisodeRow
	for _, e := range append(slices.Clone(fe.pool), fe.current...) {
		if e.Stopped && e.Healthy {
			eps = append(eps, e)
		}
	}
	slices.SortFunc(eps, func(a, b schema.EpisodeRow) int { return cmp.Compare(a.EpisodeID, b.EpisodeID) })
	success := func(e schema.EpisodeRow) bool { return e.Reward >= threshold }

	type contrast struct {
		task        string
		best, worst schema.EpisodeRow
		gap         float64
	}
	byTask := map[string]*contrast{}
	var order []string
	for _, e := range eps {
		c := byTask[e.TaskID]
		if c == nil {
			c = &contrast{task: e.TaskID, best: schema.EpisodeRow{Reward: -1}, worst: schema.EpisodeRow{Reward: 2}}
			byTask[e.TaskID] = c
			order = append(order, e.TaskID)
		}
		if success(e) && e.Reward > c.best.Reward {
			c.best = e
		}
		if !success(e) && e.Reward < c.worst.Reward {
			c.worst = e
		}
	}
	var contrasts []*contrast
	for _, t := range order {
		if c := byTask[t]; c.best.EpisodeID != "" && c.worst.EpisodeID != "" {
			c.gap = c.best.Reward - c.worst.Reward
			contrasts = append(contrasts, c)
		}
	}
	slices.SortFunc(contrasts, func(a, b *contrast) int { return cmp.Or(cmp.Compare(b.gap, a.gap), cmp.Compare(a.task, b.task)) })

	var out []schema.EpisodeRow
	chosen, shown := map[string]bool{}, map[string]bool{}
	add := func(e schema.EpisodeRow) {
		out = append(out, e)
		chosen[e.EpisodeID], shown[e.TaskID] = true, true
	}
	for _, c := range contrasts {
		if len(out)+2 > limit {
			break
		}
		add(c.worst)
		add(c.best)
	}
	var fails, wins []schema.EpisodeRow
	for _, e := range eps {
		switch {
		case chosen[e.EpisodeID]:
		case success(e):
			wins = append(wins, e)
		default:
			fails = append(fails, e)
		}
	}
	// Alternate, starting with a failure; within each list, the first episode of a task not
	// yet shown, else the first (episode-id order).
	next := func(l *[]schema.EpisodeRow) schema.EpisodeRow {
		k := max(0, slices.IndexFunc(*l, func(e schema.EpisodeRow) bool { return !shown[e.TaskID] }))
		e := (*l)[k]
		*l = slices.Delete(*l, k, k+1)
		return e
	}
	for i := 0; len(out) < limit && (len(fails) > 0 || len(wins) > 0); i++ {
		if (i%2 == 1 && len(wins) > 0) || len(fails) == 0 {
			add(next(&wins))
		} else {
			add(next(&fails))
		}
	}
	return out
}

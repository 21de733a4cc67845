package stats

// ValueData returns the value head's supervised states (METHOD.md §3.4 "Supervised states",
// paper §C.5 "Data routing"), in episode order then t order:
//
//   - every decision state s_t of a healthy natural_reference episode;
//   - the decision states with T ≥ 1 of a healthy paired_treatment or paired_control episode
//     (the forced first action's state s_0 is excluded);
//   - nothing from current episodes or unhealthy episodes.
//
// Label = the episode's final reward r; Features = f(s_t); TaskType from the episode.
func ValueData(eps []Episode) []ValueRow {
	var out []ValueRow
	for i := range eps {
		e := &eps[i]
		if !e.Healthy {
			continue
		}
		natural := e.Source == sourceNatural
		if !natural && !isPaired(e) {
			continue
		}
		for _, d := range e.Decisions {
			if !natural && d.T < 1 {
				continue
			}
			out = append(out, ValueRow{EpisodeID: e.ID, T: d.T, Features: d.Features, TaskType: e.TaskType, Label: e.Reward})
		}
	}
	return out
}

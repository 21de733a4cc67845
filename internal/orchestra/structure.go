package orchestra

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// StructureKey returns the structural bucket keys of the current state (METHOD.md §4.3).
// Nodes are renumbered 0..N−1 in id order, so the key depends only on the team's shape
// (roles, bound skills, edges with protocols, output node), not on node ids. Each key is
// the canonical JSON of a 5-element array, a string SQL can group by:
// ["exact", graph_key, N, E, stopped] and ["coarse", "", N, E, stopped].
func (r *Runtime) StructureKey() (exact, coarse string) {
	ids := r.numericIDs()
	index := make(map[string]int, len(ids))
	nodes := make([]any, len(ids))
	for i, id := range ids {
		index[id] = i
		n := r.nodes[id]
		skills := slices.Clone(n.Skills)
		slices.Sort(skills)
		nodes[i] = map[string]any{"role": n.Role, "skills": skills}
	}
	type edge struct {
		src, tgt int
		protocol string
	}
	edges := make([]edge, len(r.edges))
	for i, e := range r.edges {
		edges[i] = edge{index[e.Source], index[e.Target], e.Protocol}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.tgt, b.tgt), cmp.Compare(a.protocol, b.protocol))
	})
	edgeValues := make([]any, len(edges))
	for i, e := range edges {
		edgeValues[i] = []any{e.src, e.tgt, e.protocol}
	}
	var output any
	if r.output != "" {
		output = index[r.output]
	}
	sum := sha256.Sum256([]byte(canonicalJSON(map[string]any{"nodes": nodes, "edges": edgeValues, "output": output})))
	graphKey := "sha256:" + hex.EncodeToString(sum[:])
	n, e := len(r.nodes), len(r.edges)
	return canonicalJSON([]any{"exact", graphKey, n, e, r.stopped}),
		canonicalJSON([]any{"coarse", "", n, e, r.stopped})
}

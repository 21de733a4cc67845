// Package actiontrie holds the legal actions of one decision as a prefix-free trie of token paths
// and turns a language model's per-token log-probabilities into the reference policy's masked
// likelihood ρ(a|s) over that legal set (docs/METHOD.md §3.5, the reference ρ; the paper's
// grammar mask). The served reference policy uses it, and so will an in-process LoRA
// orchestrator.
//
// Each candidate is the token ids of a legal action's canonical JSON text with EOS appended, so
// no candidate is a prefix of another and every complete path is one action. At a position where
// several tokens continue the same prefix the model's distribution is renormalised over those
// tokens alone; a position with one allowed token is forced and contributes exactly 0, so a single
// legal action has log-probability 0 and the probabilities of all candidates sum to 1:
//
//	log ρ(a) = Σ_{j branching} [ ℓ_j(a_j) − logsumexp_{t allowed after a[:j]} ℓ_j(t) ]
//
// Because every allowed token at a branching position is the next token of some candidate, a
// teacher-forced pass over every candidate yields every term; no other vocabulary entry is needed.
//
// It must not talk HTTP, run or load a model, or know what an action's JSON says or what the
// orchestration graph is: it sees token ids and log-probabilities only, so the tokeniser, the
// server and the orchestrator can change without it.
package actiontrie

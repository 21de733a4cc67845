// Package search is the search tool of agents (METHOD.md §2.5): a client of an HTTP retrieval
// service with the reference's /retrieve contract (timeouts, retries with backoff, an outage
// tolerance and a circuit breaker), a local BM25 index over the passages a task ships in its
// prompt (HotpotQA's distractor setting), and the result format agents see.
//
// It must not decide what a result means for an episode; the executor does.
package search

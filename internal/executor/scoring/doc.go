// Package scoring asks a served language model for the log-probabilities of given continuations
// of a prompt: the client side of a reference policy ρ that is a served LLM (docs/SERVED-REFERENCE.md).
// Two dialects speak to the engines people run: SGLang's native /generate and vLLM's
// OpenAI-compatible /v1/completions with prompt log-probabilities. Token ids always come from the
// server's own tokenizer (its tokenize endpoint), never from a tokenizer guessed here.
//
// Every request goes through internal/executor/openai's Client.Do (DoBounded for vLLM's scoring
// replies, whose honest size grows with the positions they score), so scoring follows the same
// rules as every other model call: concurrency slots, timeouts, retries and the outage budget, no
// redirect, a reply cap, the API key redacted from every error.
//
// It must not know the orchestration graph, actions or policies (internal/orchestra,
// internal/policy): it scores token sequences. The trie that turns these numbers into ρ(a|s)
// over a legal set lives in internal/actiontrie.
package scoring

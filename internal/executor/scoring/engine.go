package scoring

import "context"

// Engine is a served model that scores given continuations of a prompt.
type Engine interface {
	// Tokenize returns the server's token ids of text, special-token text such as "<|im_end|>"
	// read as its id, with no token added (no BOS).
	Tokenize(ctx context.Context, text string) ([]int, error)
	// Continuations returns, for each continuation, the natural-log probability of each of its
	// tokens given the prompt and the continuation's tokens before it (softmax over the whole
	// vocabulary, before any sampling processor), in one request.
	Continuations(ctx context.Context, prompt []int, continuations [][]int) ([][]float64, error)
	// Preflight checks, before a run relies on the server, that it answers, serves the
	// configured model and returns the log-probabilities scoring needs; its error is one line
	// naming the URL and what is missing.
	Preflight(ctx context.Context) error
}

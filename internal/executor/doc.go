// Package executor defines how the orchestration runtime runs one agent: the Executor and
// Session interfaces, the request (role, bound skills, inbound messages, previous output,
// assembled prompt, seed) and the result (output, answer presence, status, usage, tool calls,
// environment state). Backends live in their own packages: the simulated world in internal/sim,
// an OpenAI-compatible endpoint in internal/executor/openai.
//
// It must not decide anything about the graph or the budget; the runtime does that.
package executor

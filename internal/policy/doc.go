// Package policy holds the orchestrator's policies over the legal actions of a decision: the
// Policy interface (log-probabilities over the legal set, 0 for a singleton), the numeric
// encodings the learned network consumes (the state vector stored as policy_input and one
// descriptor per legal action stored as action_inputs), the declarative reference prior, and
// seeded sampling.
//
// It must not execute actions, touch files, or hold learned weights (those live in gpu/).
package policy

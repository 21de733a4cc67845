// Package textrules holds the reference's rules for reading agent texts: the token length the
// budget charges for a text (Tokens), whether an output states an answer (AnswerPresent), the
// key answers are compared by (NormalizedAnswer), and the text tests of evosteer_features.py
// that the features, observations and diagnosis are built from. The runtime (internal/orchestra)
// and the executor backends (internal/executor/openai) both read texts by these rules, so they
// live below both.
//
// It must not import any other project package: it is a leaf, pure functions of their text.
package textrules

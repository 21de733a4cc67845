// Package openai runs agents on any OpenAI-compatible Chat Completions server (vLLM, SGLang,
// llama.cpp server, Ollama): a reusable chat client (request and response types, a concurrency
// limit shared by every caller, retries with exponential backoff within an outage tolerance,
// usage), which the skill author's model client uses too (stages/author), and the executor
// backend built on it, with the tool loop of METHOD.md §2.5 (python sandbox, search) and grading
// by the task's grader at STOP.
//
// It must not log or store the API key, and must not decide anything about the team graph or
// the episode budget beyond the role envelope it is given.
package openai

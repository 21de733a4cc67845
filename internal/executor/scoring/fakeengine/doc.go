// Package fakeengine is a serving engine for the test suite: a tiny deterministic language model
// (Model) whose every probability a test can compute exactly, served over HTTP (net/http/httptest,
// loopback only) in SGLang's and vLLM's dialects, so the scoring client and everything above it
// are checked against exact numbers without weights or a GPU.
//
// It must not be imported by the product's own code paths: tests and benchmarks only.
package fakeengine

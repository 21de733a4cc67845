// Package tasks holds task records in the reference release's JSONL row schema (METHOD.md §6.1),
// their Arrow form, and the graders of METHOD.md §6.2: QA exact match (F1 stored too), multiple
// choice, AIME integers, MATH-Hard equivalence and MBPP+ pass@1, the last run in the python
// sandbox. Every score names its grader and version.
//
// It must not run agents or know about the orchestration graph.
package tasks

// Package tasks holds task records in the reference release's row schema, their loaders and
// their graders (QA exact match, multiple choice, math, code pass@1).
//
// It must not run agents or know about the orchestration graph.
package tasks

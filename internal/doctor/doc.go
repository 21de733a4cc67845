// Package doctor is the preflight of a run's serving stack (`evosteer doctor`, and the start of
// `evosteer init` and `evosteer train` when something remote is configured): before any
// episode it checks, concurrently and within Deadline, each configured model endpoint (the
// executor's Chat Completions server, the served reference through its own preflight, the skill
// author's model), the python sandbox the code graders and the python tool run in (that it runs
// as its unprivileged user and imports numpy where MBPP+ is graded), the search service of every
// family whose roles are offered search, and that every family has a grader in this build. Each
// failure is one line: what failed, where (URL, interpreter, family) and the fix.
//
// It must not write anything: no run folder, no file, no table (it imports neither
// internal/rundir nor schema). It must not retry for long: every request is one attempt with a
// short timeout, and every check ends by the deadline, a check still running then being
// reported as timed out. Its HTTP goes through internal/executor/openai's client (or the search
// client), so keys are redacted from every line it prints.
package doctor

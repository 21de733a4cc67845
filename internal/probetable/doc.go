// Package probetable is the probe's table after it is written: where a probed step's table lies
// in a run (Folder, StepDir, Steps, Read) and what it says, computed from its rows alone
// (Summarize: expected reward under ρ, θ, π* and the best action; θ's coverage of π*: slope, TV,
// KL; the family × role interaction; a one-line verdict; as JSON, Markdown and a table row).
// The probe stage writes the table and its summary with it; the report reads and summarises
// probed steps with it.
//
// It must not play episodes or write files.
package probetable

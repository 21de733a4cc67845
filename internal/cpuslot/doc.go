// Package cpuslot bounds the goroutines that do CPU work at once (an episode deciding,
// executing tools, grading), and lets one that holds a slot give it back while it waits on the
// network, so that requests in flight are bounded by each endpoint's cap and not by the CPU pool.
//
// It must not know what the work is: it holds no state but the slots, never sleeps, and never
// decides an order of work (outputs cannot depend on it).
package cpuslot

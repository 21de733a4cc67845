package sandbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestMemoryTotalBoundsTheRunningPrograms: the memory limits of the programs running at once
// sum to at most the configured total, across every sandbox of that total in the process: with
// room for two limits and six slots in each of two sandboxes, no more than two programs run at
// once. A run whose own limit is above the total is a tool error naming both, and New refuses
// a default limit above it.
func TestMemoryTotalBoundsTheRunningPrograms(t *testing.T) {
	cfg := Config{Interpreter: testPython(), Limits: testLimits, Concurrency: 6, MemoryTotal: 2 * testLimits.Memory}
	var boxes []*Sandbox
	for range 2 {
		s, err := New(cfg)
		if err != nil {
			t.Skipf("no usable python interpreter: %v", err)
		}
		boxes = append(boxes, s)
	}
	const code = "import time\nstart = time.monotonic()\ntime.sleep(0.8)\nprint(start, time.monotonic())\n"
	type span struct{ start, end float64 }
	spans := make([]span, 6)
	var wg sync.WaitGroup
	for i := range spans {
		wg.Go(func() {
			res := boxes[i%2].Run(context.Background(), code)
			if res.Status != StatusSuccess {
				t.Errorf("run %d: %s %s %s", i, res.Status, res.Error, res.Stderr)
				return
			}
			fmt.Sscan(res.Stdout, &spans[i].start, &spans[i].end)
		})
	}
	wg.Wait()
	most := 0
	for _, a := range spans {
		n := 0
		for _, b := range spans {
			if b.start <= a.start && a.start < b.end {
				n++
			}
		}
		most = max(most, n)
	}
	if most > 2 {
		t.Fatalf("%d programs ran at once, their limits %d MiB over the total %d MiB: %v", most, most*int(testLimits.Memory>>20), cfg.MemoryTotal>>20, spans)
	}

	big := testLimits
	big.Memory = 3 * testLimits.Memory
	res := boxes[0].RunWith(context.Background(), "pass", big)
	if res.Status != StatusToolError || !strings.Contains(res.Error, "memory limit 1536 MiB is above the memory total 1024 MiB") {
		t.Fatalf("a run over the total: %s %q", res.Status, res.Error)
	}
	cfg.MemoryTotal = testLimits.Memory / 2
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "memory limit 512 MiB is above the memory total 256 MiB") {
		t.Fatalf("New with a limit over the total: %v", err)
	}
}

// TestDefaultMemoryTotal: without a configured total, the programs' limits share half of the
// machine's memory, and one program at its default limit always fits.
func TestDefaultMemoryTotal(t *testing.T) {
	machine, err := machineMemory()
	if err != nil || machine <= 0 {
		t.Fatalf("machine memory %d: %v", machine, err)
	}
	for _, limit := range []int64{64 << 20, 2 * machine} {
		got, err := memoryTotal(Config{Limits: Limits{Memory: limit}})
		if want := max(machine/2, limit); err != nil || got != want {
			t.Errorf("limit %d: total %d (%v), want %d", limit, got, err, want)
		}
	}
}

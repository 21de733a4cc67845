package openai

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkChat64InFlight drives 64 concurrent callers against a local Chat Completions server
// that answers after 10-30 ms (spread, so callers do not arrive in lockstep). It reports the
// CPU time per call of the whole process (client and test server together, an upper bound on
// the client's), the latency a caller sees beyond the server's delay (which also holds
// scheduling waits on a busy machine), and the most calls the server saw in flight at once.
// Under -short (make test) each caller makes 8 calls instead of 32.
func BenchmarkChat64InFlight(b *testing.B) {
	const callers = 64
	perCaller := 32
	if testing.Short() {
		perCaller = 8
	}
	var delays atomic.Int64
	f := newFake(b, func(n int64, _ wireRequest) reply {
		d := time.Duration(10+n*7%21) * time.Millisecond
		delays.Add(int64(d))
		return reply{200, completion("Answer: 42", "stop", true), d}
	})
	c := testClient(b, f.URL, nil)
	var latency, calls atomic.Int64
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perCaller {
					began := time.Now()
					if _, err := chat(c); err != nil {
						b.Error(err)
						return
					}
					latency.Add(int64(time.Since(began)))
					calls.Add(1)
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	n := calls.Load()
	cpu := (cpuTime() - cpu0) / time.Duration(n)
	b.ReportMetric(float64(cpu.Microseconds()), "cpu-µs/call")
	b.ReportMetric(float64(time.Duration((latency.Load()-delays.Load())/n).Microseconds()), "added-latency-µs/call")
	b.ReportMetric(float64(f.maxSeen.Load()), "max-in-flight")
	if f.maxSeen.Load() != callers {
		b.Errorf("max in flight %d, want %d", f.maxSeen.Load(), callers)
	}
	if cpu > time.Millisecond {
		b.Errorf("%v of CPU per call, want under 1 ms", cpu)
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

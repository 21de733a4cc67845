package sandbox

import (
	"fmt"
	"sync"
	"syscall"

	"golang.org/x/sync/semaphore"
)

// budget bounds the memory limits of the programs running at once: a run takes its
// Limits.Memory before it starts and gives it back when it ends. golang.org/x/sync's weighted
// semaphore grants in arrival order, so a run with a large limit is not passed over by smaller
// ones.
type budget struct {
	total int64
	*semaphore.Weighted
}

// budgets holds one budget per total: every Sandbox of a process with the same total (those
// of one configuration: the agents' python tool and the code graders) shares it.
var budgets = struct {
	sync.Mutex
	of map[int64]*budget
}{of: map[int64]*budget{}}

func budgetOf(total int64) *budget {
	budgets.Lock()
	defer budgets.Unlock()
	b := budgets.of[total]
	if b == nil {
		b = &budget{total: total, Weighted: semaphore.NewWeighted(total)}
		budgets.of[total] = b
	}
	return b
}

// memoryTotal is the budget of a configuration: Config.MemoryTotal, or half of the machine's
// memory and at least the default limit, so that one program always fits. A default limit
// above a configured total is refused.
func memoryTotal(cfg Config) (int64, error) {
	if cfg.MemoryTotal > 0 {
		if err := fits(cfg.Limits.Memory, cfg.MemoryTotal); err != nil {
			return 0, err
		}
		return cfg.MemoryTotal, nil
	}
	machine, err := machineMemory()
	if err != nil {
		return 0, fmt.Errorf("the machine's memory, for the default memory total: %w", err)
	}
	return max(machine/2, cfg.Limits.Memory), nil
}

// fits refuses a program's memory limit above the total.
func fits(limit, total int64) error {
	if limit > total {
		return fmt.Errorf("memory limit %d MiB is above the memory total %d MiB that the running programs' limits share (tools.python.memory_total_mb); raise the total or lower the limit",
			limit>>20, total>>20)
	}
	return nil
}

// machineMemory is the machine's physical memory in bytes.
func machineMemory() (int64, error) {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0, err
	}
	return int64(si.Totalram) * int64(si.Unit), nil
}

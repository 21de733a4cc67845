package sandbox

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Without a PID namespace a program can leave its process group (setsid); its processes
// still carry the run id in their environment and arguments, so they are found in /proc.

// errNoProc reports a host without /proc, where escaped processes cannot be found.
var errNoProc = errors.New("no /proc")

func findRun(id string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, errNoProc
	}
	mark := []byte(id)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		if stat, err := os.ReadFile(filepath.Join(dir, "stat")); err == nil && zombie(stat) {
			continue
		}
		for _, f := range []string{"environ", "cmdline"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil && bytes.Contains(b, mark) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}

// zombie reports a process that has exited and waits only to be reaped.
func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// sweep kills every process of a run and reports whether none is left after a short wait.
func sweep(id string) bool {
	deadline := time.Now().Add(2 * time.Second)
	for {
		pids, err := findRun(id)
		if err != nil {
			return false
		}
		if len(pids) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countTasks counts the tasks (threads) of a user's processes, what RLIMIT_NPROC counts.
func countTasks(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		info, err := os.Stat(dir)
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
			if tasks, err := os.ReadDir(filepath.Join(dir, "task")); err == nil {
				n += len(tasks)
			}
		}
	}
	return n
}

// mountProc mounts a fresh proc filesystem on /proc (nosuid, nodev, noexec): what boot.py does
// first when the sandbox has a private /proc, and the probe of whether the host allows it.
const mountProc = `import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
if _libc.mount(b"proc", b"/proc", b"proc", 2 | 4 | 8, None) != 0:
    raise OSError(ctypes.get_errno(), "mount /proc")
`

// diskPoll is how often the bytes of a run's folder are measured.
const diskPoll = 50 * time.Millisecond

// watchDisk calls over once when the files under dir hold more than limit bytes (their apparent
// sizes, so a sparse file counts whole), measuring every diskPoll until stop is closed.
func watchDisk(dir string, limit int64, stop <-chan struct{}, over func()) {
	tick := time.NewTicker(diskPoll)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if dirBytes(dir) > limit {
				over()
				return
			}
		}
	}
}

// dirBytes sums the sizes of the files under dir that can be listed.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

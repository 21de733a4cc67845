package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/layout"
)

// LockName is the run folder's writer lock. A command that writes the run holds it while it
// runs (flock, so it dies with its process: a killed writer never blocks the next one) and
// records its pid and command line in it; readers (sql, inspect, report) do not take it.
const LockName = ".lock"

// LockedError is the answer to a writer when another process holds the run's lock.
type LockedError struct {
	Dir    string
	Holder string // "pid N: command line" as the holder recorded it; "" when not yet recorded
}

func (e *LockedError) Error() string {
	holder := e.Holder
	if holder == "" {
		holder = "a process that has not recorded its pid yet"
	}
	return fmt.Sprintf("run %s is being written by %s; wait for it to finish or stop it (sql, inspect and report read a run without waiting)", e.Dir, holder)
}

// Lock takes the run's writer lock for this process without waiting; a run another process
// writes is a *LockedError naming it. Every command that writes the run takes it first and
// holds it to the end (Unlock, or the process's exit).
func (r *Folder) Lock() error {
	if err := r.takeLock(false); err != nil {
		return err
	}
	return r.recover()
}

// LockShared takes the lock shared: the shards of a sharded rollout (rundir.Stage.Shard) may
// hold it together, while a writer holding Lock excludes them and they exclude it.
func (r *Folder) LockShared() error { return r.takeLock(true) }

// Unlock releases the run's lock, if this Folder holds it.
func (r *Folder) Unlock() {
	if r.lock != nil {
		r.lock.Close() // closing the file releases the flock
		r.lock = nil
	}
}

func (r *Folder) takeLock(shared bool) error {
	if r.lock != nil {
		return nil
	}
	f, err := acquire(r.Dir, shared)
	if err != nil {
		return err
	}
	r.lock = f
	return nil
}

// acquire takes the lock of the run folder dir and records this process as its holder.
func acquire(dir string, shared bool) (*os.File, error) {
	path := filepath.Join(dir, LockName)
	f, held, err := tryLock(path, shared)
	if held {
		data, _ := os.ReadFile(path)
		return nil, &LockedError{Dir: dir, Holder: strings.TrimSpace(string(data))}
	}
	if err != nil {
		return nil, fmt.Errorf("lock run %s: %s: %w", dir, path, err)
	}
	args := append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	holder := fmt.Sprintf("pid %d: %s\n", os.Getpid(), strings.Join(args, " "))
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(holder), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock run %s: record the holder in %s: %w", dir, path, err)
	}
	return f, nil
}

// recover finishes or undoes the folder replacements a killed process left half done (a
// stage re-run, a probe, a report): in the run folder and in every step folder, a stage folder
// moved aside with nothing in its place goes back, so the outputs match the manifest again and
// the run resumes; leftovers moved aside are removed. It runs under the writer lock.
func (r *Folder) recover() error {
	dirs := []string{r.Dir}
	entries, err := os.ReadDir(r.Dir)
	if err != nil {
		return fmt.Errorf("recover %s: %w", r.Dir, err)
	}
	for _, e := range entries {
		if _, ok := layout.ParseStepDir(e.Name()); ok && e.IsDir() {
			dirs = append(dirs, filepath.Join(r.Dir, e.Name()))
		}
	}
	for _, d := range dirs {
		if err := atomicfile.RecoverDir(d); err != nil {
			return fmt.Errorf("recover %s from an interrupted re-run: %w", d, err)
		}
	}
	return nil
}

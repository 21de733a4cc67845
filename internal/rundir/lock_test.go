//go:build unix

package rundir

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
)

// TestMain lets a test run this binary as a second process (RUNDIR_TEST_HELPER=what:dir) that
// does one thing to a run folder, says so on standard output and waits to be killed.
func TestMain(m *testing.M) {
	if h := os.Getenv("RUNDIR_TEST_HELPER"); h != "" {
		what, dir, _ := strings.Cut(h, ":")
		if err := helper(what, dir); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		time.Sleep(time.Hour) // until killed (select{} would be a deadlock the runtime ends)
	}
	os.Exit(m.Run())
}

// helper is the second process: "init" stops inside Init's populate, after writing a task file;
// "lock" holds the lock of an existing run.
func helper(what, dir string) error {
	switch what {
	case "init":
		cfg, err := config.Default()
		if err != nil {
			return err
		}
		_, err = Init(dir, cfg, "v", func(r *Folder) error {
			if err := os.WriteFile(r.TasksPath("train"), []byte("half"), 0o644); err != nil {
				return err
			}
			fmt.Println("ready")
			time.Sleep(time.Hour)
			return nil
		})
		return err
	case "lock":
		r, err := Open(dir)
		if err != nil {
			return err
		}
		if err := r.Lock(); err != nil {
			return err
		}
		fmt.Println("ready")
		return nil
	}
	return fmt.Errorf("unknown helper %q", what)
}

// startHelper starts the second process and waits until it says it is ready.
func startHelper(t *testing.T, what, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RUNDIR_TEST_HELPER="+what+":"+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper %s: %q %v", what, line, err)
	}
	return cmd
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

// A process killed while it creates a run leaves no run folder, so the next Init (what
// `evosteer train` does for a new run) succeeds and removes the killed creation's leftovers.
func TestInitKilledMidwayLeavesNoRun(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "demo")
	kill(t, startHelper(t, "init", dir))
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a killed Init left the run folder behind (%v)", err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(parent, ".demo.init-*")); len(tmps) != 1 {
		t.Fatalf("the killed creation's temporary folder: %v", tmps)
	}
	cfg, _ := config.Default()
	r, err := Init(dir, cfg, "v", nil)
	if err != nil {
		t.Fatalf("Init after a killed Init: %v", err)
	}
	r.Unlock()
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 {
		t.Fatalf("beside the run: %v, want only demo", entries)
	}
}

// While one process creates a run, its temporary folder is not removed by another Init of the
// same run, and whichever finishes second is told the folder exists.
func TestInitLeavesALiveCreationAlone(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "demo")
	cmd := startHelper(t, "init", dir)
	cfg, _ := config.Default()
	r, err := Init(dir, cfg, "v", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Unlock()
	tmps, _ := filepath.Glob(filepath.Join(parent, ".demo.init-*"))
	if len(tmps) != 1 {
		t.Fatalf("the live creation's folder: %v", tmps)
	}
	if data, err := os.ReadFile(filepath.Join(tmps[0], "tasks", "train.arrow")); err != nil || string(data) != "half" {
		t.Fatalf("the live creation's file: %q %v", data, err)
	}
	kill(t, cmd)
	var exists *ExistsError
	if _, err := Init(dir, cfg, "v", nil); !errors.As(err, &exists) || !strings.Contains(err.Error(), "holds a run") {
		t.Fatalf("Init over a run: %v", err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(parent, ".demo.init-*")); len(tmps) != 0 {
		t.Fatalf("abandoned creation not removed: %v", tmps)
	}
}

// A second writer is refused with the holder's pid, in another process or in this one (flock
// locks belong to an open file); shared holders (rollout shards) coexist but exclude a writer;
// a killed holder's lock is free at once.
func TestLockExcludesSecondWriter(t *testing.T) {
	r := newRun(t) // Init's lock, held
	other, err := Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var locked *LockedError
	err = other.Lock()
	if !errors.As(err, &locked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d: ", os.Getpid())) {
		t.Fatalf("second writer in this process: %v", err)
	}
	if err := r.Lock(); err != nil {
		t.Fatalf("re-locking a held lock: %v", err)
	}
	r.Unlock()
	if err := r.LockShared(); err != nil {
		t.Fatal(err)
	}
	if err := other.LockShared(); err != nil {
		t.Fatalf("two shards: %v", err)
	}
	third, _ := Open(r.Dir)
	if err := third.Lock(); !errors.As(err, &locked) {
		t.Fatalf("writer beside shards: %v", err)
	}
	r.Unlock()
	other.Unlock()

	cmd := startHelper(t, "lock", r.Dir)
	err = third.Lock()
	if !errors.As(err, &locked) || !strings.HasPrefix(locked.Holder, fmt.Sprintf("pid %d: ", cmd.Process.Pid)) {
		t.Fatalf("writer beside another process: %v", err)
	}
	t.Log(err)
	kill(t, cmd)
	if err := third.Lock(); err != nil {
		t.Fatalf("lock of a killed process: %v", err)
	}
	third.Unlock()
	// Stages run as before under the lock.
	runs := 0
	os.WriteFile(filepath.Join(r.Dir, "in.txt"), []byte("a"), 0o644)
	if _, err := r.RunStage(context.Background(), 1, copyStage("in.txt", &runs), false); err != nil || runs != 1 {
		t.Fatalf("stage: %v", err)
	}
}

// Init removes only the temporary folders it made (named .NAME.init-DIGITS, holding its
// marker): a user's files beside the run, whatever their names — old, lookalike, or with glob
// characters in the run's name — are left alone.
func TestInitRemovesOnlyItsOwnLeftovers(t *testing.T) {
	for _, name := range []string{"data", "*"} {
		parent := t.TempDir()
		dir := filepath.Join(parent, name)
		old := time.Now().Add(-time.Hour)
		mine := []string{"." + name + ".init-notes.txt", "." + name + ".init-backup", ".bashrc.init-old", "." + name + ".init-123"}
		for _, f := range mine {
			p := filepath.Join(parent, f)
			if strings.HasSuffix(f, ".txt") || strings.HasSuffix(f, "-old") {
				os.WriteFile(p, []byte("user"), 0o644)
			} else {
				os.Mkdir(p, 0o755)
				os.WriteFile(filepath.Join(p, "keep"), []byte("user"), 0o644)
			}
			os.Chtimes(p, old, old)
		}
		// An abandoned creation of this program: marker, no lock, older than a minute.
		abandoned := filepath.Join(parent, "."+name+".init-987654")
		os.Mkdir(abandoned, 0o755)
		os.WriteFile(filepath.Join(abandoned, initMarker), nil, 0o644)
		os.Chtimes(abandoned, old, old)

		cfg, _ := config.Default()
		r, err := Init(dir, cfg, "v", nil)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		r.Unlock()
		for _, f := range mine {
			if _, err := os.Stat(filepath.Join(parent, f)); err != nil {
				t.Errorf("%q: Init removed the user's %s", name, f)
			}
		}
		if _, err := os.Stat(abandoned); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%q: the abandoned creation %s was kept", name, abandoned)
		}
		if _, err := os.Stat(filepath.Join(dir, initMarker)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%q: the run holds the creation marker", name)
		}
	}
}

// Init uses an existing empty folder, and an empty folder reached through a symbolic link, as
// its --help promises ("must not exist or be empty").
func TestInitUsesAnEmptyFolder(t *testing.T) {
	parent := t.TempDir()
	empty := filepath.Join(parent, "e")
	real := filepath.Join(parent, "real")
	link := filepath.Join(parent, "link")
	for _, d := range []string{empty, real} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	cfg, _ := config.Default()
	for _, dir := range []string{empty, link} {
		r, err := Init(dir, cfg, "v", nil)
		if err != nil {
			t.Fatalf("init into the empty %s: %v", dir, err)
		}
		r.Unlock()
		if _, err := Open(dir); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(real, RunFileName)); err != nil {
		t.Errorf("the run was not created in the linked folder: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
}

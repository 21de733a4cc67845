package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
)

// RunFileName is the run's record of its resolved configuration.
const RunFileName = layout.RunFile

// Folder is an initialised run folder.
type Folder struct {
	Dir         string
	Name        string
	Config      *config.Config
	CodeVersion string // the code that initialised the run

	lock   *os.File    // the run's lock, while this Folder holds it (Lock)
	hashes *fileHashes // sums of the files this process wrote or hashed (hashes.go)
}

// runFile is run.yaml: the resolved configuration with its hash, so an edit is caught on load.
type runFile struct {
	Name         string         `yaml:"name"`
	CreatedAt    time.Time      `yaml:"created_at"`
	CodeVersion  string         `yaml:"code_version"`
	ConfigSHA256 string         `yaml:"config_sha256"`
	Config       *config.Config `yaml:"config"`
}

const runFileHeader = "# Written by `evosteer init`. Do not edit: every stage checks config_sha256.\n"

// Init creates a run folder: the tasks folder, whatever populate writes (the task records and
// step 0), and run.yaml. It builds them in a temporary folder beside dir (.NAME.init-*) and
// renames that into place last, so dir appears complete or not at all: a process killed during
// Init leaves only the temporary folder, which the next Init removes. It refuses a folder that
// exists and is not empty (*ExistsError), so a run is never overwritten by accident. The
// returned Folder holds the run's lock (Lock), taken before populate ran; Unlock releases it.
func Init(dir string, cfg *config.Config, codeVersion string, populate func(*Folder) error) (_ *Folder, err error) {
	removeAbandoned(filepath.Clean(dir))
	target, err := newRunTarget(dir)
	if err != nil {
		return nil, err
	}
	if target != filepath.Clean(dir) {
		removeAbandoned(target)
	}
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(target)+initSuffix)
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	// The marker tells removeAbandoned the folder is this program's: it removes nothing else.
	if err := os.WriteFile(filepath.Join(tmp, initMarker), nil, 0o644); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	r := &Folder{Dir: tmp, Name: filepath.Base(filepath.Clean(dir)), Config: cfg, CodeVersion: codeVersion, hashes: newFileHashes()}
	defer func() {
		if err != nil {
			r.Unlock()
			os.RemoveAll(tmp)
		}
	}()
	// Held from here on, the lock tells removeAbandoned this temporary folder is alive; after
	// the rename it is the run's lock.
	if err := r.Lock(); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := os.Mkdir(filepath.Join(tmp, layout.TasksDir), 0o755); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if populate != nil {
		if err := populate(r); err != nil {
			return nil, fmt.Errorf("init %s: %w", dir, err)
		}
	}
	rf := runFile{Name: r.Name, CreatedAt: time.Now().UTC().Truncate(time.Second), CodeVersion: codeVersion, ConfigSHA256: cfg.SHA256(), Config: cfg}
	out, err := yaml.MarshalWithOptions(rf, yaml.IndentSequence(true))
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(tmp, RunFileName), append([]byte(runFileHeader), out...), 0o644); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	// rename(2) replaces an empty folder and fails on a non-empty one, so of two processes
	// creating the same run one wins and the other is told the folder exists.
	if err := os.Remove(filepath.Join(tmp, initMarker)); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	// Go's os.Rename refuses any existing folder, even an empty one: remove an empty target
	// first (os.Remove removes only an empty folder, so nothing of a user's is lost).
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if entries, rerr := os.ReadDir(target); rerr == nil && len(entries) > 0 {
			return nil, &ExistsError{Dir: dir}
		}
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := os.Rename(tmp, target); err != nil {
		if entries, rerr := os.ReadDir(target); rerr == nil && len(entries) > 0 {
			return nil, &ExistsError{Dir: dir}
		}
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	r.Dir = dir
	return r, nil
}

// initSuffix marks the temporary folder of a run being created: .NAME.init-RANDOM, which holds
// initMarker until it is renamed into place.
const (
	initSuffix = ".init-"
	initMarker = ".evosteer-init"
)

// ExistsError is Init's answer for a folder that exists and is not empty.
type ExistsError struct{ Dir string }

func (e *ExistsError) Error() string {
	what := "a run"
	if _, err := os.Stat(filepath.Join(e.Dir, RunFileName)); err != nil {
		what = "no " + RunFileName + ", so it is not a run"
	}
	return fmt.Sprintf("init %s: folder exists and is not empty (it holds %s); choose another --run or remove it", e.Dir, what)
}

// newRunTarget is the path Init renames the new run to: dir, or the folder it links to when
// it is an existing (empty) folder; an existing folder that is not empty is an *ExistsError.
func newRunTarget(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return filepath.Clean(dir), nil
	case err != nil:
		return "", fmt.Errorf("init %s: %w", dir, err)
	case len(entries) > 0:
		return "", &ExistsError{Dir: dir}
	}
	target, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("init %s: %w", dir, err)
	}
	return target, nil
}

// removeAbandoned removes the temporary folders of creations of the run folder dir whose
// process died: folders named .NAME.init-DIGITS that hold initMarker and whose lock is free. A
// folder with the marker and no lock file is its creator's first instant, or a leftover; only
// one older than a minute is removed. Nothing without the marker is touched, whatever its name.
func removeAbandoned(dir string) {
	parent, prefix := filepath.Dir(dir), "."+filepath.Base(dir)+initSuffix
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() || rest == "" || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		tmp := filepath.Join(parent, e.Name())
		if info, err := os.Lstat(filepath.Join(tmp, initMarker)); err != nil || !info.Mode().IsRegular() {
			continue
		}
		lock := filepath.Join(tmp, LockName)
		if _, err := os.Stat(lock); err != nil {
			if info, err := os.Stat(tmp); err == nil && time.Since(info.ModTime()) > time.Minute {
				os.RemoveAll(tmp)
			}
			continue
		}
		if f, _, err := tryLock(lock, false); err == nil {
			os.RemoveAll(tmp)
			f.Close()
		}
	}
}

// Open loads a run folder, checking that run.yaml's configuration still has its recorded hash.
func Open(dir string) (*Folder, error) {
	path := filepath.Join(dir, RunFileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open run %s: no %s; create the run with `evosteer init --run %s`", dir, RunFileName, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", dir, err)
	}
	var rf runFile
	if err := yaml.NewDecoder(bytes.NewReader(data), yaml.Strict()).Decode(&rf); err != nil {
		return nil, fmt.Errorf("open run %s: %s: %w", dir, RunFileName, err)
	}
	if rf.Config == nil {
		return nil, fmt.Errorf("open run %s: %s has no config", dir, RunFileName)
	}
	if got := rf.Config.SHA256(); got != rf.ConfigSHA256 {
		return nil, fmt.Errorf("open run %s: %s was edited: its config hashes to %s, recorded %s; start a new run instead", dir, RunFileName, got, rf.ConfigSHA256)
	}
	return &Folder{Dir: dir, Name: rf.Name, Config: rf.Config, CodeVersion: rf.CodeVersion, hashes: newFileHashes()}, nil
}

// TasksPath is the task file of a split ("train" or "test").
func (r *Folder) TasksPath(split string) string {
	return filepath.Join(r.Dir, filepath.FromSlash(layout.TasksFile(split)))
}

// StepDir is the folder of training step k (step 0 is the initial state).
func (r *Folder) StepDir(step int) string {
	return filepath.Join(r.Dir, layout.StepDir(step))
}

// StageDir is the output folder of one stage of one step.
func (r *Folder) StageDir(step int, stage string) string {
	return filepath.Join(r.StepDir(step), stage)
}

// Rel gives a path relative to the run folder, the form manifests and lineage record, so a run
// folder can be moved without invalidating them.
func (r *Folder) Rel(path string) string {
	rel, err := filepath.Rel(r.Dir, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(rel)
}

// MissingInput is the error for a file of the run (a path under Dir) that does not exist
// (layout.MissingInput): it names the file and the command that writes it.
func (r *Folder) MissingInput(path string) error {
	return layout.MissingInput(r.Dir, r.Rel(path))
}

package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/config"
)

// RunFileName is the run's record of its resolved configuration.
const RunFileName = "run.yaml"

// Run is an initialised run folder.
type Run struct {
	Dir         string
	Name        string
	Config      *config.Config
	CodeVersion string // the code that initialised the run
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

// Init creates a run folder: the tasks folder, whatever populate writes (the task records), and
// run.yaml last, so a folder with run.yaml is complete; on failure the new folder is removed. It
// refuses a folder that exists and is not empty, so a run is never overwritten by accident.
func Init(dir string, cfg *config.Config, codeVersion string, populate func(*Run) error) (_ *Run, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil && len(entries) > 0:
		return nil, fmt.Errorf("init %s: folder exists and is not empty; choose another --run or remove it", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o755); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	r := &Run{Dir: dir, Name: filepath.Base(filepath.Clean(dir)), Config: cfg, CodeVersion: codeVersion}
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
	if err := atomicfile.WriteBytes(filepath.Join(dir, RunFileName), append([]byte(runFileHeader), out...), 0o644); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	return r, nil
}

// Open loads a run folder, checking that run.yaml's configuration still has its recorded hash.
func Open(dir string) (*Run, error) {
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
	return &Run{Dir: dir, Name: rf.Name, Config: rf.Config, CodeVersion: rf.CodeVersion}, nil
}

// TasksPath is the task file of a split ("train" or "test").
func (r *Run) TasksPath(split string) string {
	return filepath.Join(r.Dir, "tasks", split+".arrow")
}

// StepDir is the folder of training step k (step 0 is the initial state).
func (r *Run) StepDir(step int) string {
	return filepath.Join(r.Dir, fmt.Sprintf("step-%06d", step))
}

// StageDir is the output folder of one stage of one step.
func (r *Run) StageDir(step int, stage string) string {
	return filepath.Join(r.StepDir(step), stage)
}

// Rel gives a path relative to the run folder, the form manifests and lineage record, so a run
// folder can be moved without invalidating them.
func (r *Run) Rel(path string) string {
	rel, err := filepath.Rel(r.Dir, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(rel)
}

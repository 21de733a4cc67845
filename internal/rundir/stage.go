package rundir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/schema"
)

// ManifestName is the per-step record of what each stage read and wrote.
const ManifestName = "manifest.json"

// Manifest is manifest.json of one step.
type Manifest struct {
	Step   int                    `json:"step"`
	Stages map[string]StageRecord `json:"stages"`
	// SHA256 is the sha256 of the manifest's compact JSON with this field empty. A manifest
	// edited or made by hand does not match it and is refused, instead of deciding which stages
	// are up to date.
	SHA256 string `json:"sha256,omitempty"`
}

// checksum is the sha256 of m's compact JSON without its SHA256 (encoding/json writes map keys
// sorted, so equal manifests give equal bytes).
func (m Manifest) checksum() (string, error) {
	m.SHA256 = ""
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// StageRecord is what one completed stage read and wrote. Paths are relative to the run folder.
type StageRecord struct {
	Inputs       map[string]string `json:"inputs"`  // path -> sha256
	Outputs      map[string]string `json:"outputs"` // path -> sha256
	ConfigSHA256 string            `json:"config_sha256"`
	Seed         uint64            `json:"seed,string"`
	CodeVersion  string            `json:"code_version"`
	WallMS       int64             `json:"wall_ms"`
	Finished     time.Time         `json:"finished"`
}

// Stage is one unit of work of a step: a pure function of its input files, its seed and the
// configuration, writing its outputs into a fresh folder.
type Stage struct {
	Name   string
	Inputs []string // files the stage reads, relative to the run folder (or absolute)
	// Shard, when set ("2-of-8"), lets several processes write the same stage folder: each
	// shard's files are moved in one by one and recorded under "name#shard".
	Shard string
	Run   func(ctx context.Context, sc *StageContext) error
}

// StageContext is what a running stage may use.
type StageContext struct {
	Run    *Run
	Step   int
	Stage  string
	Seed   uint64
	OutDir string            // write every output here; it becomes the stage folder
	Inputs map[string]string // relative input path -> sha256
}

// Lineage is the metadata every Arrow file written by the stage carries.
func (sc *StageContext) Lineage() schema.Lineage {
	return schema.Lineage{Run: sc.Run.Name, Step: sc.Step, Stage: sc.Stage, ConfigSHA256: sc.Run.Config.SHA256(), Inputs: maps.Clone(sc.Inputs)}
}

// Result says what RunStage did.
type Result struct {
	Skipped bool // outputs existed and matched inputs, seed and configuration
	Record  StageRecord
}

// StageSeed is the seed of one stage of one step, derived from the run seed.
func (r *Run) StageSeed(step int, stage string) uint64 {
	return seed.Derive(r.Config.Seed, "stage", strconv.Itoa(step), stage)
}

// ReadManifest returns the manifest of a step (empty when none was written yet).
func (r *Run) ReadManifest(step int) (*Manifest, error) {
	path := filepath.Join(r.StepDir(step), ManifestName)
	m := &Manifest{Step: step, Stages: map[string]StageRecord{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", path, err)
	}
	want, err := m.checksum()
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", path, err)
	}
	refuse := func(why string) (*Manifest, error) {
		return nil, fmt.Errorf("manifest %s %s: it was not written by the stage runner (edited, made by hand, or from an older evosteer); remove %s to recompute the step, or start a new run", path, why, r.StepDir(step))
	}
	switch {
	case m.SHA256 == "":
		return refuse("has no sha256 of itself")
	case m.SHA256 != want:
		return refuse(fmt.Sprintf("does not match its sha256 (recorded %s, its content hashes to %s)", m.SHA256, want))
	case m.Step != step:
		return refuse(fmt.Sprintf("is of step %d", m.Step))
	}
	if m.Stages == nil {
		m.Stages = map[string]StageRecord{}
	}
	return m, nil
}

// RunStage runs st for a step unless its recorded outputs exist and its inputs, seed and
// configuration are unchanged (force recomputes). Outputs appear all at once: the stage
// writes into a temporary folder that is renamed into place, and a failed stage leaves neither
// outputs nor a manifest entry behind.
func (r *Run) RunStage(ctx context.Context, step int, st Stage, force bool) (Result, error) {
	key := st.Name
	if st.Shard != "" {
		key += "#" + st.Shard
	}
	fail := func(err error) (Result, error) {
		return Result{}, fmt.Errorf("step %d stage %s: %w", step, key, err)
	}
	inputs, err := r.hashFiles(st.Inputs)
	if err != nil {
		return fail(err)
	}
	stageSeed := r.StageSeed(step, st.Name)
	if !force {
		m, err := r.ReadManifest(step)
		if err != nil {
			return fail(err)
		}
		if rec, ok := m.Stages[key]; ok && r.upToDate(rec, inputs, stageSeed) {
			return Result{Skipped: true, Record: rec}, nil
		}
	}

	stepDir := r.StepDir(step)
	if err := os.MkdirAll(stepDir, 0o755); err != nil {
		return fail(err)
	}
	if st.Shard == "" {
		// Leftovers of a process killed mid-stage; shards skip this since a sibling may be live.
		stale, _ := filepath.Glob(filepath.Join(stepDir, ".tmp-"+st.Name+"-*"))
		olds, _ := filepath.Glob(r.StageDir(step, st.Name) + ".old-*")
		for _, p := range append(stale, olds...) {
			os.RemoveAll(p)
		}
	}
	tmp, err := os.MkdirTemp(stepDir, ".tmp-"+st.Name+"-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	sc := &StageContext{Run: r, Step: step, Stage: st.Name, Seed: stageSeed, OutDir: tmp, Inputs: inputs}
	if err := st.Run(ctx, sc); err != nil {
		return fail(err)
	}
	names, err := outputNames(tmp)
	if err != nil {
		return fail(err)
	}
	final := r.StageDir(step, st.Name)
	if st.Shard == "" {
		err = atomicfile.ReplaceDir(tmp, final)
	} else {
		err = moveFiles(tmp, final, names)
	}
	if err != nil {
		return fail(err)
	}
	outPaths := make([]string, len(names))
	for i, n := range names {
		outPaths[i] = r.Rel(filepath.Join(final, n))
	}
	outputs, err := r.hashFiles(outPaths)
	if err != nil {
		return fail(err)
	}
	rec := StageRecord{Inputs: inputs, Outputs: outputs, ConfigSHA256: r.Config.SHA256(), Seed: stageSeed,
		CodeVersion: r.CodeVersion, WallMS: time.Since(start).Milliseconds(), Finished: time.Now().UTC()}
	if err := r.record(step, key, rec); err != nil {
		return fail(err)
	}
	return Result{Record: rec}, nil
}

func (r *Run) upToDate(rec StageRecord, inputs map[string]string, stageSeed uint64) bool {
	if rec.ConfigSHA256 != r.Config.SHA256() || rec.Seed != stageSeed || !maps.Equal(rec.Inputs, inputs) || len(rec.Outputs) == 0 {
		return false
	}
	for rel, want := range rec.Outputs {
		got, err := schema.SHA256File(filepath.Join(r.Dir, filepath.FromSlash(rel)))
		if err != nil || got != want {
			return false
		}
	}
	return true
}

func (r *Run) hashFiles(paths []string) (map[string]string, error) {
	out := make(map[string]string, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(r.Dir, p)
		}
		sum, err := schema.SHA256File(p)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", p, err)
		}
		out[r.Rel(p)] = sum
	}
	return out, nil
}

// outputNames lists the files a stage wrote; sub-folders (a checkpoint) are walked.
func outputNames(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		names = append(names, rel)
		return err
	})
	slices.Sort(names)
	return names, err
}

// moveFiles moves a shard's files into the shared stage folder one rename at a time.
func moveFiles(tmp, final string, names []string) error {
	for _, n := range names {
		dst := filepath.Join(final, n)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(tmp, n), dst); err != nil {
			return err
		}
	}
	return atomicfile.SyncDir(final)
}

// record adds one stage's entry to the step manifest under a lock, since shards of a stage
// may finish at the same time.
func (r *Run) record(step int, key string, rec StageRecord) error {
	unlock, err := lockFile(filepath.Join(r.StepDir(step), ".manifest.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	m, err := r.ReadManifest(step)
	if err != nil {
		return err
	}
	m.Stages[key] = rec
	if m.SHA256, err = m.checksum(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(r.StepDir(step), ManifestName), append(data, '\n'), 0o644)
}

// Verify checks that every output the step's manifest records still exists with its recorded
// sha256: a finished stage's files are never changed in place, so a mismatch means the run was
// modified (or damaged) outside the pipeline.
func (r *Run) Verify(step int) error {
	m, err := r.ReadManifest(step)
	if err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(m.Stages)) {
		rec := m.Stages[key]
		if rec.ConfigSHA256 != r.Config.SHA256() {
			return fmt.Errorf("step %d stage %s was run with configuration %s, the run's is %s", step, key, rec.ConfigSHA256, r.Config.SHA256())
		}
		for _, rel := range slices.Sorted(maps.Keys(rec.Outputs)) {
			got, err := schema.SHA256File(filepath.Join(r.Dir, filepath.FromSlash(rel)))
			if err != nil {
				return fmt.Errorf("step %d stage %s: output %s: %w", step, key, rel, err)
			}
			if got != rec.Outputs[rel] {
				return fmt.Errorf("step %d stage %s: output %s has sha256 %s, but the manifest recorded %s: the run was changed outside the pipeline; recompute that stage with --force, or start a new run", step, key, rel, got, rec.Outputs[rel])
			}
		}
	}
	return nil
}

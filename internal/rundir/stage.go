package rundir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// Stage is one stage of a step (ARCHITECTURE.md §5.1): a pure function of its input files, its
// seed and the configuration, writing its outputs into a fresh folder that becomes the stage's
// folder of the step (Folder.StageDir(step, Name())). RunStage runs it.
type Stage interface {
	// Name is the stage's folder in a step (a layout stage name).
	Name() string
	// Inputs lists every file the stage reads for step, as the run names them (Folder.StageDir,
	// Folder.TasksPath: under Folder.Dir). Each one must exist: RunStage reports a missing one with the command that writes it
	// (Folder.MissingInput), so a stage lists the files it needs even when they are not there yet.
	// An error says the inputs cannot be listed (an incomplete set of shards). The resolved
	// inputs come back to Run as StageContext.Resolved, so Run never resolves them again.
	Inputs(r *Folder, step int) (Resolved, error)
	// Outputs lists the files the stage writes for step, relative to its folder; RunStage
	// checks that the stage wrote exactly these.
	Outputs(r *Folder, step int) []string
	// Run writes the outputs into sc.OutDir.
	Run(ctx context.Context, sc *StageContext) error
}

// Sharded is a Stage that runs as one of several shards writing the same stage folder:
// ShardName names it ("2-of-8", layout.Shard; "" for the whole stage). Each shard's files are
// moved in one by one and recorded under "name#shard"; they replace the files and records of the
// stage laid out otherwise (whole, or in another number of shards), as a whole run replaces
// those of its shards.
type Sharded interface {
	ShardName() string
}

// Mergeable is a stage that can also run as shards, and whose complete set of shards makes the
// whole stage without running it again (the rollout). RunStage of the whole stage, when the step's
// manifest records shards i/n of it up to date (same inputs, seed and configuration), runs only
// the shards missing from the set (AsShard) and then merges them (MergeShards) into the whole
// stage's files, recorded as the whole stage's: a step rolled out in shards is never rolled out
// again, and every later stage reads the same bytes as after a whole run.
type Mergeable interface {
	Stage
	// AsShard is the stage as shard i of n (a Sharded stage).
	AsShard(i, n int) Stage
	// MergeShards writes into sc.OutDir the whole stage's outputs (Outputs) from the files of its
	// n complete shards in the stage folder: the bytes a whole run of the stage writes.
	MergeShards(ctx context.Context, sc *StageContext, n int) error
}

// Summary is what a stage says about a step's outputs, read from its files; the stage
// commands print it.
type Summary interface {
	Write(w io.Writer) error
}

// AsSummary returns a stage's Summarize result as a Summary: nil, not a typed nil pointer, when
// it failed. A stage's Summary method is `return rundir.AsSummary(Summarize(ctx, r, step))`.
func AsSummary[S Summary](s S, err error) (Summary, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Resolved is a stage's inputs for one step: the files it reads (Paths, which RunStage checks and
// hashes) in whatever structure the stage gives them; RunStage hands it to Run unchanged.
type Resolved interface{ Paths() []string }

// Files is Resolved for a stage whose inputs are a plain list of files.
type Files []string

// Paths implements Resolved.
func (f Files) Paths() []string { return f }

// StageContext is what a running stage may use.
type StageContext struct {
	Folder *Folder
	Step   int
	Stage  string
	Seed   uint64
	OutDir string            // write every output here; it becomes the stage folder
	Inputs map[string]string // relative input path -> sha256
	// Resolved is what the stage's Inputs returned for this step (its own type: the stage
	// asserts it).
	Resolved Resolved
	// PartsDir is where the stage may keep finished work as it goes (the rollout's finished
	// episodes), so that a run of it killed midway resumes instead of starting over: a hidden
	// sibling of the stage folder, never read as its outputs, named by the stage's shard, inputs,
	// seed and configuration (PartsDir), so a run with other inputs looks in another folder. It
	// is not created; RunStage removes it once the stage commits (the whole stage: every parts
	// folder of the stage in the step), and empties it first under force. What a stage keeps there
	// must carry its own lineage, checked before it is resumed, and be written atomically.
	PartsDir string
}

// PartsRoot is the folder of a step that holds the parts folders of a stage's runs
// (StageContext.PartsDir): STEP/.NAME-parts, hidden, outside the stage folder.
func (r *Folder) PartsRoot(step int, name string) string {
	return filepath.Join(r.StepDir(step), "."+name+"-parts")
}

// PartsDir is the parts folder of a run of stage name (shard "" for the whole stage) with these
// inputs and seed under the run's configuration and this program: PartsRoot/SHARD-KEY, KEY a
// sha256 prefix of them all.
func (r *Folder) PartsDir(step int, name, shard string, inputs map[string]string, stageSeed uint64) string {
	h := sha256.New()
	fmt.Fprintf(h, "stage %s\nshard %s\nseed %d\nconfig %s\ncode %s\n", name, shard, stageSeed, r.Config.SHA256(), r.CodeVersion)
	for _, p := range slices.Sorted(maps.Keys(inputs)) {
		fmt.Fprintf(h, "input %s %s\n", p, inputs[p])
	}
	if shard == "" {
		shard = "whole"
	}
	return filepath.Join(r.PartsRoot(step, name), shard+"-"+hex.EncodeToString(h.Sum(nil))[:16])
}

// Lineage is the metadata every Arrow file written by the stage carries.
func (sc *StageContext) Lineage() schema.Lineage {
	return schema.Lineage{Run: sc.Folder.Name, Step: sc.Step, Stage: sc.Stage, ConfigSHA256: sc.Folder.Config.SHA256(), Inputs: maps.Clone(sc.Inputs)}
}

// Result says what RunStage did.
type Result struct {
	// Skipped: the stage did not run. Its outputs existed and matched inputs, seed and
	// configuration, or (Merged) its complete shards were merged into them.
	Skipped bool
	// Merged is n when the whole stage's files were made from its n shards (Mergeable), 0
	// otherwise; Reran lists the shards of the set that ran first because they were missing.
	Merged int
	Reran  []int
	Record StageRecord
}

// StageSeed is the seed of one stage of one step, derived from the run seed.
func (r *Folder) StageSeed(step int, stage string) uint64 {
	return seed.Derive(r.Config.Seed, "stage", strconv.Itoa(step), stage)
}

// ReadManifest returns the manifest of a step (empty when none was written yet).
func (r *Folder) ReadManifest(step int) (*Manifest, error) {
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
// configuration are unchanged (force recomputes). Its inputs are verified first (VerifyInputs:
// each the file its manifest records). Outputs appear all at once: the stage writes into a
// temporary folder that is renamed into place, and a failed stage leaves neither outputs nor a
// manifest entry behind. A step or stage folder that is a link, or a stage folder holding a file
// the pipeline did not write, is refused before anything is written (checkOwnFolder).
func (r *Folder) RunStage(ctx context.Context, step int, st Stage, force bool) (Result, error) {
	name, shard := st.Name(), ""
	if sh, ok := st.(Sharded); ok {
		shard = sh.ShardName()
	}
	key := name
	if shard != "" {
		key += "#" + shard
	}
	fail := func(err error) (Result, error) {
		return Result{}, fmt.Errorf("step %d stage %s: %w", step, key, err)
	}
	resolved, err := st.Inputs(r, step)
	if err != nil {
		return fail(err)
	}
	inputs, err := r.VerifyInputs(resolved.Paths())
	if err != nil {
		return fail(err)
	}
	stageSeed := r.StageSeed(step, name)
	m, err := r.ReadManifest(step)
	if err != nil {
		return fail(err)
	}
	declared := st.Outputs(r, step)
	if rec, ok := m.Stages[key]; ok && !force && r.upToDate(rec, inputs, stageSeed) && r.recordsAll(rec, step, name, declared) {
		return Result{Skipped: true, Record: rec}, nil
	}
	if rec, ok := m.Stages[name]; ok && shard != "" && !force && r.upToDate(rec, inputs, stageSeed) {
		// The whole stage is up to date: it holds every shard's work (a shard job run again
		// after its step was merged, as a requeued cluster job is), so nothing is rolled out again.
		return Result{Skipped: true, Record: rec}, nil
	}
	outLayout := layoutOf(declared, shard)
	if err := r.checkOwnFolder(m, name, outLayout); err != nil {
		return fail(err)
	}
	var reran []int
	merged := 0
	if mg, ok := st.(Mergeable); ok && shard == "" && !force {
		n, done := r.recordedShards(m, name, inputs, stageSeed)
		if n > 1 && len(done) > 0 {
			if reran, err = r.completeShards(ctx, step, mg, n, done); err != nil {
				return Result{}, err
			}
			merged = n
		}
	}

	stepDir := r.StepDir(step)
	if err := os.MkdirAll(stepDir, 0o755); err != nil {
		return fail(err)
	}
	if shard == "" {
		// Leftovers of a process killed mid-stage; shards skip this since a sibling may be live.
		stale, _ := filepath.Glob(filepath.Join(stepDir, ".tmp-"+name+"-*"))
		for _, p := range stale {
			os.RemoveAll(p)
		}
	}
	tmp, err := os.MkdirTemp(stepDir, ".tmp-"+name+"-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	parts := r.PartsDir(step, name, shard, inputs, stageSeed)
	if force {
		if err := os.RemoveAll(parts); err != nil {
			return fail(err)
		}
	}
	start := time.Now()
	sc := &StageContext{Folder: r, Step: step, Stage: name, Seed: stageSeed, OutDir: tmp, Inputs: inputs, Resolved: resolved, PartsDir: parts}
	if merged > 0 {
		err = st.(Mergeable).MergeShards(ctx, sc, merged)
	} else {
		err = st.Run(ctx, sc)
	}
	if err != nil {
		return fail(err)
	}
	names, err := outputNames(tmp)
	if err != nil {
		return fail(err)
	}
	if err := checkOutputs(names, declared); err != nil {
		return fail(err)
	}
	final := r.StageDir(step, name)
	outputs := make(map[string]string, len(names))
	for _, n := range names {
		if outputs[r.Rel(filepath.Join(final, n))], err = schema.SHA256File(filepath.Join(tmp, n)); err != nil {
			return fail(err)
		}
	}
	rec := StageRecord{Inputs: inputs, Outputs: outputs, ConfigSHA256: r.Config.SHA256(), Seed: stageSeed,
		CodeVersion: r.CodeVersion, WallMS: time.Since(start).Milliseconds(), Finished: time.Now().UTC()}
	install := func() error { return atomicfile.ReplaceDir(tmp, final) }
	if shard != "" {
		install = func() error {
			if err := removeOtherLayouts(final, outLayout); err != nil {
				return err
			}
			return moveFiles(tmp, final, names)
		}
	}
	if err := r.commit(step, key, rec, install); err != nil {
		return fail(err)
	}
	for rel, sum := range outputs {
		r.hashes.remember(filepath.Join(r.Dir, filepath.FromSlash(rel)), rel, sum)
	}
	// The kept parts are spent: the stage's outputs hold them. A whole stage's commit spends every
	// parts folder of the stage (its shards', and any of other inputs); a shard's only its own,
	// since a sibling may be live. Leftovers are harmless (never read as outputs, and keyed by
	// their inputs), so a failure to remove them does not fail the committed stage.
	if shard == "" {
		os.RemoveAll(r.PartsRoot(step, name))
	} else {
		os.RemoveAll(parts)
		os.Remove(r.PartsRoot(step, name)) // only when no other run's parts are left in it
	}
	return Result{Skipped: merged > 0 && len(reran) == 0, Merged: merged, Reran: reran, Record: rec}, nil
}

// recordsAll reports whether a stage's record holds every output the stage declares now: a
// record written by an older program, whose stage has since gained an output (a running state),
// is not up to date, so resuming such a run recomputes the stage instead of failing the next
// step on the missing file.
func (r *Folder) recordsAll(rec StageRecord, step int, name string, declared []string) bool {
	dir := r.StageDir(step, name)
	for _, d := range declared {
		if _, ok := rec.Outputs[r.Rel(filepath.Join(dir, filepath.FromSlash(d)))]; !ok {
			return false
		}
	}
	return true
}

func (r *Folder) upToDate(rec StageRecord, inputs map[string]string, stageSeed uint64) bool {
	if rec.ConfigSHA256 != r.Config.SHA256() || rec.Seed != stageSeed || !maps.Equal(rec.Inputs, inputs) || len(rec.Outputs) == 0 {
		return false
	}
	for rel, want := range rec.Outputs {
		got, err := r.fileSHA256(rel)
		if err != nil || got != want {
			return false
		}
	}
	return true
}

// checkInputs reports every input that does not exist, with the command that writes it.
func (r *Folder) checkInputs(paths []string) error {
	var errs []error
	for _, p := range paths {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, r.MissingInput(p))
		}
	}
	return errors.Join(errs...)
}

// checkOutputs compares the files a stage wrote with those it declared.
func checkOutputs(written, declared []string) error {
	var errs []error
	for _, d := range declared {
		if !slices.Contains(written, filepath.FromSlash(d)) {
			errs = append(errs, fmt.Errorf("the stage did not write its output %s", d))
		}
	}
	for _, w := range written {
		if !slices.Contains(declared, filepath.ToSlash(w)) {
			errs = append(errs, fmt.Errorf("the stage wrote %s, which is not among its outputs", w))
		}
	}
	return errors.Join(errs...)
}

// fileSHA256 is the sha256 of a file of the run by its path relative to the run folder
// (remembered while the file is unchanged: hashes.go).
func (r *Folder) fileSHA256(rel string) (string, error) {
	return r.hashes.sha256(filepath.Join(r.Dir, filepath.FromSlash(rel)), rel)
}

// hashFiles gives the sha256 of each file by its path relative to the run folder.
func (r *Folder) hashFiles(paths []string) (map[string]string, error) {
	out := make(map[string]string, len(paths))
	for _, p := range paths {
		rel := r.Rel(p)
		sum, err := r.hashes.sha256(p, rel)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", p, err)
		}
		out[rel] = sum
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

// commit puts a stage's outputs in place (install) and records the stage in the step
// manifest, under a lock, since shards of a stage may finish at the same time. The record
// replaces those of the stage laid out otherwise, whose files install replaced: a whole stage's
// replaces its shards', a shard's of n the whole stage's and those of shards of another count.
func (r *Folder) commit(step int, key string, rec StageRecord, install func() error) error {
	unlock, err := lockFile(filepath.Join(r.StepDir(step), ".manifest.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	m, err := r.ReadManifest(step)
	if err != nil {
		return err
	}
	if err := install(); err != nil {
		return err
	}
	name, _, _ := strings.Cut(key, "#")
	for _, k := range stageKeys(m, name) {
		if shardCount(k) != shardCount(key) {
			delete(m.Stages, k)
		}
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
func (r *Folder) Verify(step int) error {
	m, err := r.ReadManifest(step)
	if err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(m.Stages)) {
		rec := m.Stages[key]
		if rec.ConfigSHA256 != r.Config.SHA256() {
			return fmt.Errorf("step %d stage %s was run with configuration %s, the run's is %s (the step folder comes from another run): %s", step, key, rec.ConfigSHA256, r.Config.SHA256(), r.recomputeStep(step))
		}
		for _, rel := range slices.Sorted(maps.Keys(rec.Outputs)) {
			got, err := r.fileSHA256(rel)
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("step %d stage %s: its output %s is missing (was its stage folder deleted?): %s", step, key, rel, r.recompute(m, key))
			}
			if err != nil {
				return fmt.Errorf("step %d stage %s: output %s: %w", step, key, rel, err)
			}
			if got != rec.Outputs[rel] {
				return fmt.Errorf("step %d stage %s: output %s has sha256 %s, but the manifest recorded %s: the run was changed outside the pipeline; %s, or start a new run", step, key, rel, got, rec.Outputs[rel], r.recompute(m, key))
			}
		}
	}
	return nil
}

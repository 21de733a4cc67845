package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/layout"
)

// VerifyInputs checks the files a stage or a command is about to read and returns their sha256
// by path relative to the run folder (what its lineage records). Every file must exist (a
// missing one is named with the command that writes it, all of them at once), and a file of a
// stage folder of a step must be an output that the step's manifest records for that stage,
// with the same sha256, under the run's configuration: another run's checkpoint, or a file
// changed or added by hand, is refused with the command that recomputes it. Files outside the
// step folders (the task records) and those of a stage folder the manifest records nothing of
// (written by hand, as tests build inputs) are taken as they are.
func (r *Folder) VerifyInputs(paths []string) (map[string]string, error) {
	if err := r.checkInputs(paths); err != nil {
		return nil, err
	}
	sums, err := r.hashFiles(paths)
	if err != nil {
		return nil, err
	}
	manifests := map[int]*Manifest{}
	var errs []error
	for _, rel := range slices.Sorted(maps.Keys(sums)) {
		parts := strings.Split(rel, "/")
		step, ok := layout.ParseStepDir(parts[0])
		if !ok || len(parts) < 3 {
			continue
		}
		m := manifests[step]
		if m == nil {
			if m, err = r.ReadManifest(step); err != nil {
				return nil, err
			}
			manifests[step] = m
		}
		errs = append(errs, r.checkRecorded(m, parts[1], rel, sums[rel]))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return sums, nil
}

// checkRecorded checks one input of the stage folder stage against the manifest of its step.
func (r *Folder) checkRecorded(m *Manifest, stage, rel, sum string) error {
	keys := stageKeys(m, stage)
	if len(keys) == 0 {
		return nil
	}
	for _, key := range keys {
		rec := m.Stages[key]
		want, ok := rec.Outputs[rel]
		switch {
		case !ok:
			continue
		case rec.ConfigSHA256 != r.Config.SHA256():
			return fmt.Errorf("input %s: step %d's manifest records stage %s as run with configuration %s, but the run's is %s (the step folder comes from another run): %s",
				rel, m.Step, key, rec.ConfigSHA256, r.Config.SHA256(), r.recomputeStep(m.Step))
		case want != sum:
			return fmt.Errorf("input %s has sha256 %s, but step %d's manifest records %s for stage %s: it was replaced outside the pipeline (another run's file?); put the recorded file back, or %s",
				rel, sum, m.Step, want, key, r.recompute(m, key))
		}
		return nil
	}
	return fmt.Errorf("input %s is not among the outputs step %d's manifest records for stage %s: the pipeline did not write it; remove it, or %s", rel, m.Step, stage, r.recompute(m, keys[0]))
}

// stageKeys are the manifest's records of a stage folder: the whole stage's and its shards'
// ("name#i-of-n"), sorted.
func stageKeys(m *Manifest, stage string) []string {
	var keys []string
	for key := range m.Stages {
		if name, _, _ := strings.Cut(key, "#"); name == stage {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

// shardCount is the number of shards a record key or a shard name names: n of "name#i-of-n" or
// "i-of-n", 1 for a whole stage.
func shardCount(key string) int {
	_, n, ok := strings.Cut(key, "-of-")
	if !ok {
		return 1
	}
	count, err := strconv.Atoi(n)
	if err != nil {
		return 1
	}
	return count
}

// recompute says how to recompute the stage recorded under key in m: its command with --force
// (with --shard for a shard, unless the manifest also records the whole stage, which a whole run
// puts back in order).
func (r *Folder) recompute(m *Manifest, key string) string {
	if m.Step == 0 {
		return r.recomputeStep(0)
	}
	name, shard, _ := strings.Cut(key, "#")
	flag := ""
	if _, whole := m.Stages[name]; shard != "" && !whole {
		i, n, _ := strings.Cut(shard, "-of-")
		flag = " --shard " + i + "/" + n
	}
	return fmt.Sprintf("recompute it with `evosteer %s --run %s --step %d%s --force`", name, r.Dir, m.Step, flag)
}

// recomputeStep says how to recompute a whole step.
func (r *Folder) recomputeStep(step int) string {
	if step == 0 {
		return fmt.Sprintf("step 0 is written by `evosteer init` when the run is created; start a new run instead of %s", r.Dir)
	}
	return fmt.Sprintf("recompute the step with `evosteer step --run %s --step %d --force`", r.Dir, step)
}

// outputLayout names the files of one run of a stage: the tables of its declared outputs
// (a path in the stage folder without .arrow, "checkpoint/learner") and its number of shards.
type outputLayout struct {
	tables []string
	count  int
}

// layoutOf is the layout of a stage run declaring outputs as shard shard ("" for a whole stage).
func layoutOf(outputs []string, shard string) outputLayout {
	l := outputLayout{count: shardCount(shard)}
	suffix := ".arrow"
	if shard != "" {
		suffix = "-" + shard + ".arrow"
	}
	for _, o := range outputs {
		l.tables = append(l.tables, strings.TrimSuffix(o, suffix))
	}
	return l
}

// shards says whether file (a path in the stage folder) is a file of one of the layout's
// tables, in any number of shards, and in how many.
func (l outputLayout) shards(file string) (count int, ok bool) {
	for _, t := range l.tables {
		if file == layout.File(t) {
			return 1, true
		}
		if _, n, err := layout.ParseShardFile(t, file); err == nil {
			return n, true
		}
	}
	return 0, false
}

// checkOwnFolder refuses to write the stage folder name of m's step unless the pipeline owns
// it wholly, since recomputing a stage replaces its folder whole: the step and stage folders
// must be real folders (not links, which would have the run write and remove elsewhere), and
// every file in the stage folder must be one the pipeline writes there, an output the manifest
// records for the stage or a file of one of its tables (in any shards). A user's file is named
// and left alone.
func (r *Folder) checkOwnFolder(m *Manifest, name string, l outputLayout) error {
	stageDir := r.StageDir(m.Step, name)
	for _, dir := range []string{r.StepDir(m.Step), stageDir} {
		info, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(dir)
			return fmt.Errorf("%s is a symbolic link (to %s): the pipeline writes step and stage folders only inside the run, replacing them whole; remove the link (what it points to is kept) and run the command again", r.Rel(dir), target)
		case !info.IsDir():
			return fmt.Errorf("%s is not a folder: move it out of the run folder and run the command again", r.Rel(dir))
		}
	}
	recorded := map[string]bool{}
	for _, key := range stageKeys(m, name) {
		for rel := range m.Stages[key].Outputs {
			recorded[rel] = true
		}
	}
	var foreign []string
	err := filepath.WalkDir(stageDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(stageDir, p)
		if err != nil {
			return err
		}
		if _, ok := l.shards(filepath.ToSlash(rel)); !ok && !recorded[r.Rel(p)] {
			foreign = append(foreign, r.Rel(p))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", r.Rel(stageDir), err)
	}
	if len(foreign) > 0 {
		return fmt.Errorf("%s holds %s, which the pipeline did not write; recomputing the stage replaces its folder whole, so move them out of the run folder and run the command again", r.Rel(stageDir), strings.Join(foreign, ", "))
	}
	return nil
}

// removeOtherLayouts removes, before a shard of n moves its files into the stage folder, the
// files of the stage's tables laid out otherwise (the whole stage's, or shards of another
// count), which the shard's run replaces; checkOwnFolder made sure they are the pipeline's.
func removeOtherLayouts(stageDir string, l outputLayout) error {
	return filepath.WalkDir(stageDir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == stageDir {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(stageDir, p)
		if err != nil {
			return err
		}
		if n, ok := l.shards(filepath.ToSlash(rel)); ok && n != l.count {
			return os.Remove(p)
		}
		return nil
	})
}

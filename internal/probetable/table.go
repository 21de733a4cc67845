package probetable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// Folder is the probe's folder in the run; a step's outputs are in Folder/step-NNNNNN/, its
// table in TableFile there.
const (
	Folder    = "probe"
	TableFile = "probe.arrow"
)

// StepDir is the probe folder of a step.
func StepDir(r *rundir.Folder, step int) string {
	return filepath.Join(r.Dir, Folder, layout.StepDir(step))
}

// Read reads a probed step's table (fs.ErrNotExist when the step was not probed).
func Read(r *rundir.Folder, step int) ([]schema.ProbeRow, error) {
	return schema.ReadFile[schema.ProbeRow](schema.Probe, filepath.Join(StepDir(r, step), TableFile))
}

// Steps lists the probed steps of a run (those with a table), increasing.
func Steps(r *rundir.Folder) ([]int, error) {
	entries, err := os.ReadDir(filepath.Join(r.Dir, Folder))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var steps []int
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), "step-")
		if !e.IsDir() || !ok || len(name) != 6 {
			continue
		}
		k, err := strconv.Atoi(name)
		if err != nil || k < 0 {
			continue
		}
		if _, err := os.Stat(filepath.Join(r.Dir, Folder, e.Name(), TableFile)); err == nil {
			steps = append(steps, k)
		}
	}
	slices.Sort(steps)
	return steps, nil
}

package author

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

// Summary describes what the author did at one step.
type Summary struct {
	Step    int
	Windows int // windows the schedule opened (WindowFamilies)
	Rows    []schema.ProposalRow
	Library []skills.Skill
	Note    string // why no window ran, when none did
}

// Summary reads the step's outputs back (Summarize).
func (Stage) Summary(ctx context.Context, r *rundir.Folder, step int) (rundir.Summary, error) {
	return rundir.AsSummary(Summarize(ctx, r, step))
}

// Summarize reads the stage's outputs back.
func Summarize(_ context.Context, r *rundir.Folder, step int) (*Summary, error) {
	cfg := r.Config
	s := &Summary{Step: step, Windows: WindowFamilies(cfg, step)}
	switch {
	case !skills.Enabled(cfg):
		s.Note = "skill-evolution is ablated: no author"
	case step < cfg.Author.StartStep:
		s.Note = fmt.Sprintf("warm-up: the author starts at step %d", cfg.Author.StartStep)
	case s.Windows == 0:
		s.Note = fmt.Sprintf("no window this step (one every %d steps)", cfg.Author.Interval)
	}
	dir := r.StageDir(step, layout.Author)
	var err error
	if s.Rows, err = schema.ReadFile[schema.ProposalRow](schema.Proposals, filepath.Join(dir, layout.ProposalsFile)); err != nil {
		return nil, err
	}
	lib, err := skills.ReadLibrary(r, filepath.Join(dir, layout.SkillsFile))
	if err != nil {
		return nil, err
	}
	s.Library = lib.Skills()
	return s, nil
}

// Write prints one line per window and the library's statuses.
func (s *Summary) Write(w io.Writer) error {
	var b strings.Builder
	if s.Note != "" {
		fmt.Fprintln(&b, s.Note)
	}
	for _, p := range s.Rows {
		fmt.Fprintf(&b, "window %d %-10s %-20s", p.Window, p.Family, p.Status)
		if p.SkillID != nil {
			fmt.Fprintf(&b, " %s %q", *p.SkillID, *p.Name)
		}
		if p.Reason != nil {
			fmt.Fprintf(&b, " (%s)", *p.Reason)
		}
		fmt.Fprintf(&b, ", %d evidence episodes\n", len(p.Evidence))
	}
	b.WriteString(skills.Summary(s.Library) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

func newGradeCmd() *cobra.Command {
	var cfgPath, predPath, scoresPath string
	var taskPaths []string
	cmd := &cobra.Command{
		Use:   "grade --tasks FILE... --predictions FILE [--scores FILE]",
		Short: "Score a JSONL of {task_id, output} with the benchmark graders and print per-benchmark metrics",
		Long: `Score predictions with the graders of the reference release (exact match with F1 for QA,
option letters, AIME integers, MATH-Hard equivalence, MBPP+ pass@1 in the python sandbox) and
print one row per benchmark: the number of predictions, the metric (EM, accuracy or pass@1) and,
for QA, the mean F1.

--tasks takes task files in the reference's JSONL row schema (or a run's tasks/*.arrow);
--predictions is a JSONL file of {"task_id": ..., "output": ...}, one line per sample (a task may
have several). --scores writes one JSON line per prediction with the reward, F1, what the grader
read and the grader's name and version; it is refused when it is one of the input files (a link
to one counts). The python sandbox is configured by tools.python of --config (MBPP+ hidden tests
import numpy).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			inputs := []pathFlag{{"--predictions", predPath}, {"--config", cfgPath}}
			for _, p := range taskPaths {
				inputs = append(inputs, pathFlag{"--tasks", p})
			}
			if err := refuseOverwrite("grade", []pathFlag{{"--scores", scoresPath}}, inputs); err != nil {
				return err
			}
			cfg, err := loadConfig(cfgPath)
			if err != nil {
				return err
			}
			byID, err := tasks.LoadFiles(taskPaths)
			if err != nil {
				return err
			}
			preds, err := tasks.ReadPredictions(predPath, byID)
			if err != nil {
				return err
			}
			var g *tasks.Graders
			if slices.ContainsFunc(preds, func(p tasks.Prediction) bool {
				f, _ := tasks.FamilyOf(byID[p.TaskID].Family)
				return f.Grading == tasks.KindCode
			}) {
				sb, err := openai.NewSandbox(cfg.Tools.Python)
				if err != nil {
					return err
				}
				g = tasks.NewGraders(sb)
			} else {
				g = tasks.NewGraders(nil)
			}
			scores, err := gradeAll(cmd, g, byID, preds, cfg.Tools.Python.Concurrency)
			if err != nil {
				return err
			}
			if scoresPath != "" {
				if err := tasks.WriteScores(scoresPath, preds, byID, scores); err != nil {
					return err
				}
			}
			printMetrics(cmd.OutOrStdout(), preds, byID, scores)
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file overlaid on the built-in pipeline.yaml (tools.python)")
	cmd.Flags().StringSliceVar(&taskPaths, "tasks", nil, "task files (.jsonl in the reference row schema, or .arrow); repeat or comma-separate")
	cmd.Flags().StringVar(&predPath, "predictions", "", "JSONL of {task_id, output}")
	cmd.Flags().StringVar(&scoresPath, "scores", "", "write per-prediction scores as JSONL here")
	cmd.MarkFlagRequired("tasks")
	cmd.MarkFlagRequired("predictions")
	return cmd
}

// gradeAll grades every prediction on a bounded pool; scores keep the predictions' order.
func gradeAll(cmd *cobra.Command, g *tasks.Graders, byID map[string]tasks.Task, preds []tasks.Prediction, workers int) ([]tasks.Score, error) {
	scores := make([]tasks.Score, len(preds))
	errs := make([]error, len(preds))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(workers, runtime.NumCPU())) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				scores[i], errs[i] = g.Grade(cmd.Context(), byID[preds[i].TaskID], preds[i].Output)
			}
		}()
	}
	for i := range preds {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("predictions line %d: %w", preds[i].Line, err)
		}
	}
	return scores, nil
}

// metricName is what a grading kind's mean reward is called.
var metricName = map[string]string{tasks.KindQA: "EM", tasks.KindChoice: "accuracy", tasks.KindInteger: "accuracy",
	tasks.KindMath: "accuracy", tasks.KindCode: "pass@1"}

func printMetrics(w io.Writer, preds []tasks.Prediction, byID map[string]tasks.Task, scores []tasks.Score) {
	type agg struct {
		n            int
		reward, f1   float64
		grader, kind string
		hasF1        bool
	}
	per := map[string]*agg{}
	for i, p := range preds {
		fam := byID[p.TaskID].Family
		a := per[fam]
		if a == nil {
			f, _ := tasks.FamilyOf(fam)
			a = &agg{grader: scores[i].Grader, kind: f.Grading}
			per[fam] = a
		}
		a.n++
		a.reward += scores[i].Reward
		if scores[i].F1 != nil {
			a.f1 += *scores[i].F1
			a.hasF1 = true
		}
	}
	names := make([]string, 0, len(per))
	for f := range per {
		names = append(names, f)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tn\tmetric\tscore\tF1\tgrader")
	for _, f := range names {
		a := per[f]
		f1 := "-"
		if a.hasF1 {
			f1 = fmt.Sprintf("%.4f", a.f1/float64(a.n))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.4f\t%s\t%s\n", f, a.n, metricName[a.kind], a.reward/float64(a.n), f1, a.grader)
	}
	tw.Flush()
}

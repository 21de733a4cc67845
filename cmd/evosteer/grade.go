package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
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
read and the grader's name and version. The python sandbox is configured by tools.python of
--config (MBPP+ hidden tests import numpy).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cfgPath)
			if err != nil {
				return err
			}
			byID, err := tasks.LoadFiles(taskPaths)
			if err != nil {
				return err
			}
			preds, err := readPredictions(predPath, byID)
			if err != nil {
				return err
			}
			var g *tasks.Graders
			if slices.ContainsFunc(preds, func(p prediction) bool {
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
				if err := writeScores(scoresPath, preds, byID, scores); err != nil {
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

type prediction struct {
	TaskID string `json:"task_id"`
	Output string `json:"output"`
	line   int
}

func readPredictions(path string, byID map[string]tasks.Task) ([]prediction, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read predictions: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var out []prediction
	for n := 1; ; n++ {
		line, err := readLine(br, maxPredictionLine)
		if errors.Is(err, errLongLine) {
			return nil, fmt.Errorf("read %s: line %d: longer than %d MiB; an output is a model's reply, which the server caps far below this", path, n, maxPredictionLine>>20)
		}
		if len(strings.TrimSpace(string(line))) > 0 {
			var p struct {
				TaskID *string `json:"task_id"`
				Output *string `json:"output"`
			}
			if jerr := json.Unmarshal(line, &p); jerr != nil {
				return nil, fmt.Errorf("read %s: line %d: not a JSON object: %w", path, n, jerr)
			}
			switch {
			case p.TaskID == nil:
				return nil, fmt.Errorf("read %s: line %d: field \"task_id\": missing", path, n)
			case p.Output == nil:
				return nil, fmt.Errorf("read %s: line %d: field \"output\": missing (want a string)", path, n)
			}
			if _, ok := byID[*p.TaskID]; !ok {
				return nil, fmt.Errorf("read %s: line %d: field \"task_id\": %q is in none of the task files", path, n, *p.TaskID)
			}
			out = append(out, prediction{TaskID: *p.TaskID, Output: *p.Output, line: n})
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// maxPredictionLine bounds one line of a predictions file, so that a damaged file cannot make
// grade hold it whole in memory.
const maxPredictionLine = 16 << 20

var errLongLine = errors.New("line too long")

// readLine reads through the next '\n' (or to the end), refusing a line longer than max bytes
// without reading the rest of it.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > max {
			return nil, errLongLine
		}
		line = append(line, part...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// gradeAll grades every prediction on a bounded pool; scores keep the predictions' order.
func gradeAll(cmd *cobra.Command, g *tasks.Graders, byID map[string]tasks.Task, preds []prediction, workers int) ([]tasks.Score, error) {
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
			return nil, fmt.Errorf("predictions line %d: %w", preds[i].line, err)
		}
	}
	return scores, nil
}

func writeScores(path string, preds []prediction, byID map[string]tasks.Task, scores []tasks.Score) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i, p := range preds {
		row := struct {
			TaskID string `json:"task_id"`
			Family string `json:"family"`
			tasks.Score
		}{p.TaskID, byID[p.TaskID].Family, scores[i]}
		if err := enc.Encode(row); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// metricName is what a grading kind's mean reward is called.
var metricName = map[string]string{tasks.KindQA: "EM", tasks.KindChoice: "accuracy", tasks.KindInteger: "accuracy",
	tasks.KindMath: "accuracy", tasks.KindCode: "pass@1"}

func printMetrics(w io.Writer, preds []prediction, byID map[string]tasks.Task, scores []tasks.Score) {
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

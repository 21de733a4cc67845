package tasks

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Prediction is one line of a predictions file: a task's output to grade, and its line number.
type Prediction struct {
	TaskID string `json:"task_id"`
	Output string `json:"output"`
	Line   int    `json:"-"`
}

// ReadPredictions reads a JSONL file of {task_id, output}: every task must be in byID, every line
// at most MaxPredictionLine bytes; errors name the file, the line and the field.
func ReadPredictions(path string, byID map[string]Task) ([]Prediction, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read predictions: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var out []Prediction
	for n := 1; ; n++ {
		line, err := readLine(br, MaxPredictionLine)
		if errors.Is(err, errLongLine) {
			return nil, fmt.Errorf("read %s: line %d: longer than %d MiB; an output is a model's reply, which the server caps far below this", path, n, MaxPredictionLine>>20)
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
			out = append(out, Prediction{TaskID: *p.TaskID, Output: *p.Output, Line: n})
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// MaxPredictionLine bounds one line of a predictions file, so that a damaged file cannot make
// grading hold it whole in memory.
const MaxPredictionLine = 16 << 20

// WriteScores writes each prediction's score as a JSONL row {task_id, family, score fields}.
func WriteScores(path string, preds []Prediction, byID map[string]Task, scores []Score) error {
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
			Score
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

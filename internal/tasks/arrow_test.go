package tasks

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/evosteer/evosteer-go/schema"
)

func TestTasksFileRoundTrip(t *testing.T) {
	rate := 0.25
	in := []Task{
		{ID: "medqa/test-1", Family: "medqa", TaskType: "medqa", Split: "test", SourceID: "1", Origin: "o",
			Prompt: "Q?", Answers: []string{"B"}, Options: []string{"A", "B", "C", "D"}, PriorRate: &rate, PriorCount: 30},
		{ID: "mbpp_plus/2", Family: "mbpp_plus", TaskType: "mbpp_plus", Split: "train", Prompt: "def f",
			Answers: []string{}, Options: []string{}, Extra: map[string]json.RawMessage{"test_list": json.RawMessage(`["assert f()==1"]`)}},
	}
	path := filepath.Join(t.TempDir(), "train.arrow")
	if err := WriteFile(path, schema.Lineage{Run: "r", Stage: "init", ConfigSHA256: "c"}, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n%+v\n%+v", in, out)
	}
}

package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// chatServer is an OpenAI-compatible server on loopback that serves the models named and
// answers every chat completion with one token.
func chatServer(t *testing.T, models ...string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		data := []map[string]string{}
		for _, m := range models {
			data = append(data, map[string]string{"id": m, "object": "model"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.MaxTokens != 1 {
			http.Error(w, `{"error": {"message": "want max_tokens 1"}}`, http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"choices": [{"message": {"content": "OK"}, "finish_reason": "length"}], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// searchServer is a retrieval service with the /retrieve contract.
func searchServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/retrieve" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"result": [[{"id": 1, "title": "T", "text": "a passage", "score": 2.0}]]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// closedURL is a loopback URL where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// openAIConfig is the default configuration with the openai executor at base and the families
// given (no OOD family).
func openAIConfig(t *testing.T, base string, families ...string) *config.Config {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Executor.Backend = "openai"
	cfg.Executor.OpenAI.BaseURL, cfg.Executor.OpenAI.Model, cfg.Executor.OpenAI.APIKeyEnv = base+"/v1", "qwen-exec", ""
	cfg.Families, cfg.OODFamilies = families, map[string]string{}
	return cfg
}

// runTimed runs the doctor and checks that it ended well within the loose bound.
func runTimed(t *testing.T, cfg *config.Config, opt Options) []Line {
	t.Helper()
	began := time.Now()
	lines := Run(context.Background(), cfg, opt)
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("the doctor took %v, past its %v deadline", d, Deadline)
	}
	for _, l := range lines {
		t.Log(l)
		if strings.Contains(l.Text, "\n") {
			t.Errorf("a line holds a newline: %q", l.Text)
		}
	}
	return lines
}

// failing returns the failed line of check, failing the test unless there is exactly one.
func failing(t *testing.T, lines []Line, check string) Line {
	t.Helper()
	var got []Line
	for _, l := range lines {
		if l.Check == check && !l.OK {
			got = append(got, l)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d failed %s lines, want 1: %v", len(got), check, lines)
	}
	return got[0]
}

func wantIn(t *testing.T, l Line, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(l.String(), p) {
			t.Errorf("line %q lacks %q", l, p)
		}
	}
}

// The simulated default has nothing remote: no check runs, nothing is printed but Nothing.
func TestSimulatedDefaultHasNothingRemote(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	if Remote(cfg) {
		t.Fatal("the default configuration counts as remote")
	}
	if lines := Run(context.Background(), cfg, Options{}); len(lines) != 0 {
		t.Fatalf("lines for the simulated default: %v", lines)
	}
}

// Everything right: the executor's server, the served reference (the fake SGLang engine), the
// model author and the search service each pass with one ok line, and nothing fails.
func TestEverythingRightPasses(t *testing.T) {
	chat := chatServer(t, "other", "qwen-exec")
	served := httptest.NewServer(fakeengine.NewSGLang(fakeengine.Model{Name: "fake/qwen"}, fakeengine.SGLangOptions{}))
	t.Cleanup(served.Close)
	cfg := openAIConfig(t, chat.URL, "hotpotqa", "nq_open", "medqa")
	cfg.Tools.Search.URL = searchServer(t).URL
	cfg.Served = &config.ServedReference{Dialect: "sglang", BaseURL: served.URL, Model: "fake/qwen", Template: "qwen3",
		MaxConcurrency: 4, TimeoutSeconds: 30, OutageSeconds: 600, CacheDecisions: 64, DriftTolerance: 0.1}
	cfg.Author.Backend, cfg.Author.BaseURL, cfg.Author.Model = "openai", chat.URL+"/v1", "other"
	lines := runTimed(t, cfg, Options{})
	if n := Failed(lines); n != 0 {
		t.Fatalf("%d failed: %v", n, lines)
	}
	for _, c := range []string{"executor.openai", "served_reference", "author", "search", "families"} {
		found := false
		for _, l := range lines {
			found = found || l.Check == c && l.OK
		}
		if !found {
			t.Errorf("no ok line of %s: %v", c, lines)
		}
	}
}

// A server that is down (a closed port) is one line naming the URL and the fix, fast: one
// attempt, no outage tolerance waited out.
func TestServerDownIsOneLineWithTheFix(t *testing.T) {
	down := closedURL(t)
	cfg := openAIConfig(t, down, "hotpotqa")
	cfg.Author.Backend, cfg.Author.BaseURL, cfg.Author.Model = "openai", down+"/v1", "a"
	lines := runTimed(t, cfg, Options{})
	wantIn(t, failing(t, lines, "executor.openai"), "FAIL executor.openai: "+down+"/v1 does not answer", "set executor.openai.base_url")
	wantIn(t, failing(t, lines, "author"), down+"/v1", "set author.base_url")
}

// Every replica of the executor is checked: one that is down is one line naming its key, while
// the base URL that answers passes.
func TestAReplicaDownIsOneLine(t *testing.T) {
	up, down := chatServer(t, "qwen-exec"), closedURL(t)
	cfg := openAIConfig(t, up.URL, "hotpotqa")
	cfg.Executor.OpenAI.Replicas = []string{down + "/v1"}
	lines := runTimed(t, cfg, Options{})
	wantIn(t, failing(t, lines, "executor.openai"), down+"/v1 does not answer", "set executor.openai.replicas[0]")
	if !slices.ContainsFunc(lines, func(l Line) bool { return l.OK && strings.Contains(l.Text, up.URL+"/v1 serves") }) {
		t.Fatalf("the base URL's check did not pass: %v", lines)
	}
}

// A served reference that is down is reported through its own preflight.
func TestServedReferenceDownIsOneLine(t *testing.T) {
	down := closedURL(t)
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Served = &config.ServedReference{Dialect: "vllm", BaseURL: down, Model: "m", Template: "qwen3",
		MaxConcurrency: 4, TimeoutSeconds: 30, OutageSeconds: 600, CacheDecisions: 64, DriftTolerance: 0.1}
	if !Remote(cfg) {
		t.Fatal("a served reference is not remote")
	}
	lines := runTimed(t, cfg, Options{})
	if len(lines) != 1 {
		t.Fatalf("lines %v, want the served reference's only (the simulated executor needs no other check)", lines)
	}
	wantIn(t, failing(t, lines, "served_reference"), down, "set served_reference.base_url")
}

// A server that does not serve the configured model names what it serves and the setting.
func TestWrongModelNamesWhatIsServed(t *testing.T) {
	srv := chatServer(t, "a", "b")
	lines := runTimed(t, openAIConfig(t, srv.URL, "hotpotqa"), Options{})
	wantIn(t, failing(t, lines, "executor.openai"),
		srv.URL+`/v1 does not serve model "qwen-exec" (it serves "a", "b"): set executor.openai.model`)
}

// An API key the server echoes in its refusal is never printed.
func TestAPIKeyNeverPrinted(t *testing.T) {
	const key = "sk-doctor-0123456789abcdef"
	t.Setenv("DOCTOR_TEST_KEY", key)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error": {"message": "bad key %s"}}`, r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	cfg := openAIConfig(t, srv.URL, "hotpotqa")
	cfg.Executor.OpenAI.APIKeyEnv = "DOCTOR_TEST_KEY"
	lines := runTimed(t, cfg, Options{})
	l := failing(t, lines, "executor.openai")
	wantIn(t, l, "HTTP 401", "check the key in $DOCTOR_TEST_KEY")
	for _, l := range lines {
		if strings.Contains(l.String(), key[:10]) {
			t.Errorf("the key is printed: %q", l)
		}
	}
	cfg.Executor.OpenAI.APIKeyEnv = "DOCTOR_TEST_UNSET_KEY"
	wantIn(t, failing(t, runTimed(t, cfg, Options{}), "executor.openai"), "DOCTOR_TEST_UNSET_KEY is not set", "executor.openai.api_key_env")
}

// fakeInterpreter is a "python" that passes the sandbox's interpreter probe and fails every
// program as an interpreter without numpy would; it needs only /bin/sh, so the test does not
// depend on whether the machine's python has numpy. Its folder is readable by every user, since
// as root the sandbox runs it as nobody.
func fakeInterpreter(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "doctor-python-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "python3")
	script := "#!/bin/sh\ncase \"$*\" in\n*sys.version_info*) echo \"3 $(id -u)\"; exit 0;;\nesac\n" +
		"echo \"ModuleNotFoundError: No module named 'numpy'\" >&2\nexit 1\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// An interpreter without numpy fails the sandbox check of a family graded in it (MBPP+), naming
// the interpreter and the fix.
func TestInterpreterWithoutNumpy(t *testing.T) {
	cfg := openAIConfig(t, chatServer(t, "qwen-exec").URL, "mbpp_plus")
	cfg.Tools.Python.Interpreter = fakeInterpreter(t)
	lines := runTimed(t, cfg, Options{})
	wantIn(t, failing(t, lines, "sandbox"), cfg.Tools.Python.Interpreter, "cannot import numpy", "mbpp_plus", "No module named 'numpy'",
		"install numpy", "set tools.python.interpreter")
	if n := Failed(lines); n != 1 {
		t.Errorf("%d failed, want the sandbox's only: %v", n, lines)
	}
}

// An interpreter that does not exist fails the sandbox check, naming the setting.
func TestInterpreterMissing(t *testing.T) {
	cfg := openAIConfig(t, chatServer(t, "qwen-exec").URL, "aime_2026")
	cfg.Tools.Python.Interpreter = filepath.Join(t.TempDir(), "no-python")
	wantIn(t, failing(t, runTimed(t, cfg, Options{}), "sandbox"), "no-python", "cannot run the python sandbox", "set tools.python.interpreter")
}

// A family offered search with no retrieval service and no passages in its tasks is reported;
// one whose tasks ship passages is not.
func TestSearchFamilyWithoutService(t *testing.T) {
	cfg := openAIConfig(t, chatServer(t, "qwen-exec").URL, "hotpotqa", "nq_open")
	lines := runTimed(t, cfg, Options{})
	wantIn(t, failing(t, lines, "search"), "family nq_open offers search", "tools.search.url is unset", "set tools.search.url")

	// With task records, passages are read from them: hotpotqa tasks without passages fail too.
	ts := []tasks.Task{{ID: "hotpotqa/1", Family: "hotpotqa", TaskType: "hotpotqa", Prompt: "Q?\nPassages:\n[A] text"},
		{ID: "hotpotqa/2", Family: "hotpotqa", TaskType: "hotpotqa", Prompt: "Q? no passages"}}
	l := failing(t, runTimed(t, cfg, Options{Tasks: ts}), "search")
	wantIn(t, l, "family hotpotqa", "1 of its 2 tasks ship no passages")

	// A service that is down is one line naming it.
	cfg.Tools.Search.URL = closedURL(t)
	wantIn(t, failing(t, runTimed(t, cfg, Options{}), "search"), cfg.Tools.Search.URL+" does not answer POST /retrieve", "hotpotqa, nq_open", "set tools.search.url")
}

// A family without a harness in this build (ALFWorld, WebShop, SWE-bench Verified) is reported
// for the openai executor, IID and OOD, each with its fix; the simulated executor passes them.
func TestEnvironmentFamilyWithoutHarness(t *testing.T) {
	cfg := openAIConfig(t, chatServer(t, "qwen-exec").URL, "hotpotqa", "alfworld")
	cfg.OODFamilies = map[string]string{"webshop": "alfworld"}
	lines := runTimed(t, cfg, Options{})
	var bad []string
	for _, l := range lines {
		if l.Check == "families" && !l.OK {
			bad = append(bad, l.String())
		}
	}
	if len(bad) != 2 || !strings.Contains(bad[0], "alfworld has no environment harness") || !strings.Contains(bad[0], "remove alfworld from families") ||
		!strings.Contains(bad[1], "webshop") || !strings.Contains(bad[1], "remove webshop from ood_families") {
		t.Errorf("failed families lines %q", bad)
	}
	cfg.Executor.Backend = "sim"
	if Remote(cfg) {
		t.Error("the simulated executor counts as remote")
	}
}

// A server that accepts and never answers is cut by the deadline: the doctor returns with the
// check failed, well before the server would give up.
func TestHangingServerIsCutByTheDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	cfg := openAIConfig(t, srv.URL, "hotpotqa")
	cfg.Executor.OpenAI.TimeoutSeconds = 600
	l := failing(t, runTimed(t, cfg, Options{Deadline: 2 * time.Second}), "executor.openai")
	wantIn(t, l, srv.URL)
}

// A check that ignores its context still ends the doctor by the deadline, as a timed-out line
// with its fix; the checks that finished keep their lines.
func TestDeadlineEndsACheckThatIgnoresItsContext(t *testing.T) {
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	checks := []check{
		{name: "stuck", run: func(context.Context) []Line { <-stuck; return nil }, slow: "the fix"},
		{name: "quick", run: func(context.Context) []Line { return []Line{{Check: "quick", OK: true, Text: "fine"}} }},
	}
	began := time.Now()
	lines := run(context.Background(), checks, time.Second)
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("run took %v", d)
	}
	if len(lines) != 2 || lines[0].OK || lines[0].String() != "FAIL stuck: did not finish within 1s: the fix" || !lines[1].OK {
		t.Errorf("lines %v", lines)
	}
}

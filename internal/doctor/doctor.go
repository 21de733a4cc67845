package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/executor/search"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/sandbox"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// Deadline is the longest a doctor runs: a check that has not ended by then is reported as
// timed out.
const Deadline = 15 * time.Second

// margin is how long before the deadline every check's context ends, so that a check cut by it
// still reports its own error (which request, which URL) before the deadline.
const margin = time.Second

// requestTimeout bounds one HTTP attempt of a check (the configured timeout where shorter). A
// check makes one attempt of each request: it answers whether the stack is up now, and never
// waits out an outage.
const requestTimeout = 5 * time.Second

// Line is the outcome of one check: one line of text.
type Line struct {
	Check string // what was checked: executor.openai, served_reference, author, sandbox, search, families
	OK    bool
	Text  string // what passed; or what failed, where, and the fix
}

// String is the line as printed: "ok   CHECK: TEXT" or "FAIL CHECK: TEXT".
func (l Line) String() string {
	status := "ok  "
	if !l.OK {
		status = "FAIL"
	}
	return status + " " + l.Check + ": " + l.Text
}

// Failed counts the failed lines.
func Failed(lines []Line) int {
	n := 0
	for _, l := range lines {
		if !l.OK {
			n++
		}
	}
	return n
}

// Options are what a doctor knows beyond the configuration.
type Options struct {
	// Tasks are the run's task records where known (init --tasks, an existing run): the families
	// checked are theirs, and a family's passages are read from them. Nil: every configured
	// family (IID and OOD), each as the release ships it.
	Tasks []tasks.Task
	// Deadline replaces Deadline when positive (tests).
	Deadline time.Duration
}

// Nothing is what a doctor says of a configuration with nothing remote to check.
const Nothing = "nothing remote to check: executor.backend is sim, served_reference is unset and the author calls no model (author.backend sim, or skill evolution ablated); the simulated world needs no server"

// Remote reports whether cfg uses something a doctor checks: the openai executor, a served
// reference, or a model author.
func Remote(cfg *config.Config) bool {
	return cfg.Executor.Backend == "openai" || cfg.Served != nil || authorCalls(cfg)
}

// authorCalls reports whether the skill author calls a model: author.backend openai, with skill
// evolution on (stages/author proposes nothing when it is ablated).
func authorCalls(cfg *config.Config) bool {
	return cfg.Author.Backend == "openai" && !cfg.Ablated("skill-evolution")
}

// check is one check: it returns its lines; slow is its line when it does not end in time.
type check struct {
	name string
	run  func(ctx context.Context) []Line
	slow string
}

// Run runs every check cfg calls for, concurrently, and returns their lines in a fixed order
// (executor.openai, served_reference, author, sandbox, search, families). It returns by the
// deadline: a check still running then is one timed-out line. With nothing remote it returns
// no line (see Nothing).
func Run(ctx context.Context, cfg *config.Config, opt Options) []Line {
	deadline := opt.Deadline
	if deadline <= 0 {
		deadline = Deadline
	}
	return run(ctx, plan(cfg, opt), deadline)
}

// run runs the checks concurrently and returns by the deadline.
func run(ctx context.Context, checks []check, deadline time.Duration) []Line {
	if len(checks) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, max(deadline-margin, deadline/2))
	defer cancel()
	results := make([][]Line, len(checks))
	done := make(chan int, len(checks))
	for i, c := range checks {
		go func() {
			results[i] = c.run(cctx)
			done <- i
		}()
	}
	finished := make([]bool, len(checks))
	hard := time.NewTimer(deadline)
	defer hard.Stop()
wait:
	for range checks {
		select {
		case i := <-done:
			finished[i] = true
		case <-hard.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	var out []Line
	for i, c := range checks {
		if !finished[i] {
			out = append(out, Line{Check: c.name, Text: fmt.Sprintf("did not finish within %v: %s", deadline, c.slow)})
			continue
		}
		out = append(out, results[i]...)
	}
	return out
}

// plan lists the checks of cfg.
func plan(cfg *config.Config, opt Options) []check {
	var checks []check
	openAI := cfg.Executor.Backend == "openai"
	fams := families(cfg, opt)
	if openAI {
		o := cfg.Executor.OpenAI
		// Every replica is checked as the base URL is: a request may go to any of them.
		for i, url := range append([]string{o.BaseURL}, o.Replicas...) {
			e := endpoint{setting: "executor.openai", baseURL: url, urlKey: "executor.openai.base_url", model: o.Model, keyEnv: o.APIKeyEnv,
				keyRequired: true, timeout: o.TimeoutSeconds, disableThinking: o.DisableThinking}
			if i > 0 {
				e.urlKey = fmt.Sprintf("executor.openai.replicas[%d]", i-1)
			}
			checks = append(checks, check{name: e.setting, run: e.check, slow: e.slow()})
		}
	}
	if sr := cfg.Served; sr != nil {
		checks = append(checks, check{name: "served_reference", run: func(ctx context.Context) []Line { return servedCheck(ctx, sr) },
			slow: fmt.Sprintf("the server at %s did not answer its preflight: check that it is up and not overloaded (served_reference.base_url)", sr.BaseURL)})
	}
	if authorCalls(cfg) {
		a := cfg.Author
		e := endpoint{setting: "author", baseURL: a.BaseURL, urlKey: "author.base_url", model: a.Model, keyEnv: a.APIKeyEnv, timeout: float64(a.TimeoutSeconds)}
		checks = append(checks, check{name: e.setting, run: e.check, slow: e.slow()})
	}
	if !openAI {
		return checks // the simulated executor grades, searches and runs no python
	}
	if c, ok := sandboxCheck(cfg.Tools.Python, fams); ok {
		checks = append(checks, c)
	}
	if c, ok := searchCheck(cfg.Tools.Search, fams); ok {
		checks = append(checks, c)
	}
	checks = append(checks, check{name: "families", run: func(context.Context) []Line { return familiesCheck(fams, opt.Tasks != nil) },
		slow: "reading the families took too long"})
	return checks
}

// family is one family checked: its benchmark, how it is configured, and what its tasks ship.
type family struct {
	tasks.Family
	ood       bool // configured in ood_families
	tasks     int  // its task records (when known)
	noPassage int  // of them, those that ship no passages
}

// families are the families checked, in the configuration's order (IID, then OOD sorted); with
// task records, only those that have tasks.
func families(cfg *config.Config, opt Options) []family {
	var out []family
	add := func(name string, ood bool) {
		f, ok := tasks.FamilyOf(name)
		if !ok {
			return // the configuration's own validation names an unknown family
		}
		out = append(out, family{Family: f, ood: ood})
	}
	for _, f := range cfg.Families {
		add(f, false)
	}
	var ood []string
	for f := range cfg.OODFamilies {
		ood = append(ood, f)
	}
	slices.Sort(ood)
	for _, f := range ood {
		add(f, true)
	}
	if opt.Tasks == nil {
		return out
	}
	count := map[string]*family{}
	for i := range out {
		count[out[i].Name] = &out[i]
	}
	for _, t := range opt.Tasks {
		if f := count[t.Family]; f != nil {
			f.tasks++
			if len(search.ParsePassages(t.Prompt)) == 0 {
				f.noPassage++
			}
		}
	}
	return slices.DeleteFunc(out, func(f family) bool { return f.tasks == 0 })
}

// ---- model endpoints ----

// endpoint is a Chat Completions endpoint of the configuration.
type endpoint struct {
	setting                string // the configuration block: executor.openai or author
	baseURL, model, keyEnv string
	urlKey                 string  // the key that sets baseURL: the block's base_url, or one of its replicas
	keyRequired            bool    // an unset key variable is an error (the executor), not "no key" (the author)
	timeout                float64 // the configured timeout of one attempt, seconds
	disableThinking        bool
}

func (e endpoint) slow() string {
	return fmt.Sprintf("%s did not answer: check that the server is up and not overloaded (%s)", e.baseURL, e.urlKey)
}

// client is a client of the endpoint for a check: one attempt a request, a short timeout.
func (e endpoint) client() (*openai.Client, error) {
	key := ""
	if e.keyRequired {
		var err error
		if key, err = openai.APIKeyFromEnv(e.keyEnv); err != nil {
			return nil, fmt.Errorf("the API key variable %s is not set: export it, or set %s.api_key_env (\"\" for none)", e.keyEnv, e.setting)
		}
	} else if e.keyEnv != "" {
		key = os.Getenv(e.keyEnv) // unset sends no key, as the author does
	}
	timeout := requestTimeout
	if t := time.Duration(e.timeout * float64(time.Second)); t > 0 && t < timeout {
		timeout = t
	}
	return openai.NewClient(openai.ClientConfig{BaseURL: e.baseURL, Model: e.model, APIKey: key, MaxConcurrency: 1,
		Timeout: timeout, Outage: 0, BackoffInitial: time.Second, BackoffMax: time.Second, MaxAttempts: 1,
		DisableThinking: e.disableThinking, BaseURLSetting: e.urlKey})
}

// check asks the endpoint for its models list, which must name the model, and for a one-token
// chat completion.
func (e endpoint) check(ctx context.Context) []Line {
	fail := func(format string, args ...any) []Line {
		return []Line{{Check: e.setting, Text: oneLine(fmt.Sprintf(format, args...))}}
	}
	c, err := e.client()
	if err != nil {
		return fail("%v", err)
	}
	began := time.Now()
	models, err := c.Models(ctx)
	if err != nil {
		return fail("%s does not answer GET /models (%s): %s", e.baseURL, cause(err), e.fix(err))
	}
	if !slices.Contains(models, e.model) {
		return fail("%s does not serve model %q (it serves %s): set %s.model", e.baseURL, e.model, quoted(models), e.setting)
	}
	resp, err := c.Chat(ctx, openai.ChatRequest{Messages: []openai.Message{{Role: "user", Content: "Reply with OK."}}, MaxTokens: 1})
	if err != nil {
		return fail("%s lists model %q but refused a one-token chat completion (%s): %s", e.baseURL, e.model, cause(err), e.fix(err))
	}
	return []Line{{Check: e.setting, OK: true, Text: oneLine(fmt.Sprintf("%s serves %q and answered a one-token chat completion (finish_reason %q) in %v",
		e.baseURL, e.model, resp.FinishReason, time.Since(began).Round(time.Millisecond)))}}
}

// fix is what to do about a failed request.
func (e endpoint) fix(err error) string {
	var he *openai.HTTPError
	switch {
	case errors.As(err, &he) && (he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden):
		if e.keyEnv == "" {
			return fmt.Sprintf("the server wants an API key: set %s.api_key_env to the variable that holds it", e.setting)
		}
		return fmt.Sprintf("check the key in $%s (%s.api_key_env)", e.keyEnv, e.setting)
	case errors.As(err, &he) && he.Status == http.StatusNotFound, errors.Is(err, openai.ErrMalformed):
		return fmt.Sprintf("set %s to the server's OpenAI API root (e.g. http://HOST:8000/v1)", e.urlKey)
	case errors.As(err, &he) && he.Status < 500:
		return fmt.Sprintf("check that the server serves chat completions for %s.model (a model without a chat template cannot)", e.setting)
	case errors.Is(err, openai.ErrRedirect):
		return fmt.Sprintf("set %s to the endpoint itself", e.urlKey)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("the server did not answer in time: check that it is up and not overloaded (%s)", e.urlKey)
	}
	return fmt.Sprintf("start the server, or set %s to where it listens", e.urlKey)
}

// ---- the served reference ----

// servedCheck is the served reference's own preflight (scoring.FromConfig, within
// scoring.PreflightTimeout), with one attempt a request and a short timeout.
func servedCheck(ctx context.Context, sr *config.ServedReference) []Line {
	s := *sr
	s.OutageSeconds = 0
	if s.TimeoutSeconds <= 0 || s.TimeoutSeconds > requestTimeout.Seconds() {
		s.TimeoutSeconds = requestTimeout.Seconds()
	}
	began := time.Now()
	if _, err := scoring.FromConfig(ctx, &s); err != nil {
		msg := servedPrefix.ReplaceAllString(cause(err), "")
		return []Line{{Check: "served_reference", Text: msg + ": start the server, or set served_reference.base_url, dialect and model to what it serves (docs/SERVED-REFERENCE.md)"}}
	}
	return []Line{{Check: "served_reference", OK: true, Text: fmt.Sprintf("%s (%s) serves %q, scores prompt log-probabilities and passed its preflight in %v",
		sr.BaseURL, sr.Dialect, sr.Model, time.Since(began).Round(time.Millisecond))}}
}

// ---- the python sandbox ----

// numpyProgram is what the sandbox check runs: MBPP+ hidden tests import numpy.
const numpyProgram = "import numpy\nprint(numpy.__version__)\n"

// sandboxCheck checks the python sandbox when a family is graded in it (numpy too) or offers
// the python tool to its roles.
func sandboxCheck(p config.PythonTool, fams []family) (check, bool) {
	var code, tool []string
	for _, f := range fams {
		switch {
		case f.Grading == tasks.KindCode:
			code = append(code, f.Name)
		case offers(f, "python"):
			tool = append(tool, f.Name)
		}
	}
	if len(code) == 0 && len(tool) == 0 {
		return check{}, false
	}
	where := fmt.Sprintf("tools.python.interpreter %q", p.Interpreter)
	run := func(ctx context.Context) []Line {
		fail := func(format string, args ...any) []Line {
			return []Line{{Check: "sandbox", Text: oneLine(fmt.Sprintf(format, args...))}}
		}
		sb, err := openai.NewSandbox(p)
		if err != nil {
			return fail("%s cannot run the python sandbox (%s): set tools.python.interpreter to a Python 3 that the sandbox's user can run (e.g. /usr/bin/python3)", where, cause(err))
		}
		uid := sb.Isolation().UID
		if len(code) == 0 {
			return []Line{{Check: "sandbox", OK: true, Text: fmt.Sprintf("%s runs as uid %d (%s), for the python tool of %s", where, uid, sb.Isolation(), strings.Join(tool, ", "))}}
		}
		lim := tasks.CodeLimits(sb.Limits())
		lim.Wall = min(lim.Wall, 10*time.Second)
		res := sb.RunWith(ctx, numpyProgram, lim)
		if res.Status != sandbox.StatusSuccess {
			why := res.Error
			if why == "" {
				why = lastLine(res.Stderr)
			}
			if why == "" {
				why = res.Status
			}
			return fail("%s (run as uid %d) cannot import numpy, which the MBPP+ hidden tests of %s import (%s): install numpy for that interpreter (pip install numpy, or apt-get install python3-numpy), or set tools.python.interpreter to one that has it",
				where, uid, strings.Join(code, ", "), why)
		}
		return []Line{{Check: "sandbox", OK: true, Text: fmt.Sprintf("%s runs as uid %d (%s) and imports numpy %s, for the graders of %s",
			where, uid, sb.Isolation(), lastLine(res.Stdout), strings.Join(code, ", "))}}
	}
	return check{name: "sandbox", run: run, slow: fmt.Sprintf("%s did not start and import numpy in time: check the interpreter", where)}, true
}

// ---- search ----

// offers reports whether some role of the family is offered the tool.
func offers(f family, tool string) bool {
	return slices.ContainsFunc(orchestra.RolesFor(f.Name, f.TaskType), func(r executor.Role) bool { return slices.Contains(r.Tools, tool) })
}

// searchCheck checks the retrieval service when a family offers search and tools.search.url is
// set; without one, every family offered search must ship passages in its tasks (the executor
// searches those with BM25, internal/executor/search/local.go).
func searchCheck(s config.SearchTool, fams []family) (check, bool) {
	var offered []family
	for _, f := range fams {
		if offers(f, "search") {
			offered = append(offered, f)
		}
	}
	if len(offered) == 0 {
		return check{}, false
	}
	names := make([]string, len(offered))
	for i, f := range offered {
		names[i] = f.Name
	}
	if s.URL == "" {
		return check{name: "search", run: func(context.Context) []Line { return localSearch(offered) }, slow: "reading the families took too long"}, true
	}
	run := func(ctx context.Context) []Line {
		timeout := requestTimeout
		if t := time.Duration(s.TimeoutSeconds * float64(time.Second)); t > 0 && t < timeout {
			timeout = t
		}
		c, err := search.NewClient(search.ClientConfig{URL: s.URL, TopK: s.TopK, Timeout: timeout, Retries: 0, Outage: 0, BreakerFailures: 1})
		if err != nil {
			return []Line{{Check: "search", Text: oneLine(fmt.Sprintf("tools.search.url: %v: set it to http(s)://HOST:PORT of the retrieval service", err))}}
		}
		hits, err := c.Search(ctx, "evosteer doctor")
		var qe *search.QueryError
		switch {
		case errors.As(err, &qe):
			return []Line{{Check: "search", OK: true, Text: oneLine(fmt.Sprintf("%s answers POST /retrieve (it refused the test query: %s), for %s", s.URL, qe.Message, strings.Join(names, ", ")))}}
		case err != nil:
			return []Line{{Check: "search", Text: oneLine(fmt.Sprintf("%s does not answer POST /retrieve (%s), which the roles of %s search: start the retrieval service, or set tools.search.url to where it listens",
				s.URL, cause(err), strings.Join(names, ", ")))}}
		}
		return []Line{{Check: "search", OK: true, Text: fmt.Sprintf("%s answered POST /retrieve with %d passage(s), for %s", s.URL, len(hits), strings.Join(names, ", "))}}
	}
	return check{name: "search", run: run, slow: fmt.Sprintf("%s did not answer POST /retrieve: check that the retrieval service is up (tools.search.url)", s.URL)}, true
}

// shipsPassages are the task types whose tasks ship passages in the release (HotpotQA's
// distractor setting; MuSiQue maps to it), for a check without the task records.
var shipsPassages = []string{"hotpotqa"}

// localSearch checks, with no retrieval service, that each family offered search ships passages.
func localSearch(offered []family) []Line {
	var ok []string
	var lines []Line
	for _, f := range offered {
		var missing string
		switch {
		case f.tasks > 0 && f.noPassage > 0:
			missing = fmt.Sprintf("%d of its %d tasks ship no passages", f.noPassage, f.tasks)
		case f.tasks == 0 && !slices.Contains(shipsPassages, f.TaskType):
			missing = "its tasks ship no passages"
		}
		if missing == "" {
			ok = append(ok, f.Name)
			continue
		}
		var roles []string
		for _, r := range orchestra.RolesFor(f.Name, f.TaskType) {
			if slices.Contains(r.Tools, "search") {
				roles = append(roles, r.ID)
			}
		}
		lines = append(lines, Line{Check: "search", Text: fmt.Sprintf("family %s offers search to its roles (%s), but tools.search.url is unset and %s: set tools.search.url to a retrieval service with the /retrieve contract",
			f.Name, strings.Join(roles, ", "), missing)})
	}
	if len(ok) > 0 {
		lines = append(lines, Line{Check: "search", OK: true, Text: fmt.Sprintf("%s search the passages their tasks ship (tools.search.url unset)", strings.Join(ok, ", "))})
	}
	return lines
}

// ---- families ----

// familiesCheck reports every family with no grader or harness in this build.
func familiesCheck(fams []family, fromTasks bool) []Line {
	var lines []Line
	var graded []string
	for _, f := range fams {
		if f.Grading != tasks.KindEnvironment {
			graded = append(graded, f.Name)
			continue
		}
		fix := fmt.Sprintf("remove %s from families", f.Name)
		switch {
		case fromTasks:
			fix = fmt.Sprintf("leave its %d task(s) out of the task files", f.tasks)
		case f.ood:
			fix = fmt.Sprintf("remove %s from ood_families", f.Name)
		}
		lines = append(lines, Line{Check: "families", Text: fmt.Sprintf("%s has no environment harness in this build (ALFWorld, WebShop and SWE-bench Verified need their own), so every episode of it would fail: %s",
			f.Name, fix)})
	}
	if len(graded) > 0 {
		has := " each have a grader"
		if len(graded) == 1 {
			has = " has a grader"
		}
		lines = append(lines, Line{Check: "families", OK: true, Text: strings.Join(graded, ", ") + has})
	}
	if len(fams) == 0 {
		lines = append(lines, Line{Check: "families", OK: true, Text: "no family to check"})
	}
	return lines
}

// ---- text ----

// retried is the client's account of its attempts, which says nothing here (a check makes one).
var retried = regexp.MustCompile(`the server failed for \S+ after \d+ attempts? \(outage tolerance [^)]*\): `)

// servedPrefix is the served reference's name and preflight bound, which the line says already.
var servedPrefix = regexp.MustCompile(`^served_reference( \(within [^)]*\))?: `)

// cause is an error as one line, without the retry account.
func cause(err error) string { return retried.ReplaceAllString(oneLine(err.Error()), "") }

// oneLine collapses a text's whitespace, newlines included, so each outcome is one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// quoted lists names in quotes, at most 8 of them.
func quoted(names []string) string {
	if len(names) == 0 {
		return "no model"
	}
	q := make([]string, 0, min(len(names), 8))
	for _, n := range names[:min(len(names), 8)] {
		q = append(q, fmt.Sprintf("%q", n))
	}
	if len(names) > 8 {
		q = append(q, fmt.Sprintf("and %d more", len(names)-8))
	}
	return strings.Join(q, ", ")
}

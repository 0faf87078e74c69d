package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/internal/fakeapi"
	"github.com/hearth-dev/hearth/plugins/model"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

const testKey = "sk-test-7f3a9c0e21"

var providers = []string{model.ProviderAnthropic, model.ProviderOpenAI}

// workspace lays out a small repository: two packages and a secret.
func workspace(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"pkg/alpha/alpha.go": "package alpha\n\n// Alpha says hello.\nfunc Alpha() string { return \"hello\" }\n",
		"pkg/alpha/util.go":  "package alpha\n\nfunc helper() int { return 42 }\n",
		"pkg/beta/beta.go":   "package beta\n\n// Beta adds.\nfunc Beta(a, b int) int { return a + b }\n",
		"secrets/.env":       "TOKEN=do-not-read\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fake starts the scripted model, caching any prefix (the small prompts
// here are below the providers' 1024-token minimum).
func fake(t testing.TB) *fakeapi.Server {
	t.Helper()
	f := fakeapi.New(testKey)
	f.MinCacheTokens = 0
	t.Cleanup(f.Close)
	return f
}

func settings(f *fakeapi.Server, provider, root string) model.Settings {
	s := model.Settings{
		Provider:  provider,
		Model:     "test-model",
		BaseURL:   f.URL + "/",
		APIKeyEnv: "FAKE_MODEL_KEY",
		APIKey:    testKey,
		Prices:    model.Prices{Input: 3, CachedInput: 0.3, CacheWrite: 3.75, Output: 15},
		Root:      root,
		Tools:     []string{model.ToolRead, model.ToolList, model.ToolSearch},
	}
	if provider == model.ProviderOpenAI {
		s.BaseURL = f.URL + "/v1/"
	}
	return s
}

func harness(t *testing.T, a sdk.Agent, p conformance.Policy) *conformance.Harness {
	return sdktest.New(t, a, conformance.Options{Policy: p})
}

func metric(t *testing.T, r sdk.Result, name string) float64 {
	t.Helper()
	v, ok := r.Metrics[name]
	if !ok {
		t.Fatalf("result has no metric %q: %v", name, r.Metrics)
	}
	return v
}

func forEachProvider(t *testing.T, f func(t *testing.T, provider string)) {
	for _, p := range providers {
		t.Run(p, func(t *testing.T) { f(t, p) })
	}
}

func TestConformance(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		err := conformance.TestAgent(context.Background(), func() sdk.Agent { return model.New(settings(f, provider, ws)) },
			sdk.Task{Name: "alpha", Prompt: "What does package alpha do? ask:pkg/alpha"},
			sdk.Task{Name: "beta", Prompt: "Where is Beta? search:pkg:Beta"},
		)
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestToolLoop: the model lists the package, reads its files in one turn,
// and answers; each use is asked about and reported with its path.
func TestToolLoop(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		h := harness(t, model.New(settings(f, provider, ws)), nil)
		res, err := h.Run(context.Background(), sdk.Task{ID: "t1", Prompt: "What does package alpha do? ask:pkg/alpha"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Output, "pkg/alpha/alpha.go") {
			t.Errorf("output %q does not name the files read", res.Output)
		}
		var got []string
		for _, u := range h.Recorder.ToolUses("t1") {
			got = append(got, fmt.Sprintf("%s %s %s", u.Tool, strings.Join(u.Paths, ","), u.Outcome))
		}
		want := []string{"List pkg/alpha ok", "Read pkg/alpha/alpha.go ok", "Read pkg/alpha/util.go ok"}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("tool uses %q, want %q", got, want)
		}
		if n := len(h.Recorder.Calls("t1")); n != 3 {
			t.Errorf("%d pre-tool-use questions, want 3", n)
		}
		if got := metric(t, res, "tool_calls"); got != 3 {
			t.Errorf("tool_calls = %v, want 3", got)
		}
		if got, n := metric(t, res, "model_calls"), len(f.Requests()); got != 3 || n != 3 {
			t.Errorf("model_calls = %v, server saw %d, want 3 and 3", got, n)
		}
		// The file's content reached the model.
		last := f.Requests()[2]
		if !strings.Contains(string(last.Body), "Alpha says hello") {
			t.Errorf("the last request does not carry the file's content")
		}
		if res.Artifact.Empty() {
			t.Errorf("the task left no artifact")
		}
	})
}

// TestWarmSessionContinuesConversation: the second task on the session is
// the next turn of the same conversation, so the model reads nothing
// again, and the prefix comes from the cache.
func TestWarmSessionContinuesConversation(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		h := harness(t, model.New(settings(f, provider, ws)), nil)
		ctx := context.Background()
		first, err := h.Run(ctx, sdk.Task{ID: "t1", Prompt: "What does alpha do? ask:pkg/alpha"})
		if err != nil {
			t.Fatal(err)
		}
		n := len(f.Requests())
		second, err := h.Run(ctx, sdk.Task{ID: "t2", Prompt: "Which function returns 42? ask:pkg/alpha"})
		if err != nil {
			t.Fatal(err)
		}
		reqs := f.Requests()[n:]
		if len(reqs) != 1 {
			t.Fatalf("the second task made %d model calls, want 1 (the files are in the conversation)", len(reqs))
		}
		if got := metric(t, second, "tool_calls"); got != 0 {
			t.Errorf("second task: tool_calls = %v, want 0", got)
		}
		if !strings.Contains(string(reqs[0].Body), "What does alpha do?") || !strings.Contains(string(reqs[0].Body), "Alpha says hello") {
			t.Errorf("the second task's request does not carry the first task's turns")
		}
		cached := metric(t, second, "cached_input_tokens")
		uncached := metric(t, second, "input_tokens")
		if cached == 0 || uncached >= cached {
			t.Errorf("second task: %v cached and %v uncached input tokens; want most of the prompt from the cache", cached, uncached)
		}
		if metric(t, first, "tool_calls") != 3 {
			t.Errorf("first task: tool_calls = %v, want 3", first.Metrics["tool_calls"])
		}
		if provider == model.ProviderAnthropic {
			// System prompt, last tool, last block of the conversation.
			for i, r := range f.Requests() {
				if r.Breakpoints != 3 {
					t.Errorf("request %d has %d cache breakpoints, want 3", i, r.Breakpoints)
				}
			}
		}
	})
}

// TestDeniedToolUseReachesModel: a denial goes back to the model as the
// tool's error, with the guard's reason, and the task still answers.
func TestDeniedToolUseReachesModel(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		deny := func(_ string, c sdk.ToolCall) sdk.Verdict {
			for _, p := range c.Paths {
				if strings.HasPrefix(p, "secrets/") {
					return sdk.Verdict{Guard: "no-secrets", Reason: "secrets are off limits"}
				}
			}
			return sdk.Verdict{Allow: true}
		}
		h := harness(t, model.New(settings(f, provider, ws)), deny)
		res, err := h.Run(context.Background(), sdk.Task{ID: "t1", Prompt: "What is the token? read:secrets/.env"})
		if err != nil {
			t.Fatal(err)
		}
		uses := h.Recorder.ToolUses("t1")
		if len(uses) != 1 || uses[0].Outcome != sdk.OutcomeDenied {
			t.Fatalf("tool uses %+v, want one denied read", uses)
		}
		reqs := f.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model calls, want 2", len(reqs))
		}
		body := string(reqs[1].Body)
		if !strings.Contains(body, "no-secrets") || !strings.Contains(body, "secrets are off limits") {
			t.Errorf("the tool error sent to the model does not carry the guard and its reason: %s", body)
		}
		if provider == model.ProviderAnthropic && !strings.Contains(body, `"is_error":true`) {
			t.Errorf("the tool result is not marked as an error: %s", body)
		}
		if strings.Contains(body, "do-not-read") {
			t.Errorf("the denied file's content reached the model")
		}
		if !strings.Contains(res.Output, "Could not use") {
			t.Errorf("output %q does not say the read failed", res.Output)
		}
		if len(res.Artifact.PotentialGotchas) != 1 || !strings.Contains(res.Artifact.PotentialGotchas[0], "off limits") {
			t.Errorf("artifact gotchas %q, want the denial", res.Artifact.PotentialGotchas)
		}
	})
}

// TestRateLimitRetried: a 429 and an overload are retried after the
// provider's retry-after, and the task succeeds.
func TestRateLimitRetried(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		f.Fail(fakeapi.Failure{Status: 429, RetryAfter: "0"}, fakeapi.Failure{Status: 529, RetryAfter: "0"})
		h := harness(t, model.New(settings(f, provider, ws)), nil)
		if _, err := h.Run(context.Background(), sdk.Task{ID: "t1", Prompt: "read:pkg/beta/beta.go"}); err != nil {
			t.Fatal(err)
		}
		var statuses []int
		for _, r := range f.Requests() {
			statuses = append(statuses, r.Status)
		}
		if fmt.Sprint(statuses) != "[429 529 200 200]" {
			t.Errorf("statuses %v, want [429 529 200 200]", statuses)
		}
	})
}

// TestRateLimitOutlastsRetries: when the provider keeps refusing, the
// task fails with an error that may be retried later, not a permanent one.
func TestRateLimitOutlastsRetries(t *testing.T) {
	f, ws := fake(t), workspace(t)
	s := settings(f, model.ProviderAnthropic, ws)
	s.MaxRetries = 1
	f.Fail(fakeapi.Failure{Status: 429, RetryAfter: "0"}, fakeapi.Failure{Status: 429, RetryAfter: "0"})
	_, err := model.New(s).Run(context.Background(), sdk.Task{Prompt: "read:pkg/beta/beta.go"}, conformance.NewRecorder(nil).For("t"))
	if !errors.Is(err, model.ErrRateLimited) || errors.Is(err, sdk.ErrPermanent) {
		t.Errorf("got %v, want ErrRateLimited, not permanent", err)
	}
	if n := len(f.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one retry)", n)
	}
}

// TestAuthFailureIsPermanent: a refused key fails the task at once, with
// a message naming the variable to fix, and never the key.
func TestAuthFailureIsPermanent(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		s := settings(f, provider, ws)
		s.APIKey = "sk-wrong-key-5521"
		_, err := model.New(s).Run(context.Background(), sdk.Task{Prompt: "read:pkg/beta/beta.go"}, conformance.NewRecorder(nil).For("t"))
		if !errors.Is(err, sdk.ErrPermanent) || !errors.Is(err, model.ErrAuth) {
			t.Fatalf("got %v, want a permanent ErrAuth", err)
		}
		if !strings.Contains(err.Error(), "FAKE_MODEL_KEY") || strings.Contains(err.Error(), "sk-wrong-key-5521") {
			t.Errorf("error %q should name the variable and not the key", err)
		}
		if n := len(f.Requests()); n != 1 {
			t.Errorf("%d requests, want 1 (no retry)", n)
		}
	})
}

// TestCancelStopsModelCall: cancelling the task cancels the request the
// model is working on.
func TestCancelStopsModelCall(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		h := harness(t, model.New(settings(f, provider, ws)), nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := h.Run(ctx, sdk.Task{ID: "t1", Prompt: "think hard: hang"})
			done <- err
		}()
		select {
		case <-f.Hung:
		case err := <-done:
			t.Fatalf("the task ended before the model call hung: %v", err)
		}
		cancel()
		<-f.Released // the server saw the request go away
		if err := <-done; err == nil {
			t.Fatal("a cancelled task succeeded")
		}
		// The session is left usable: the cut-short turn was dropped.
		if _, err := h.Run(context.Background(), sdk.Task{ID: "t2", Prompt: "read:pkg/beta/beta.go"}); err != nil {
			t.Fatalf("the task after a cancelled one: %v", err)
		}
	})
}

// TestCompaction: a conversation near the context window is compacted
// into a summary of the earlier tasks; the compaction is reported, and
// the model reads again what it needs.
func TestCompaction(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		// A file of ~1500 tokens.
		big := strings.Repeat("// filler line to make the file large enough.\n", 130)
		for _, p := range []string{"pkg/alpha/big.go", "pkg/beta/big.go"} {
			if err := os.WriteFile(filepath.Join(ws, p), []byte(big), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s := settings(f, provider, ws)
		s.ContextWindow, s.MaxOutputTokens = 5000, 500
		h := harness(t, model.New(s), nil)
		ctx := context.Background()
		var compactions float64
		var results []sdk.Result
		for i, q := range []string{"ask:pkg/alpha", "ask:pkg/beta", "ask:pkg/alpha"} {
			res, err := h.Run(ctx, sdk.Task{ID: fmt.Sprint("t", i), Prompt: q})
			if err != nil {
				t.Fatal(err)
			}
			compactions += metric(t, res, "compactions")
			results = append(results, res)
		}
		if compactions == 0 {
			t.Fatal("no compaction, want the conversation compacted as it neared the window")
		}
		var reported bool
		for _, id := range []string{"t1", "t2"} {
			for _, p := range h.Recorder.Progress(id) {
				if strings.HasPrefix(p.Message, "compacted the conversation") {
					reported = true
				}
			}
		}
		if !reported {
			t.Errorf("no progress report says the conversation was compacted")
		}
		reqs := f.Requests()
		last := string(reqs[len(reqs)-1].Body)
		if !strings.Contains(last, "Summary of this session's earlier work") {
			t.Errorf("the last request does not start from the summary")
		}
		// The summary names what was read but holds no content: alpha is
		// read again.
		if metric(t, results[2], "tool_calls") == 0 {
			t.Errorf("after compaction the model read nothing again")
		}
	})
}

// TestRehydration: a session's exported state is its conversation; a new
// session that imports it continues it.
func TestRehydration(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		s := settings(f, provider, ws)
		ctx := context.Background()
		first := harness(t, model.New(s), nil)
		if _, err := first.Run(ctx, sdk.Task{ID: "t1", Prompt: "What does alpha do? ask:pkg/alpha"}); err != nil {
			t.Fatal(err)
		}
		st, err := first.Agent.ExportState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(st), testKey) {
			t.Fatal("the exported state holds the API key")
		}
		second := harness(t, model.New(s), nil)
		if err := second.Agent.ImportState(ctx, st); err != nil {
			t.Fatal(err)
		}
		n := len(f.Requests())
		res, err := second.Run(ctx, sdk.Task{ID: "t2", Prompt: "And its helper? ask:pkg/alpha"})
		if err != nil {
			t.Fatal(err)
		}
		if metric(t, res, "tool_calls") != 0 || len(f.Requests()) != n+1 {
			t.Errorf("the rehydrated session read again: %v tool calls", res.Metrics["tool_calls"])
		}
		if !strings.Contains(string(f.Requests()[n].Body), "What does alpha do?") {
			t.Errorf("the rehydrated session's request does not carry the first task")
		}
	})
}

func TestImportStateRejectsBrokenConversations(t *testing.T) {
	f := fake(t)
	for name, st := range map[string]string{
		"not json":        `{`,
		"wrong version":   `{"version":9,"messages":[]}`,
		"starts with bot": `{"version":1,"messages":[{"role":"assistant","content":[{"type":"text","text":"hi"}]}]}`,
		"cut short":       `{"version":1,"messages":[{"role":"user","content":[{"type":"text","text":"q"}]}]}`,
		"unanswered use":  `{"version":1,"messages":[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"read","input":{}}]},{"role":"user","content":[{"type":"text","text":"q2"}]},{"role":"assistant","content":[]}]}`,
		"unknown block":   `{"version":1,"messages":[{"role":"user","content":[{"type":"image"}]},{"role":"assistant","content":[]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if err := model.New(settings(f, model.ProviderAnthropic, "")).ImportState(context.Background(), []byte(st)); err == nil {
				t.Error("imported, want an error")
			}
		})
	}
}

// TestToolResultCut: a result over the limit is cut, with a note.
func TestToolResultCut(t *testing.T) {
	f, ws := fake(t), workspace(t)
	s := settings(f, model.ProviderAnthropic, ws)
	s.ToolResultLimit = 40
	h := harness(t, model.New(s), nil)
	if _, err := h.Run(context.Background(), sdk.Task{ID: "t1", Prompt: "read:pkg/beta/beta.go"}); err != nil {
		t.Fatal(err)
	}
	body := string(f.Requests()[1].Body)
	size, _ := os.Stat(filepath.Join(ws, "pkg/beta/beta.go"))
	want := fmt.Sprintf("[cut: showing the first 40 of %d bytes", size.Size())
	if !strings.Contains(body, want) {
		t.Errorf("the tool result does not say it was cut (%q): %s", want, body)
	}
}

// TestToolsOnlyThoseGiven: a tool not in the settings is refused to the
// model and never reaches the host; one given works.
func TestToolsOnlyThoseGiven(t *testing.T) {
	f, ws := fake(t), workspace(t)
	s := settings(f, model.ProviderAnthropic, ws)
	s.Tools = append(s.Tools, model.ToolWrite)
	h := harness(t, model.New(s), nil)
	res, err := h.Run(context.Background(), sdk.Task{ID: "t1", Prompt: "shell:cat_/etc/passwd write:notes.txt:done"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range h.Recorder.ToolUses("t1") {
		if u.Tool == "Exec" {
			t.Errorf("a shell command ran without the shell tool: %+v", u)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || string(b) != "done" {
		t.Errorf("notes.txt = %q, %v; want the write done", b, err)
	}
	if fmt.Sprint(res.Artifact.ModifiedFiles) != "[notes.txt]" {
		t.Errorf("modified files %q, want [notes.txt]", res.Artifact.ModifiedFiles)
	}
	if !strings.Contains(string(f.Requests()[1].Body), `there is no tool \"shell\"`) {
		t.Errorf("the model was not told there is no shell tool")
	}
	// The tools named to the model are the ones given.
	var req struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	_ = json.Unmarshal(f.Requests()[0].Body, &req)
	if fmt.Sprint(req.Tools) != "[{read} {list} {search} {write}]" {
		t.Errorf("tools named %v", req.Tools)
	}
}

// TestCost: the result's cost is the usage the provider reported, at the
// configured prices.
func TestCost(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		s := settings(f, provider, ws)
		h := harness(t, model.New(s), nil)
		ctx := context.Background()
		for i, q := range []string{"ask:pkg/alpha", "ask:pkg/alpha"} {
			f.Reset()
			res, err := h.Run(ctx, sdk.Task{ID: fmt.Sprint("t", i), Prompt: q})
			if err != nil {
				t.Fatal(err)
			}
			var want float64
			var in, cached float64
			for _, r := range f.Requests() {
				u := r.Usage
				want += (float64(u.Input)*3 + float64(u.CachedInput)*0.3 + float64(u.CacheWrite)*3.75 + float64(u.Output)*15) / 1e6
				in += float64(u.Input + u.CacheWrite)
				cached += float64(u.CachedInput)
			}
			if math.Abs(res.Cost-want) > 1e-12 || res.Cost == 0 {
				t.Errorf("task %d: cost %v, want %v", i, res.Cost, want)
			}
			if metric(t, res, "input_tokens") != in || metric(t, res, "cached_input_tokens") != cached {
				t.Errorf("task %d: tokens %v/%v, want %v/%v", i, res.Metrics["input_tokens"], res.Metrics["cached_input_tokens"], in, cached)
			}
		}
	})
}

func TestModelSecondsUseTheClock(t *testing.T) {
	f, ws := fake(t), workspace(t)
	var ticks int
	clock := func() time.Time { ticks++; return time.Unix(int64(ticks), 0) }
	a := model.New(settings(f, model.ProviderAnthropic, ws), model.WithClock(clock))
	res, err := a.Run(context.Background(), sdk.Task{Prompt: "read:pkg/beta/beta.go"}, conformance.NewRecorder(nil).For("t"))
	if err != nil {
		t.Fatal(err)
	}
	if got := metric(t, res, "model_seconds"); got != 2 {
		t.Errorf("model_seconds = %v, want 2 (two calls of one tick)", got)
	}
}

func TestBadSettingsFailEveryTask(t *testing.T) {
	a := model.New(model.Settings{Provider: "gemini"})
	_, err := a.Run(context.Background(), sdk.Task{Prompt: "hi"}, conformance.NewRecorder(nil).For("t"))
	if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), `"gemini"`) || !strings.Contains(err.Error(), "no model named") {
		t.Errorf("got %v, want a permanent error naming the provider and the missing model", err)
	}
}

func TestSettingsFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	s, err := model.SettingsFromEnv(env(model.EnvName, "m", "ANTHROPIC_API_KEY", "k", model.EnvPriceInput, "3", model.EnvTools, "read, list", model.EnvContextWindow, "1000"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Provider != "anthropic" || s.APIKeyEnv != "ANTHROPIC_API_KEY" || s.APIKey != "k" || s.Prices.Input != 3 || fmt.Sprint(s.Tools) != "[read list]" || s.ContextWindow != 1000 {
		t.Errorf("settings %+v", s)
	}
	// A local server without a key.
	if _, err := model.SettingsFromEnv(env(model.EnvProvider, "openai", model.EnvName, "qwen", model.EnvBaseURL, "http://127.0.0.1:11434/v1", model.EnvAPIKeyEnv, "")); err != nil {
		t.Errorf("a local server with no key: %v", err)
	}
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"missing key", []string{model.EnvName, "m", model.EnvAPIKeyEnv, "MY_KEY"}, "MY_KEY is not set"},
		{"bad price", []string{model.EnvName, "m", "ANTHROPIC_API_KEY", "k", model.EnvPriceOutput, "cheap"}, model.EnvPriceOutput},
		{"bad tool", []string{model.EnvName, "m", "ANTHROPIC_API_KEY", "k", model.EnvTools, "read,browse"}, `"browse"`},
		{"no model", []string{"ANTHROPIC_API_KEY", "k"}, "no model named"},
		{"bad provider", []string{model.EnvProvider, "bard", model.EnvName, "m", model.EnvAPIKeyEnv, "K", "K", "k"}, `"bard"`},
		{"window", []string{model.EnvName, "m", "ANTHROPIC_API_KEY", "k", model.EnvContextWindow, "100", model.EnvMaxOutputTokens, "200"}, "not below context_window"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := model.SettingsFromEnv(env(c.env...))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error mentioning %q", err, c.want)
			}
		})
	}
}

// TestConfigEnvIsTheContract: the variables a config's model block sets
// are the ones the agent reads, with the same meaning.
func TestConfigEnvIsTheContract(t *testing.T) {
	m := config.Model{Provider: "openai", Model: "gpt-4.1", BaseURL: "http://localhost:8000/v1", APIKeyEnv: "MY_KEY",
		Prices: config.ModelPrices{Input: 2, CachedInput: 0.5, CacheWrite: 2.5, Output: 8}, ContextWindow: 128000, MaxOutputTokens: 8000,
		Tools: []string{"read", "edit"}, SystemPrompt: "Be brief."}
	env := m.Env()
	env["MY_KEY"] = "k"
	s, err := model.SettingsFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	want := model.Settings{Provider: "openai", Model: "gpt-4.1", BaseURL: "http://localhost:8000/v1", APIKeyEnv: "MY_KEY", APIKey: "k",
		Prices: model.Prices{Input: 2, CachedInput: 0.5, CacheWrite: 2.5, Output: 8}, ContextWindow: 128000, MaxOutputTokens: 8000,
		Tools: []string{"read", "edit"}, SystemPrompt: "Be brief."}
	if fmt.Sprintf("%+v", s) != fmt.Sprintf("%+v", want) {
		t.Errorf("settings\n%+v\nwant\n%+v", s, want)
	}
	if fmt.Sprint(config.ModelTools) != "[read list search edit write shell]" || fmt.Sprint(config.ModelProviders) != "[anthropic openai]" {
		t.Errorf("the config's tools %v or providers %v differ from the agent's", config.ModelTools, config.ModelProviders)
	}
}

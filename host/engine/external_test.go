package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/sdk"
)

// externalHost is a host with one external claude-code agent, on dir.
func externalHost(t *testing.T, dir string, tune ...func(*config.Agent)) *Engine {
	t.Helper()
	a := config.DefaultExternal("cc", config.ExternalClaudeCode)
	for _, f := range tune {
		f(a)
	}
	h, err := New(Options{
		Config: &config.Config{DataDir: dir, Agents: []*config.Agent{a}, Matcher: config.DefaultMatcher(),
			Hooks: config.Hooks{Agent: "cc", WhenUnreachable: config.HookAllow}},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func read(path string) sdk.ToolUse {
	return sdk.ToolUse{Tool: "Read", Paths: []string{path}, Outcome: sdk.OutcomeOK}
}

func TestExternalSessionLifecycle(t *testing.T) {
	dir := t.TempDir()
	h := externalHost(t, dir)
	ctx := context.Background()
	ref := hearth.ExternalRef{Session: "cc-1", Workspace: "/w"}
	if err := h.ReportExternalToolUse(ctx, ref, read("/w/cart/cart.go")); err != nil {
		t.Fatal(err)
	}
	// The first report made it live and busy: not pointed at mid-turn.
	info := sessionInfo(t, h, "cc-1")
	if info.Status != "live" || info.Load != 1 || info.External != config.ExternalClaudeCode || len(info.Files) != 1 {
		t.Fatalf("after a report: %+v", info)
	}
	hints := sdk.Hints{Directories: []string{"/w/cart"}}
	if d, err := h.Place(context.Background(), "cc", hints); err != nil || d.Action != hearth.ActionSpawned {
		t.Errorf("mid-turn: %+v, %v; want a new session", d, err)
	}
	if err := h.ExternalTurn(ctx, ref, false); err != nil {
		t.Fatal(err)
	}
	d, err := h.Place(context.Background(), "cc", hints)
	if err != nil || d.Action != hearth.ActionResume || d.Session != "cc-1" || d.Resume != "claude --resume cc-1" || d.Workspace != "/w" {
		t.Errorf("between turns: %+v, %v", d, err)
	}
	if _, err := h.Submit(ctx, hearth.Task{Agent: "cc", Prompt: "x"}); !errors.Is(err, hearth.ErrExternalAgent) {
		t.Errorf("submit to an external agent: %v", err)
	}
	if err := h.DetachExternal(ctx, ref, "logout"); err != nil {
		t.Fatal(err)
	}
	if info := sessionInfo(t, h, "cc-1"); info.Status != "dormant" || len(info.Files) != 1 {
		t.Errorf("after the end: %+v", info)
	}
	// Restart: back dormant, fingerprint and all, and still the one.
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h = externalHost(t, dir)
	if d, err := h.Place(context.Background(), "cc", hints); err != nil || d.Action != hearth.ActionResume || d.Session != "cc-1" {
		t.Errorf("after a restart: %+v, %v", d, err)
	}
	if err := h.AttachExternal(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if info := sessionInfo(t, h, "cc-1"); info.Status != "live" || len(info.Files) != 1 || info.Files[0] != "/w/cart/cart.go" {
		t.Errorf("attached again: %+v", info)
	}
	for _, bad := range []string{"", "../x", "a b", string(make([]byte, 200))} {
		if err := h.AttachExternal(ctx, hearth.ExternalRef{Session: bad}); !errors.Is(err, hearth.ErrSessionID) {
			t.Errorf("session ID %q: %v", bad, err)
		}
	}
}

// TestExternalSessionsAreBounded: reports from anyone who reaches the
// hooks cannot grow the host without bound; beyond max_sessions live,
// the least recently active goes dormant, and comes back when it reports.
func TestExternalSessionsAreBounded(t *testing.T) {
	h := externalHost(t, t.TempDir(), func(a *config.Agent) { a.Pool.MaxSessions = 2 })
	ctx := context.Background()
	for i := range 3 {
		ref := hearth.ExternalRef{Session: fmt.Sprintf("s%d", i)}
		if err := h.ReportExternalToolUse(ctx, ref, read(fmt.Sprintf("/w/%d.go", i))); err != nil {
			t.Fatal(err)
		}
		if err := h.ExternalTurn(ctx, ref, false); err != nil {
			t.Fatal(err)
		}
	}
	if s0, s2 := sessionInfo(t, h, "s0"), sessionInfo(t, h, "s2"); s0.Status != "dormant" || s2.Status != "live" || len(s0.Files) != 1 {
		t.Errorf("s0 %s (%d files), s2 %s; want the oldest dormant, its fingerprint kept", s0.Status, len(s0.Files), s2.Status)
	}
	if err := h.AttachExternal(ctx, hearth.ExternalRef{Session: "s0"}); err != nil {
		t.Fatal(err)
	}
	if s0, s1 := sessionInfo(t, h, "s0"), sessionInfo(t, h, "s1"); s0.Status != "live" || s1.Status != "dormant" {
		t.Errorf("s0 %s, s1 %s; want s0 back and s1, now the oldest, dormant", s0.Status, s1.Status)
	}
}

// TestEmptyDormantSessionsGoFirst: beyond max_dormant, sessions that
// never used a tool (a `claude -p` that only answered) are forgotten
// before any that knows something, however recent they are.
func TestEmptyDormantSessionsGoFirst(t *testing.T) {
	h := externalHost(t, t.TempDir(), func(a *config.Agent) { a.Pool.MaxDormant = 2 })
	ctx := context.Background()
	end := func(id string, use bool) {
		t.Helper()
		ref := hearth.ExternalRef{Session: id}
		var err error
		if use {
			err = h.ReportExternalToolUse(ctx, ref, read("/w/"+id+".go"))
		} else {
			err = h.AttachExternal(ctx, ref)
		}
		if err == nil {
			err = h.DetachExternal(ctx, ref, "prompt_input_exit")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	end("useful-1", true)
	end("useful-2", true)
	for i := range 5 {
		end(fmt.Sprintf("empty-%d", i), false)
	}
	for _, id := range []string{"useful-1", "useful-2"} {
		if info := sessionInfo(t, h, id); info.Status != "dormant" || len(info.Files) != 1 {
			t.Errorf("%s: %+v; want it kept, dormant with its file, over the empty sessions", id, info)
		}
	}
}

// TestExternalReportsRacingTheirEnd: a turn's report and the session's
// end arriving together never leave a record without the fingerprint.
func TestExternalReportsRacingTheirEnd(t *testing.T) {
	dir := t.TempDir()
	h := externalHost(t, dir, func(a *config.Agent) { a.Pool.MaxSessions = 100 })
	ctx := context.Background()
	const n = 40
	for i := range n {
		if err := h.ReportExternalToolUse(ctx, hearth.ExternalRef{Session: fmt.Sprintf("s%d", i)}, read(fmt.Sprintf("/w/%d.go", i))); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		ref := hearth.ExternalRef{Session: fmt.Sprintf("s%d", i)}
		wg.Go(func() { _ = h.ExternalTurn(ctx, ref, false) })
		wg.Go(func() { _ = h.DetachExternal(ctx, ref, "exit") })
	}
	wg.Wait()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h = externalHost(t, dir)
	for i := range n {
		if info := sessionInfo(t, h, fmt.Sprintf("s%d", i)); len(info.Files) != 1 {
			t.Errorf("s%d came back with files %v", i, info.Files)
		}
	}
}

// TestReloadKeepsExternalSessions: a reload that changes an external
// agent has no process to replace; its sessions stay placeable.
func TestReloadKeepsExternalSessions(t *testing.T) {
	h := externalHost(t, t.TempDir())
	ctx := context.Background()
	ref := hearth.ExternalRef{Session: "s1"}
	if err := h.ReportExternalToolUse(ctx, ref, read("/w/a/b.go")); err != nil {
		t.Fatal(err)
	}
	if err := h.ExternalTurn(ctx, ref, false); err != nil {
		t.Fatal(err)
	}
	cfg := *h.Config()
	a := *cfg.Agents[0]
	a.Pool.IdleTimeout *= 2
	a.Workspace = "/elsewhere"
	cfg.Agents = []*config.Agent{&a}
	rep, err := h.Reload(&cfg)
	if err != nil || len(rep.Changed) != 1 {
		t.Fatalf("reload: %+v, %v", rep, err)
	}
	if d, err := h.Place(context.Background(), "cc", sdk.Hints{Files: []string{"/w/a/b.go"}}); err != nil || d.Action != hearth.ActionResume || d.Session != "s1" {
		t.Errorf("after the reload: %+v, %v", d, err)
	}
}

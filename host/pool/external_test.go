package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// externalSpec is an external claude-code agent named cc, with the
// values an agent block gives one (package config's defaults for an
// external agent: no workspace, one task a session; this package's: 16
// live sessions).
func externalSpec(change ...func(*Spec)) Spec {
	sp := testSpec("cc")
	sp.External, sp.Workspace, sp.Capacity, sp.MaxSessions = hearth.ExternalClaudeCode, "", 1, DefaultMaxExternalSessions
	sp.Launch.Argv = nil
	for _, f := range change {
		f(&sp)
	}
	return sp
}

func read(path string) sdk.ToolUse {
	return sdk.ToolUse{Tool: "Read", Paths: []string{path}, Outcome: sdk.OutcomeOK}
}

func TestExternalSessionLifecycle(t *testing.T) {
	k := newKit(t, externalSpec())
	ctx := context.Background()
	ref := hearth.ExternalRef{Session: "cc-1", Workspace: "/w"}
	if err := k.p.ReportExternalToolUse(ctx, ref, read("/w/cart/cart.go")); err != nil {
		t.Fatal(err)
	}
	// The first report made it live and busy: not pointed at mid-turn.
	info := k.info(t, "cc-1")
	if info.Status != "live" || info.Load != 1 || info.External != hearth.ExternalClaudeCode || len(info.Files) != 1 {
		t.Fatalf("after a report: %+v", info)
	}
	place := hearth.Task{Agent: "cc", Hints: sdk.Hints{Directories: []string{"/w/cart"}}}
	if d := k.p.Place(place); d.Action != hearth.ActionSpawned {
		t.Errorf("mid-turn: %+v; want a new session", d)
	}
	if err := k.p.ExternalTurn(ctx, ref, false); err != nil {
		t.Fatal(err)
	}
	if d := k.p.Place(place); d.Action != hearth.ActionResume || d.Session != "cc-1" || d.Resume != "claude --resume cc-1" || d.Workspace != "/w" {
		t.Errorf("between turns: %+v", d)
	}
	if err := k.p.Runnable(); !errors.Is(err, hearth.ErrExternalAgent) {
		t.Errorf("a task for an external agent: %v", err)
	}
	if err := k.p.DetachExternal(ctx, ref, "logout"); err != nil {
		t.Fatal(err)
	}
	if info := k.info(t, "cc-1"); info.Status != "dormant" || len(info.Files) != 1 {
		t.Errorf("after the end: %+v", info)
	}
	// Restart: back dormant, fingerprint and all, and still the one.
	k.restart(t)
	if d := k.p.Place(place); d.Action != hearth.ActionResume || d.Session != "cc-1" {
		t.Errorf("after a restart: %+v", d)
	}
	if err := k.p.AttachExternal(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if info := k.info(t, "cc-1"); info.Status != "live" || len(info.Files) != 1 || info.Files[0] != "/w/cart/cart.go" {
		t.Errorf("attached again: %+v", info)
	}
	for _, bad := range []string{"", "../x", "a b", string(make([]byte, 200))} {
		if err := k.p.AttachExternal(ctx, hearth.ExternalRef{Session: bad}); !errors.Is(err, hearth.ErrSessionID) {
			t.Errorf("session ID %q: %v", bad, err)
		}
	}
}

// TestExternalSessionsAreBounded: reports from anyone who reaches the
// hooks cannot grow the host without bound; beyond max_sessions live,
// the least recently active goes dormant, and comes back when it reports.
func TestExternalSessionsAreBounded(t *testing.T) {
	k := newKit(t, externalSpec(func(s *Spec) { s.MaxSessions = 2 }))
	ctx := context.Background()
	for i := range 3 {
		ref := hearth.ExternalRef{Session: fmt.Sprintf("s%d", i)}
		if err := k.p.ReportExternalToolUse(ctx, ref, read(fmt.Sprintf("/w/%d.go", i))); err != nil {
			t.Fatal(err)
		}
		if err := k.p.ExternalTurn(ctx, ref, false); err != nil {
			t.Fatal(err)
		}
	}
	if s0, s2 := k.info(t, "s0"), k.info(t, "s2"); s0.Status != "dormant" || s2.Status != "live" || len(s0.Files) != 1 {
		t.Errorf("s0 %s (%d files), s2 %s; want the oldest dormant, its fingerprint kept", s0.Status, len(s0.Files), s2.Status)
	}
	if err := k.p.AttachExternal(ctx, hearth.ExternalRef{Session: "s0"}); err != nil {
		t.Fatal(err)
	}
	if s0, s1 := k.info(t, "s0"), k.info(t, "s1"); s0.Status != "live" || s1.Status != "dormant" {
		t.Errorf("s0 %s, s1 %s; want s0 back and s1, now the oldest, dormant", s0.Status, s1.Status)
	}
}

// TestExternalReportsRacingTheirEnd: a turn's report and the session's
// end arriving together never leave a record without the fingerprint.
func TestExternalReportsRacingTheirEnd(t *testing.T) {
	k := newKit(t, externalSpec(func(s *Spec) { s.MaxSessions = 100 }))
	ctx := context.Background()
	const n = 40
	for i := range n {
		if err := k.p.ReportExternalToolUse(ctx, hearth.ExternalRef{Session: fmt.Sprintf("s%d", i)}, read(fmt.Sprintf("/w/%d.go", i))); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		ref := hearth.ExternalRef{Session: fmt.Sprintf("s%d", i)}
		wg.Go(func() { _ = k.p.ExternalTurn(ctx, ref, false) })
		wg.Go(func() { _ = k.p.DetachExternal(ctx, ref, "exit") })
	}
	wg.Wait()
	k.restart(t)
	for i := range n {
		if info := k.info(t, fmt.Sprintf("s%d", i)); len(info.Files) != 1 {
			t.Errorf("s%d came back with files %v", i, info.Files)
		}
	}
}

// TestEmptyDormantSessionsGoFirst: beyond max_dormant, sessions that
// never used a tool (a `claude -p` that only answered) are forgotten
// before any that knows something, however recent they are.
func TestEmptyDormantSessionsGoFirst(t *testing.T) {
	k := newKit(t, externalSpec(func(sp *Spec) { sp.MaxDormant = 2 }))
	ctx := context.Background()
	end := func(id string, use bool) {
		t.Helper()
		ref := hearth.ExternalRef{Session: id}
		var err error
		if use {
			err = k.p.ReportExternalToolUse(ctx, ref, read("/w/"+id+".go"))
		} else {
			err = k.p.AttachExternal(ctx, ref)
		}
		if err == nil {
			err = k.p.DetachExternal(ctx, ref, "prompt_input_exit")
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
		if info := k.info(t, id); info.Status != "dormant" || len(info.Files) != 1 {
			t.Errorf("%s: %+v; want it kept, dormant with its file, over the empty sessions", id, info)
		}
	}
}

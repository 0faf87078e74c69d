package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
)

// fakeClock is a host clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// awaitRunEvent reads sub until an event of kind arrives.
func awaitRunEvent(t *testing.T, sub *subscription, kind hearth.EventKind) hearth.Event {
	t.Helper()
	timeout := time.After(runTimeout)
	for {
		select {
		case e := <-sub.Events():
			if e.Kind == kind {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event within %s", kind, runTimeout)
		}
	}
}

// TestRetentionPausesAbandonsThenDeletes walks a run through its
// retention on a clock the test moves: idle past pause_after while it
// waits for a retry, it is paused; past abandon_after, flagged abandoned;
// past delete_after, deleted with its outputs and files, the deletion
// being its last event.
func TestRetentionPausesAbandonsThenDeletes(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	h, err := New(Options{
		Config:       &config.Config{DataDir: t.TempDir(), Agents: []*config.Agent{testAgent("scripted", "agent")}, Matcher: config.DefaultMatcher()},
		Logger:       hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}}),
		Now:          clock.Now,
		ReapInterval: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })

	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("chapter 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The task fails once and is retried after an hour of the test's
	// clock, which never comes: the run sits idle, waiting.
	p := pipe("idle", []string{"ingest", "files;failuntil:2"})
	p.Retry = hearth.Retry{Attempts: 3, Backoff: 1000 * time.Hour, MaxBackoff: 1000 * time.Hour}
	p.Retention = hearth.Retention{PauseAfter: 24 * time.Hour, AbandonAfter: 7 * 24 * time.Hour, DeleteAfter: 30 * 24 * time.Hour}
	id := hearth.NewRunID(p.Name, clock.Now())
	sub := h.events.subscribe(hearth.EventFilter{Run: id, Buffer: 256})
	defer sub.Close()
	rh, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: p, RunOptions: hearth.RunOptions{ID: id, Files: []string{notes}}})
	if err != nil {
		t.Fatal(err)
	}
	for awaitRunEvent(t, sub, hearth.EventRunTask).To != string(hearth.TaskRetrying) {
	}
	d, err := h.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 {
		t.Fatalf("files %+v; want notes.txt", d.Files)
	}
	blob := d.Files[0].Path

	clock.Advance(24*time.Hour + time.Minute)
	info, err := waitRun(t, rh)
	if info.Status != hearth.RunPaused || !strings.Contains(info.Reason, "paused by retention (pause_after 24h0m0s)") {
		t.Fatalf("after 24h idle: %s (%s), %v; want paused by retention", info.Status, info.Reason, err)
	}

	clock.Advance(7 * 24 * time.Hour)
	if e := awaitRunEvent(t, sub, hearth.EventRunAbandoned); !strings.Contains(e.Message, "abandon_after 168h") {
		t.Errorf("abandoned event %q", e.Message)
	}
	if d, err := h.Run(context.Background(), id); err != nil || !d.Abandoned || d.Status != hearth.RunPaused {
		t.Fatalf("after a week paused: %+v, %v; want paused and flagged abandoned", d.RunInfo, err)
	}

	clock.Advance(30 * 24 * time.Hour)
	if e := awaitRunEvent(t, sub, hearth.EventRunDeleted); !strings.Contains(e.Message, "delete_after 720h") || !strings.Contains(e.Message, "1 file(s)") {
		t.Errorf("deleted event %q", e.Message)
	}
	if _, err := h.Run(context.Background(), id); err == nil {
		t.Error("the run is still there after its deletion")
	}
	if _, err := os.Stat(blob); !os.IsNotExist(err) {
		t.Errorf("the run's file %s: %v; want it removed", blob, err)
	}
	kinds := runEventKinds(t, h, id)
	if len(kinds) == 0 || kinds[len(kinds)-1] != string(hearth.EventRunDeleted) {
		t.Errorf("the run's events end with %v; want the deletion last", kinds[max(len(kinds)-3, 0):])
	}
	if !slices.Contains(kinds, string(hearth.EventRunAbandoned)) {
		t.Errorf("events %v lack the abandonment", kinds)
	}
}

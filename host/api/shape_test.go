package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/sdk"
)

// The daemon's client and the engine are the same services (package
// hearth): the CLI and the dashboard read either and must not be able
// to tell them apart. These tests read one host both ways, in the same
// state, and hold what comes back equal, as the JSON the CLI prints.

// sameJSON fails t when got and want do not encode alike.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s through the daemon differs from the engine's:\n got %s\nwant %s", what, g, w)
	}
}

func TestTheClientReadsAsTheEngine(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	ctx := context.Background()
	out, err := d.c.Submit(ctx, hearth.Task{Agent: "coder", Prompt: "read:src/a.go;echo:done", Hints: sdk.Hints{Files: []string{"src/a.go"}}})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := d.c.StartRun(ctx, hearth.RunSpec{RunOptions: hearth.RunOptions{Config: pipelineFile(t, t.TempDir(), "")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// The host is idle now: nothing it reports changes between the two
	// reads. (A placement does: its freshness scores follow the clock.)
	for _, read := range []struct {
		what string
		of   func(hearth.Service) (any, error)
	}{
		{"the sessions", func(s hearth.Service) (any, error) { return s.Sessions(ctx) }},
		{"a session", func(s hearth.Service) (any, error) { return s.Session(ctx, out.Session, 10) }},
		{"the runs", func(s hearth.Service) (any, error) { return s.Runs(ctx) }},
		{"a run", func(s hearth.Service) (any, error) { return s.Run(ctx, rs.ID()) }},
		{"a run's outputs", func(s hearth.Service) (any, error) { return s.RunOutputs(ctx, rs.ID()) }},
		{"a run's checkpoints", func(s hearth.Service) (any, error) { return s.RunCheckpoints(ctx, rs.ID()) }},
		{"a run's events", func(s hearth.Service) (any, error) { return s.RunEvents(ctx, rs.ID(), 0) }},
	} {
		want, err := read.of(d.h)
		if err != nil {
			t.Fatalf("%s in process: %v", read.what, err)
		}
		got, err := read.of(d.c)
		if err != nil {
			t.Fatalf("%s through the daemon: %v", read.what, err)
		}
		sameJSON(t, read.what, got, want)
	}
	want, err := d.h.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "the status", got, want)
	if len(got.Sessions) == 0 || len(got.Agents) != 1 || got.Started.IsZero() {
		t.Errorf("the status lacks its sessions, agents or start: %+v", got)
	}
}

// TestSubscriptionsFilterAlikeThroughTheDaemon: the same filter, given
// to the engine and to the client, lets the same events through.
func TestSubscriptionsFilterAlikeThroughTheDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Each filter lets task.failed through: the marker that ends each
	// round is a task that fails.
	for _, f := range []hearth.EventFilter{
		{},
		{ToolUses: true},
		{Kinds: []hearth.EventKind{hearth.EventDecision, hearth.EventTaskFailed}, ToolUses: true},
		{Kinds: []hearth.EventKind{hearth.EventTaskSucceeded, hearth.EventTaskFailed}},
	} {
		local, err := d.h.Subscribe(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		remote, err := d.c.Subscribe(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		task := hearth.Task{Agent: "coder", Prompt: "read:a.go;read:b.go;echo:done"}
		if _, err := d.c.Submit(ctx, task); err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.Submit(ctx, hearth.Task{Agent: "coder", Prompt: "permanent:end"}); err == nil {
			t.Fatal("a task told to fail succeeded")
		}
		kinds := func(s hearth.Subscription) []hearth.EventKind {
			var out []hearth.EventKind
			for {
				select {
				case e := <-s.Events():
					if e.Kind == hearth.EventTaskFailed {
						return out
					}
					out = append(out, e.Kind)
				case <-ctx.Done():
					t.Fatalf("filter %+v: no task.failed came; got %v", f, out)
				}
			}
		}
		want, got := kinds(local), kinds(remote)
		local.Close()
		remote.Close()
		if len(want) == 0 {
			t.Errorf("filter %+v let nothing but the marker through", f)
		}
		for _, k := range want {
			if !f.Match(hearth.Event{Kind: k}) {
				t.Errorf("filter %+v let %s through", f, k)
			}
		}
		sameJSON(t, "the events", got, want)
	}
}

// TestBackupThroughTheDaemon: a backup taken through the daemon says what
// it holds, and restores to a data directory with as much in it.
func TestBackupThroughTheDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	ctx := context.Background()
	if _, err := d.c.Submit(ctx, hearth.Task{Agent: "coder", Prompt: "read:a.go;echo:done"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := d.c.Backup(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != int64(buf.Len()) || st.Records == 0 {
		t.Fatalf("backup stats %+v for %d bytes", st, buf.Len())
	}
	restored, err := store.Restore(ctx, &buf, filepath.Join(t.TempDir(), "restored"), store.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if restored.Records != st.Records || restored.Files != st.Files {
		t.Errorf("restored %+v from a backup that said %+v", restored, st)
	}
}

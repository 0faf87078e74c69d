package member_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/testcert"
	"github.com/hearth-dev/hearth/sdk"
)

// TestForwardsInFlight: while host a's task runs on host b's session,
// a lists it as a forward it sends (to b, on that session, sent, first
// attempt) and b as one it runs (from a, running); once it is done,
// neither lists it. (What the dashboard's cluster view shows: GET /api/cluster.)
func TestForwardsInFlight(t *testing.T) {
	dir := tempDir(t)
	ca, cert, key := testcert.Write(t, dir)
	hb := startHost(t, hostOptions{ID: "b", CA: ca, Cert: cert, Key: key, Daemon: true})
	ha := startHost(t, hostOptions{ID: "a", CA: ca, Cert: cert, Key: key, Daemon: true})
	ctx := t.Context()
	warm, err := hb.Engine.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "read:pkg/b/x.go"})
	if err != nil {
		t.Fatal(err)
	}
	ha.Member.View().Apply(1, append(ha.Record(t), hb.Record(t)...))

	started := filepath.Join(dir, "started")
	before := time.Now()
	type result struct {
		out *hearth.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := ha.Engine.Submit(ctx, hearth.Task{ID: "fw-1", Agent: "scripted", Prompt: "touch:" + started + ";wait:" + filepath.Join(dir, "release") + ";echo:ok",
			Hints: sdk.Hints{Directories: []string{"pkg/b"}}})
		done <- result{out, err}
	}()
	waitFile(t, started)

	sends, err := ha.Member.Forwards(ctx)
	if err != nil || len(sends) != 1 {
		t.Fatalf("a lists %+v, %v; want the one forward it sends", sends, err)
	}
	if f := sends[0]; f.Task != "fw-1" || f.Agent != "scripted" || f.From != "a" || f.To != "b" || f.Session != warm.Session ||
		f.State != hearth.ForwardSent || f.Attempt != 1 || f.Since.Before(before) || f.Started.After(f.Since) {
		t.Errorf("a lists %+v; want fw-1 sent from a to b's %s, attempt 1, since it was sent", f, warm.Session)
	}
	runs, err := hb.Member.Forwards(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("b lists %+v, %v; want the one forward it runs", runs, err)
	}
	if f := runs[0]; f.Task != "fw-1" || f.From != "a" || f.To != "b" || f.State != hearth.ForwardRunning || f.Since.Before(before) {
		t.Errorf("b lists %+v; want fw-1 from a, running", f)
	}

	writeRelease(t, dir)
	if r := <-done; r.err != nil || r.out.Decision.Host != "b" {
		t.Fatalf("the forwarded task: %+v %v; want it done on b", r.out, r.err)
	}
	for _, h := range []*testHost{ha, hb} {
		if fs, err := h.Member.Forwards(context.Background()); err != nil || len(fs) != 0 {
			t.Errorf("%s lists %+v, %v once the forward is done; want none", h.ID, fs, err)
		}
	}
}

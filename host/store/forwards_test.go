package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/sdk"
)

// TestForwardRecordsSurviveReopen: a running record, then the same key
// done with its outcome, and another done with an error, read back after
// a reopen as written; a save that drops keys deletes them in the same
// write.
func TestForwardRecordsSurviveReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Write, Options{GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	out := &hearth.Outcome{TaskID: "k1", Agent: "scripted", Session: "scripted-1",
		Decision: hearth.Decision{Action: hearth.ActionReused, Reason: "warm"},
		Result:   sdk.Result{Output: "done", Metrics: map[string]float64{"quality": 0.9}},
		Artifact: sdk.ContextArtifact{KeyDecisions: []string{"kept the API"}}, ToolUses: 3, Duration: 1500 * time.Millisecond}
	for _, rec := range []cluster.ForwardRecord{
		{Key: "k1", From: "a", Agent: "scripted", Accepted: at},
		{Key: "old", From: "a", Agent: "scripted", Accepted: at, Done: true, Finished: at, Error: "gone"},
	} {
		if err := s.SaveForward(rec, nil).Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := s.ForwardRecord("k1"); err != nil || r.Done || !r.Accepted.Equal(at) || r.From != "a" {
		t.Fatalf("running k1: %+v %v", r, err)
	}
	done := cluster.ForwardRecord{Key: "k1", From: "a", Agent: "scripted", Accepted: at, Done: true, Finished: at.Add(time.Second), Outcome: out}
	failedRec := cluster.ForwardRecord{Key: "k2", From: "c", Agent: "scripted", Accepted: at, Done: true, Finished: at.Add(2 * time.Second),
		Error: "task k2 denied by guard budget", ErrorKind: "denied"}
	if err := s.SaveForward(done, []string{"old"}).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveForward(failedRec, nil).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = MustOpen(t, dir)
	recs, err := s.ForwardRecords()
	if err != nil || len(recs) != 2 {
		t.Fatalf("records after reopen: %+v %v, want k1 and k2 (old dropped)", recs, err)
	}
	got := recs[0]
	if got.Key != "k1" || !got.Done || got.Err != nil || !got.Finished.Equal(done.Finished) || got.Outcome == nil {
		t.Fatalf("k1: %+v", got)
	}
	o := got.Outcome
	if o.Result.Output != "done" || o.Result.Metrics["quality"] != 0.9 || o.Session != "scripted-1" || o.ToolUses != 3 ||
		o.Duration != out.Duration || o.Decision.Reason != "warm" || o.Artifact.KeyDecisions[0] != "kept the API" {
		t.Fatalf("k1's outcome: %+v", o)
	}
	if r := recs[1]; r.Key != "k2" || r.Outcome != nil || r.Error != failedRec.Error || r.ErrorKind != "denied" || r.From != "c" {
		t.Fatalf("k2: %+v", r)
	}
	if _, err := s.ForwardRecord("old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old after it was dropped: %v", err)
	}
	if err := s.DropForwards([]string{"k1", "k2"}).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if recs, err := s.ForwardRecords(); err != nil || len(recs) != 0 {
		t.Fatalf("after dropping every key: %+v %v", recs, err)
	}
}

// TestDamagedForwardRecordsNameTheirKey: an empty value (what Badger
// hands back for one failing its checksum), bytes that do not decode and
// a newer record version are each an error naming the forwarded task,
// and are still listed by their key beside the good records; verify
// lists the three.
func TestDamagedForwardRecordsNameTheirKey(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	ctx := context.Background()
	if err := s.SaveForward(cluster.ForwardRecord{Key: "good", Agent: "scripted", Accepted: time.Now()}, nil).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	raw := map[string][]byte{
		"empty":   {},
		"garbage": {recordVersion, 0xff, 0xff, 0xff},
		"newer":   {recordVersion + 1, 0x0a, 0x01, 'x'},
	}
	for k, v := range raw {
		if err := s.apply(ctx, &write{sets: []kv{{forwardKey(k), v}}}); err != nil {
			t.Fatal(err)
		}
	}
	for k := range raw {
		_, err := s.ForwardRecord(k)
		if err == nil || !strings.Contains(err.Error(), "forwarded task "+k) {
			t.Errorf("%s: %v, want an error naming forwarded task %s", k, err, k)
		}
		var de *DamageError
		switch k {
		case "newer":
			if !errors.Is(err, ErrNewerLayout) || !strings.Contains(err.Error(), "record version 2") {
				t.Errorf("%s: %v, want ErrNewerLayout naming the version", k, err)
			}
		default:
			if !errors.As(err, &de) || de.What != "forwarded task "+k || !errors.Is(err, ErrDamaged) {
				t.Errorf("%s: %v, want a *DamageError naming it", k, err)
			}
		}
	}
	recs, err := s.ForwardRecords()
	if err != nil || len(recs) != 4 {
		t.Fatalf("records: %+v %v, want 4 (three unreadable)", recs, err)
	}
	for _, r := range recs {
		switch {
		case r.Key == "good" && r.Err != nil:
			t.Errorf("good: %v", r.Err)
		case r.Key != "good" && (r.Err == nil || !strings.Contains(r.Err.Error(), "forwarded task "+r.Key)):
			t.Errorf("%s listed with %v, want an error naming it", r.Key, r.Err)
		}
	}
	rep := &VerifyReport{}
	if err := s.verifyRecords(ctx, rep); err != nil {
		t.Fatal(err)
	}
	var what []string
	for _, d := range rep.Damage {
		what = append(what, d.What)
	}
	slices.Sort(what)
	if want := []string{"forwarded task empty", "forwarded task garbage", "forwarded task newer"}; !slices.Equal(what, want) {
		t.Errorf("verify found %q, want %q", what, want)
	}
}

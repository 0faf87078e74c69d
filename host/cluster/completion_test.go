package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

type fakeLease struct {
	epoch int64
	until time.Time
}

func (l fakeLease) Epoch() int64     { return l.epoch }
func (l fakeLease) Until() time.Time { return l.until }

// TestHeld: a fence is held while its context lasts and the clock is
// before its lease's bound; a host that woke past the bound finds it
// lost though nothing cancelled the context yet.
func TestHeld(t *testing.T) {
	now := time.Now()
	open := WithLease(context.Background(), fakeLease{7, now.Add(time.Second)})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		fence context.Context
		at    time.Time
		held  bool
	}{
		{"before the bound", open, now, true},
		{"at the bound", open, now.Add(time.Second), false},
		{"after a pause past the bound, the context still open", open, now.Add(time.Minute), false},
		{"the context ended", WithLease(ended, fakeLease{7, now.Add(time.Hour)}), now, false},
		{"no lease (a static membership), open", context.Background(), now, true},
		{"no lease, ended", ended, now, false},
	} {
		epoch, err := Held(tc.fence, tc.at)
		if (err == nil) != tc.held {
			t.Errorf("%s: held = %v (%v), want %v", tc.name, err == nil, err, tc.held)
		}
		if err != nil && !errors.Is(err, ErrFenced) {
			t.Errorf("%s: %v does not wrap ErrFenced", tc.name, err)
		}
		if _, ok := tc.fence.Value(fenceKey{}).(Lease); ok && epoch != 7 {
			t.Errorf("%s: epoch %d, want 7", tc.name, epoch)
		}
	}
}

// TestCompletionCodec: a completion keeps its outcome or its error (with
// the sentinel it wrapped); a result too large for etcd is left out and
// the completion says the host keeps it.
func TestCompletionCodec(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	out := &hearth.Outcome{TaskID: "k", Session: "coder-1", Result: sdk.Result{Output: "done"}}
	for _, c := range []Completion{
		{Key: "k", Host: "b", Epoch: 42, From: "a", Finished: at, Result: Result{Outcome: out}},
		{Key: "run/x/1", Host: "b", Epoch: 42, Finished: at, Result: Result{Err: KeptError("denied by guard g", "denied")}},
	} {
		b, err := EncodeCompletion(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeCompletion(c.Key, b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Host != c.Host || got.Epoch != c.Epoch || got.From != c.From || !got.Finished.Equal(c.Finished) || got.OnHost {
			t.Errorf("round trip: %+v, want %+v", got, c)
		}
		if (c.Result.Outcome != nil) != (got.Result.Outcome != nil) || (c.Result.Err == nil) != (got.Result.Err == nil) {
			t.Errorf("round trip of the result: %+v, want %+v", got.Result, c.Result)
		}
		if c.Result.Err != nil && !errors.Is(got.Result.Err, hearth.ErrDenied) {
			t.Errorf("the error %v no longer wraps ErrDenied", got.Result.Err)
		}
		if c.Result.Err != nil && (got.Result.Err.Error() != c.Result.Err.Error() || ErrorKind(got.Result.Err) != ErrorKind(c.Result.Err)) {
			t.Errorf("the error: %v (%s), want %v (%s)", got.Result.Err, ErrorKind(got.Result.Err), c.Result.Err, ErrorKind(c.Result.Err))
		}
	}
	big := &hearth.Outcome{TaskID: "k", Result: sdk.Result{Output: strings.Repeat("x", MaxCompletionOutcomeBytes)}}
	b, err := EncodeCompletion(Completion{Key: "k", Host: "b", Epoch: 1, Result: Result{Outcome: big}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeCompletion("k", b); err != nil || !got.OnHost || got.Result.Outcome != nil {
		t.Errorf("a large result: %+v %v, want it left on the host", got, err)
	}
	if _, err := EncodeCompletion(Completion{Key: "", Host: "b"}); err == nil {
		t.Error("a completion without a key was encoded")
	}
}

func FuzzDecodeCompletion(f *testing.F) {
	b, _ := EncodeCompletion(Completion{Key: "k", Host: "b", Epoch: 42, From: "a", Result: Result{Outcome: &hearth.Outcome{TaskID: "k"}}})
	f.Add("k", b)
	b, _ = EncodeCompletion(Completion{Key: "k", Host: "b", Epoch: 42, Result: Result{Err: errors.New("failed")}})
	f.Add("k", b)
	f.Add("k", []byte(`{"v":1,"host":"b","epoch":1,"on_host":true}`))
	f.Add("k", []byte(`{"v":2,"host":"b"}`))
	f.Add("", []byte(`{"v":1,"host":"b/c","error":"x"}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		c, err := DecodeCompletion(key, value)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if c.Result.Outcome == nil && c.Result.Err == nil && !c.OnHost {
			t.Fatalf("accepted %q without a result", value)
		}
		if _, err := EncodeCompletion(c); err != nil {
			t.Fatalf("accepted %q but cannot write it again: %v", value, err)
		}
	})
}

package plugin

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/internal/agentpb"
)

// The decoders of what crosses the plugin boundary, fed arbitrary bytes:
// a message that unmarshals decodes without a panic, and what it decodes
// to survives a second trip through the wire unchanged (the decoders lose
// nothing they keep).

func seedTask(f *testing.F) {
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, t := range []sdk.Task{
		{},
		{ID: "t1", Run: "r", Name: "draft", Prompt: "write", Hints: sdk.Hints{Files: []string{"a.go"}, Directories: []string{"src"}, Technologies: []string{"go"}},
			IdempotencyKey: "r/draft/1", Attempt: 2, Metadata: map[string]string{"k": "v"}, Session: "s",
			Upstream: []sdk.Upstream{{Task: "research", Version: 3, Session: "s0", CreatedAt: at,
				Artifact: sdk.ContextArtifact{KeyDecisions: []string{"d"}, ModifiedFiles: []string{"f"}, NewPatterns: []string{"p"}, PotentialGotchas: []string{"g"}}}},
			Context: "# Context from Previous Steps\n...", Feedback: "shorter"},
	} {
		b, err := proto.Marshal(taskToWire(t))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0xff})
}

func FuzzTaskFromWire(f *testing.F) {
	seedTask(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m agentpb.Task
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		once := taskFromWire(&m)
		twice := taskFromWire(taskToWire(once))
		if !reflect.DeepEqual(normTask(once), normTask(twice)) {
			t.Fatalf("a task changed on a second trip:\n%#v\n%#v", once, twice)
		}
	})
}

// normTask makes empty and nil collections, and times, compare equal.
func normTask(t sdk.Task) sdk.Task {
	if len(t.Metadata) == 0 {
		t.Metadata = nil
	}
	if len(t.Upstream) == 0 {
		t.Upstream = nil
	}
	for i := range t.Upstream {
		t.Upstream[i].CreatedAt = t.Upstream[i].CreatedAt.UTC()
	}
	return t
}

func FuzzResultFromWire(f *testing.F) {
	for _, r := range []sdk.Result{{}, {Output: "out", Metrics: map[string]float64{"q": 0.9}, Cost: 0.25,
		Artifact: sdk.ContextArtifact{KeyDecisions: []string{"d"}, PotentialGotchas: []string{"g"}}}} {
		b, err := proto.Marshal(resultToWire(r, 7))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m agentpb.RunResponse
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		once := resultFromWire(&m)
		twice := resultFromWire(resultToWire(once, m.GetToolUses()))
		if len(once.Metrics) == 0 {
			once.Metrics, twice.Metrics = nil, nil
		}
		if !reflect.DeepEqual(once, twice) && !(once.Cost != once.Cost) { // NaN costs never compare equal
			t.Fatalf("a result changed on a second trip:\n%#v\n%#v", once, twice)
		}
	})
}

func FuzzToolUseFromWire(f *testing.F) {
	for _, u := range []sdk.ToolUse{{}, {CallID: "c", Tool: "Read", Kind: sdk.KindRead, Paths: []string{"a.go"}, Technologies: []string{"go"},
		Outcome: sdk.OutcomeOK, Duration: time.Millisecond, Cost: 0.01, At: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}} {
		b, err := proto.Marshal(toolUseToWire("t", u))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m agentpb.ToolUse
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		once := toolUseFromWire(&m)
		twice := toolUseFromWire(toolUseToWire(m.GetTaskId(), once))
		once.At, twice.At = once.At.UTC(), twice.At.UTC()
		if !reflect.DeepEqual(once, twice) && !(once.Cost != once.Cost) {
			t.Fatalf("a tool use changed on a second trip:\n%#v\n%#v", once, twice)
		}
	})
}

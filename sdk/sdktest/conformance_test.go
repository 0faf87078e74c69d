package sdktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

func TestConformingAgentPasses(t *testing.T) {
	tasks := []sdk.Task{
		{Name: "read", Prompt: "read:src/a.go;read:src/b.go;echo:done"},
		{Name: "flood", Prompt: "tools:200;progress:1"},
	}
	newAgent := func() sdk.Agent { return testagent.New("scripted", 4) }
	if err := sdktest.TestAgent(context.Background(), newAgent, tasks...); err != nil {
		t.Fatal(err)
	}
}

func TestConformanceFindsViolations(t *testing.T) {
	tests := []struct {
		name  string
		agent func() sdk.Agent
		want  []string
	}{
		{
			name:  "unnamed",
			agent: func() sdk.Agent { return &badAgent{info: sdk.Info{}} },
			want:  []string{"Info.Name is empty", "Info.Version is empty"},
		},
		{
			name:  "spaces in name",
			agent: func() sdk.Agent { return &badAgent{info: sdk.Info{Name: "my agent", Version: "1"}} },
			want:  []string{`contains whitespace; use a single word such as "my-agent"`},
		},
		{
			name:  "ignores denials",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, ignoreDenial: true} },
			want:  []string{"was denied but reported as done"},
		},
		{
			name:  "ignores cancellation",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, ignoreCancel: true} },
			want:  []string{"did not return within 5s of its context being cancelled"},
		},
		{
			name:  "fails its task",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, fail: true} },
			want:  []string{"Run failed: run: nope"},
		},
		{
			name:  "panics on bad state",
			agent: func() sdk.Agent { return &statefulBadAgent{badAgent{info: okInfo}} },
			want:  []string{"malformed state made the agent panic"},
		},
		{
			name:  "empty tool name and empty path",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, sloppyReport: true} },
			want:  []string{"has no Tool name", "reports an empty path"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sdktest.TestAgent(context.Background(), tt.agent, sdk.Task{Name: "t", Prompt: "go"})
			if err == nil {
				t.Fatal("got no violations")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %v\nwant a violation containing %q", err, w)
				}
			}
		})
	}
}

func TestConformanceNeedsATask(t *testing.T) {
	err := sdktest.TestAgent(context.Background(), func() sdk.Agent { return &badAgent{info: okInfo} })
	if err == nil || !strings.Contains(err.Error(), "needs at least one task") {
		t.Errorf("got %v, want a request for a task", err)
	}
}

var okInfo = sdk.Info{Name: "bad", Version: "1"}

// badAgent breaks the contract in the ways its flags say.
type badAgent struct {
	info         sdk.Info
	ignoreDenial bool
	ignoreCancel bool
	fail         bool
	sloppyReport bool
}

func (a *badAgent) Describe(context.Context) (sdk.Info, error) { return a.info, nil }

func (a *badAgent) Run(ctx context.Context, _ sdk.Task, h sdk.Host) (sdk.Result, error) {
	if a.ignoreCancel && ctx.Err() != nil {
		select {} // never returns: the check gives up after its limit
	}
	if a.fail {
		return sdk.Result{}, errors.New("nope")
	}
	if a.ignoreDenial {
		_, _ = h.CheckToolUse(ctx, sdk.ToolCall{CallID: "c1", Tool: "Read", Paths: []string{".env"}})
		return sdk.Result{}, h.ReportToolUse(ctx, sdk.ToolUse{CallID: "c1", Tool: "Read", Paths: []string{".env"}})
	}
	if a.sloppyReport {
		return sdk.Result{}, h.ReportToolUse(ctx, sdk.ToolUse{Paths: []string{" "}})
	}
	return sdk.Result{}, nil
}

func (a *badAgent) Summarize(context.Context, string) (sdk.ContextArtifact, error) {
	return sdk.ContextArtifact{}, nil
}

type statefulBadAgent struct{ badAgent }

func (a *statefulBadAgent) ExportState(context.Context) ([]byte, error) {
	return json.Marshal(map[string]int{"n": 1})
}

func (a *statefulBadAgent) ImportState(_ context.Context, b []byte) error {
	var m map[string]int
	_ = json.Unmarshal(b, &m)
	if m["n"] != 1 {
		panic("state without n")
	}
	return nil
}

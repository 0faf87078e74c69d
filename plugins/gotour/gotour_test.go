package gotour

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

var (
	srcOnce sync.Once
	srcRoot string
)

// goSrc is $(go env GOROOT)/src, the tree the agent reads in these tests.
func goSrc(t testing.TB) string {
	t.Helper()
	srcOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err == nil {
			srcRoot = filepath.Join(strings.TrimSpace(string(out)), "src")
		}
	})
	if srcRoot == "" {
		t.Fatal("go env GOROOT failed; the gotour tests read the Go source tree")
	}
	return srcRoot
}

func TestConformance(t *testing.T) {
	root := goSrc(t)
	err := conformance.TestAgent(context.Background(), func() sdk.Agent { return New(root) },
		sdk.Task{Name: "summary", Prompt: "summary strings"},
		sdk.Task{Name: "symbol", Prompt: "symbol strings Builder.String"},
		sdk.Task{Name: "callers", Prompt: "callers errors Is"},
		sdk.Task{Name: "imports", Prompt: "imports encoding/json"},
	)
	if err != nil {
		t.Fatal(err)
	}
}

func TestQuestions(t *testing.T) {
	h := sdktest.New(t, New(goSrc(t)), conformance.Options{})
	tests := []struct {
		prompt string
		want   []string
	}{
		{"summary errors", []string{"package errors (errors):", "exported:", "largest:"}},
		{"symbol strings Builder", []string{"strings/builder.go:", "Builder struct", "// A Builder is used to efficiently build a string"}},
		{"symbol strings Builder.WriteString", []string{"func (b *Builder) WriteString(s string) (int, error)"}},
		{"symbol strings Repeat", []string{"func Repeat(s string, count int) string"}},
		{"callers errors Is", []string{"calls of Is", "errors/wrap.go"}},
		{"imports errors", []string{"errors imports", "internal/reflectlite"}},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			res, err := h.Run(context.Background(), sdk.Task{Prompt: tt.prompt})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output %q\ndoes not contain %q", res.Output, w)
				}
			}
		})
	}
}

func TestWarmSessionAnswersFromMemory(t *testing.T) {
	h := sdktest.New(t, New(goSrc(t)), conformance.Options{})
	ctx := context.Background()
	if _, err := h.Run(ctx, sdk.Task{ID: "cold", Prompt: "symbol bufio Reader"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run(ctx, sdk.Task{ID: "warm", Prompt: "callers bufio NewReader"}); err != nil {
		t.Fatal(err)
	}
	cold, warm := tools(h.Recorder.ToolUses("cold")), tools(h.Recorder.ToolUses("warm"))
	if cold["Read"] == 0 || cold["Recall"] != 0 {
		t.Errorf("cold session: got tool uses %v, want reads and no recall", cold)
	}
	if warm["Read"] != 0 || warm["Recall"] != 1 {
		t.Errorf("warm session: got tool uses %v, want one recall and no reads", warm)
	}
	// Every read, listing and recall was asked for first.
	for _, id := range []string{"cold", "warm"} {
		u := tools(h.Recorder.ToolUses(id))
		if calls := h.Recorder.Calls(id); len(calls) != u["Read"]+u["List"]+u["Recall"] || u["List"] != 1 {
			t.Errorf("%s session asked %d times for %v", id, len(calls), u)
		}
	}
	for _, u := range h.Recorder.ToolUses("warm") {
		if u.Tool == "Recall" && (u.Kind != sdk.KindRead || u.Outcome != sdk.OutcomeOK) {
			t.Errorf("recall: got %+v, want an OK use of kind read", u)
		}
	}
}

// TestRecallIsAskedAbout: a warm session does not answer from memory
// about files a guard now denies reading.
func TestRecallIsAskedAbout(t *testing.T) {
	h := sdktest.New(t, New(goSrc(t)), conformance.Options{})
	ctx := context.Background()
	if _, err := h.Run(ctx, sdk.Task{Prompt: "summary crypto/hmac"}); err != nil {
		t.Fatal(err)
	}
	h.Recorder.SetPolicy(func(_ string, c sdk.ToolCall) sdk.Verdict {
		if c.Kind == sdk.KindRead {
			return sdk.Verdict{Guard: "g", Reason: "crypto is off limits"}
		}
		return sdk.Verdict{Allow: true}
	})
	for _, prompt := range []string{"summary crypto/hmac", "symbol crypto/hmac New"} {
		_, err := h.Run(ctx, sdk.Task{Prompt: prompt})
		if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "crypto is off limits") {
			t.Errorf("%s: got %v, want the recall denied", prompt, err)
		}
	}
}

func TestStateRehydratesSummaries(t *testing.T) {
	root := goSrc(t)
	ctx := context.Background()
	first := sdktest.New(t, New(root), conformance.Options{})
	want, err := first.Run(ctx, sdk.Task{Prompt: "summary bytes"})
	if err != nil {
		t.Fatal(err)
	}
	state, err := first.Agent.(sdk.StateExporter).ExportState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fresh := New(root)
	second := sdktest.New(t, fresh, conformance.Options{})
	if err := second.Agent.(sdk.StateExporter).ImportState(ctx, state); err != nil {
		t.Fatal(err)
	}
	got, err := second.Run(ctx, sdk.Task{ID: "again", Prompt: "summary bytes"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Output != want.Output {
		t.Errorf("rehydrated answer:\n%s\nwant:\n%s", got.Output, want.Output)
	}
	if u := tools(second.Recorder.ToolUses("again")); u["Read"] != 0 || u["Recall"] != 1 {
		t.Errorf("rehydrated session: got tool uses %v, want only a recall", u)
	}
	if err := second.Agent.(sdk.StateExporter).ImportState(ctx, []byte(`{"version": 7}`)); err == nil || !strings.Contains(err.Error(), "version 7") {
		t.Errorf("future state version: got %v, want a refusal naming the version", err)
	}
}

// TestContextBesideThePrompt: in a chain, the question is the prompt as
// written; what earlier tasks learned comes beside it.
func TestContextBesideThePrompt(t *testing.T) {
	h := sdktest.New(t, New(goSrc(t)), conformance.Options{})
	res, err := h.Run(context.Background(), sdk.Task{
		Prompt:   "symbol net/http Server",
		Upstream: []sdk.Upstream{{Task: "overview", Version: 1, Artifact: sdk.ContextArtifact{KeyDecisions: []string{"net/http is package http"}}}},
		Context:  "# Context from Previous Steps\n- **Key Decision:** net/http is package http\n",
		Feedback: "be brief",
	})
	if err != nil || !strings.Contains(res.Output, "Server struct") {
		t.Fatalf("got %q, %v; want the declaration of Server", res.Output, err)
	}
}

func TestBadQuestions(t *testing.T) {
	h := sdktest.New(t, New(goSrc(t)), conformance.Options{})
	tests := []struct{ prompt, want string }{
		{"explain net/http", `unknown question "explain"`},
		{"summary", "ask one of: summary PKG"},
		{"symbol strings", `"symbol" takes a package and a name`},
		{"summary net/htp", "no package net/htp under"},
		{"summary ../etc", "must be a path inside the root"},
		{"symbol strings NoSuchThing", "no declaration of NoSuchThing"},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			_, err := h.Run(context.Background(), sdk.Task{Prompt: tt.prompt})
			if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want a permanent error containing %q", err, tt.want)
			}
		})
	}
}

func TestDeniedListing(t *testing.T) {
	h := sdktest.New(t, New(goSrc(t)), conformance.Options{Policy: conformance.DenyAll})
	_, err := h.Run(context.Background(), sdk.Task{ID: "t", Prompt: "summary strings"})
	if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "listing strings was denied") {
		t.Errorf("got %v, want a permanent error saying the listing was denied", err)
	}
}

func TestEveryReadDenied(t *testing.T) {
	h := sdktest.New(t, New(goSrc(t)), conformance.Options{Policy: func(_ string, c sdk.ToolCall) sdk.Verdict {
		if c.Tool == "Read" {
			return sdk.Verdict{Guard: "g", Reason: "crypto is off limits"}
		}
		return sdk.Verdict{Allow: true}
	}})
	_, err := h.Run(context.Background(), sdk.Task{Prompt: "summary crypto/hmac"})
	if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "cannot answer about crypto/hmac: reading crypto/hmac/hmac.go was denied: crypto is off limits") {
		t.Errorf("got %v", err)
	}
}

func TestArtifact(t *testing.T) {
	h := sdktest.New(t, New(goSrc(t)), conformance.Options{})
	res, err := h.Run(context.Background(), sdk.Task{ID: "t", Prompt: "summary os"})
	if err != nil {
		t.Fatal(err)
	}
	if art := res.Artifact; len(art.KeyDecisions) != 1 || !strings.HasPrefix(art.KeyDecisions[0], "os is package os:") || len(art.PotentialGotchas) == 0 {
		t.Errorf("got %+v, want the package summary and its build-constraint gotcha", res.Artifact)
	}
}

func tools(uses []sdk.ToolUse) map[string]int {
	m := make(map[string]int)
	for _, u := range uses {
		m[u.Tool]++
	}
	return m
}

// BenchmarkSummary measures what a warm session saves: the same question
// answered by a fresh agent (parsing) and by one that has seen the package.
func BenchmarkSummary(b *testing.B) {
	root := goSrc(b)
	host := conformance.NewRecorder(nil)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			if _, err := New(root).Run(ctx, sdk.Task{ID: "t", Prompt: "summary net/http"}, host.For("t")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		a := New(root)
		if _, err := a.Run(ctx, sdk.Task{ID: "t", Prompt: "symbol net/http Server"}, host.For("t")); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := a.Run(ctx, sdk.Task{ID: "t", Prompt: "callers net/http Error"}, host.For("t")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

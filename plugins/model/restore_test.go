package model_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/plugins/model"
	"github.com/hearth-dev/hearth/sdk"
)

// TestRestoredSessionSendsTheSameBytes: a session rehydrated from its
// exported state sends, for its earlier turns, the very bytes the live
// session sent, so that the provider's prompt cache, which matches a
// prefix by its text, serves it. The model writes its tool calls'
// arguments spaced ({"path": "x"}), as many OpenAI-compatible servers
// do: re-encoding them ({"path":"x"}) would be another prefix. The live
// session's next request and the restored one's are equal whole, and the
// restored one reads as much from the cache.
func TestRestoredSessionSendsTheSameBytes(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		f.SpacedArguments = true
		s := settings(f, provider, ws)
		ctx := context.Background()
		first, second := sdk.Task{ID: "t1", Prompt: "What does alpha do? ask:pkg/alpha"}, sdk.Task{ID: "t2", Prompt: "And beta? read:pkg/beta/beta.go"}

		live := harness(t, model.New(s), nil)
		if _, err := live.Run(ctx, first); err != nil {
			t.Fatal(err)
		}
		st, err := live.Agent.ExportState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := len(f.Requests())
		if _, err := live.Run(ctx, second); err != nil {
			t.Fatal(err)
		}
		liveReq := f.Requests()[n]
		// Chat Completions carries arguments as a string, sent back as
		// the model wrote it; Anthropic's SDK encodes an input object
		// afresh in every request, live or restored.
		if provider == model.ProviderOpenAI && !bytes.Contains(liveReq.Body, []byte(`{\"path\": \"pkg/alpha/alpha.go\"}`)) {
			t.Fatalf("the live request does not carry the arguments as the model wrote them:\n%s", liveReq.Body)
		}

		restored := harness(t, model.New(s), nil)
		if err := restored.Agent.ImportState(ctx, st); err != nil {
			t.Fatal(err)
		}
		n = len(f.Requests())
		if _, err := restored.Run(ctx, second); err != nil {
			t.Fatal(err)
		}
		got := f.Requests()[n]
		if !bytes.Equal(got.Body, liveReq.Body) {
			t.Errorf("the restored session's request differs from the live one's at byte %d:\nlive:     %s\nrestored: %s",
				diffAt(liveReq.Body, got.Body), around(liveReq.Body, diffAt(liveReq.Body, got.Body)), around(got.Body, diffAt(liveReq.Body, got.Body)))
		}
		if got.Usage.CachedInput < liveReq.Usage.CachedInput {
			t.Errorf("the restored request read %d tokens from the cache, the live one %d", got.Usage.CachedInput, liveReq.Usage.CachedInput)
		}
	})
}

// TestImportsStateVersion1: a state exported before inputs were kept as
// bytes (version 1: an input is an object) still rehydrates.
func TestImportsStateVersion1(t *testing.T) {
	f := fake(t)
	st := `{"version":1,"provider":"anthropic","model":"test-model","messages":[` +
		`{"role":"user","content":[{"type":"text","text":"q read:pkg/alpha/alpha.go"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"read","input":{"path":"pkg/alpha/alpha.go"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","id":"a","text":"package alpha"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"done"}]}]}`
	a := model.New(settings(f, model.ProviderAnthropic, workspace(t)))
	if err := a.ImportState(context.Background(), []byte(st)); err != nil {
		t.Fatal(err)
	}
	out, err := a.ExportState(context.Background())
	if err != nil || !strings.Contains(string(out), `"input":"{\"path\":\"pkg/alpha/alpha.go\"}"`) || !strings.Contains(string(out), `"version":2`) {
		t.Errorf("re-exported: %v\n%s\nwant version 2 with the input's bytes", err, out)
	}
}

// TestBaseURLWithOrWithoutVersion: a base_url works written either way,
// with the API version (as local servers document it) or without.
func TestBaseURLWithOrWithoutVersion(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		for _, base := range []string{f.URL, f.URL + "/", f.URL + "/v1", f.URL + "/v1/"} {
			s := settings(f, provider, ws)
			s.BaseURL = base
			if _, err := harness(t, model.New(s), nil).Run(context.Background(), sdk.Task{Prompt: "hello"}); err != nil {
				t.Errorf("base_url %q: %v", base, err)
			}
		}
	})
}

func diffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func around(b []byte, i int) string {
	return fmt.Sprintf("...%s...", b[max(0, i-80):min(len(b), i+80)])
}

package model_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/otlptest"
	"github.com/hearth-dev/hearth/internal/telemetry"
	"github.com/hearth-dev/hearth/sdk"
)

// TestModelCallsAreGenAISpans: under a host that traces to a real OTLP
// receiver, each of the model agent's model calls arrives as a GenAI
// "chat" span from the plugin, under the task's invoke_agent span, and
// their usage attributes add up to the task's accounting: the result's
// token metrics, the invoke_agent span's usage, and the task.succeeded
// event's tokens (what /metrics counts), with the model named.
func TestModelCallsAreGenAISpans(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		r, err := otlptest.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tp, err := telemetry.Start(context.Background(), telemetry.Settings{Block: true, Protocol: telemetry.ProtocolGRPC, Endpoint: r.Endpoint(telemetry.ProtocolGRPC)},
			telemetry.Options{Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tp.Shutdown(context.Background()) }()
		f, ws := fake(t), workspace(t)
		cfg := hostConfig(t, f, provider, ws, "")
		cfg.DataDir = t.TempDir()
		var (
			mu       sync.Mutex
			finished []hearth.Event
		)
		h, err := engine.New(engine.Options{Config: cfg, Telemetry: tp, Logger: hclog.NewNullLogger(), Observe: func(e *hearth.Event) {
			if e.Kind == hearth.EventTaskSucceeded {
				mu.Lock()
				finished = append(finished, *e)
				mu.Unlock()
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = h.Close(context.Background()) }()
		// Two questions on one session: the second reads from the cache.
		var outs []*hearth.Outcome
		for _, q := range []string{"What does alpha do? ask:pkg/alpha", "Which function returns 42? ask:pkg/alpha"} {
			out, err := h.Submit(context.Background(), hearth.Task{Agent: "ask", Prompt: q, Hints: sdk.Hints{Directories: []string{"pkg/alpha"}}})
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := tp.ForceFlush(ctx); err != nil {
			t.Fatal(err)
		}
		for i, out := range outs {
			m := out.Result.Metrics
			got, err := r.Wait(ctx, func(ss otlptest.Spans) bool {
				return len(ss.Trace(out.TraceID).Named("chat test-model")) == int(m["model_calls"])
			})
			if err != nil {
				t.Fatalf("task %d: %v", i, err)
			}
			tr := got.Trace(out.TraceID)
			invoke := tr.Named(telemetry.SpanInvoke + " ask")
			if len(invoke) != 1 {
				t.Fatalf("task %d: no invoke_agent span:\n%s", i, tr.Tree())
			}
			var in, cached, write, output int64
			for _, c := range tr.Named("chat test-model") {
				if p, _ := tr.Parent(c); p.SpanID != invoke[0].SpanID || c.Service != "hearth.ask" || c.Kind != "client" {
					t.Fatalf("task %d: model call %s from %q under %q, want the plugin's, under invoke_agent:\n%s", i, c.SpanID, c.Service, p.Name, tr.Tree())
				}
				if c.Attr("gen_ai.operation.name") != "chat" || c.Attr("gen_ai.provider.name") != provider || c.Attr("gen_ai.request.model") != "test-model" {
					t.Fatalf("task %d: model call attributes %v", i, c.Attrs)
				}
				in += c.Int("gen_ai.usage.input_tokens")
				cached += c.Int("gen_ai.usage.cache_read.input_tokens")
				write += c.Int("gen_ai.usage.cache_creation.input_tokens")
				output += c.Int("gen_ai.usage.output_tokens")
			}
			if in-cached != int64(m[sdk.MetricInputTokens]) || cached != int64(m[sdk.MetricCachedInputTokens]) ||
				write != int64(m[sdk.MetricCacheWriteTokens]) || output != int64(m[sdk.MetricOutputTokens]) || in == 0 || output == 0 {
				t.Fatalf("task %d: the calls' spans add up to input %d (cached %d, written %d), output %d; the result says %v", i, in, cached, write, output, m)
			}
			// Each call is one chat span: no other span is a chat
			// operation (Anthropic's SDK makes none), so a backend that
			// sums usage over chat spans counts each token once.
			if chats := tr.With("gen_ai.operation.name", "chat"); len(chats) != len(tr.Named("chat test-model")) {
				t.Errorf("task %d: %d chat spans for %d model calls, counting their tokens twice:\n%s", i, len(chats), len(tr.Named("chat test-model")), tr.Tree())
			}
			for _, c := range tr.Named("chat test-model") {
				if c.Attr("gen_ai.response.id") == "" {
					t.Errorf("task %d: model call %s has no gen_ai.response.id: %v", i, c.SpanID, c.Attrs)
				}
			}
			if i == 1 && cached == 0 {
				t.Errorf("the second question read nothing from the cache: %v", m)
			}
			if iv := invoke[0]; iv.Int("gen_ai.usage.input_tokens") != in || iv.Int("gen_ai.usage.output_tokens") != output ||
				iv.Int("gen_ai.usage.cache_read.input_tokens") != cached {
				t.Errorf("task %d: invoke_agent's usage %v, want the calls' sums (in %d, cached %d, out %d)", i, iv.Attrs, in, cached, output)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(finished) != 2 {
			t.Fatalf("%d task.succeeded events, want 2", len(finished))
		}
		for i, e := range finished {
			m := outs[i].Result.Metrics
			want := hearth.Tokens{Model: "test-model", Input: int64(m[sdk.MetricInputTokens]), CachedInput: int64(m[sdk.MetricCachedInputTokens]),
				CacheWrite: int64(m[sdk.MetricCacheWriteTokens]), Output: int64(m[sdk.MetricOutputTokens])}
			if e.Tokens == nil || *e.Tokens != want || e.Cost != outs[i].Result.Cost {
				t.Errorf("task %d's event: tokens %+v cost %v, want %+v and %v", i, e.Tokens, e.Cost, want, outs[i].Result.Cost)
			}
		}
	})
}

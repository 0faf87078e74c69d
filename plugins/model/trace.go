package model

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hearth-dev/hearth/internal/text"
)

// Each model call is a span of the OpenTelemetry GenAI conventions, "chat
// <model>", started from the task's context, so it joins the task's trace
// under the host's invoke_agent span when the host traces (the SDK
// installs the tracer provider; without one the global no-op provider
// makes this cost a call). Its usage attributes are the same counts the
// task's result adds up (Result.Metrics), one call's worth:
//
//	gen_ai.usage.input_tokens                 every input token: Input + CacheWrite + CachedInput
//	gen_ai.usage.cache_read.input_tokens      CachedInput
//	gen_ai.usage.cache_creation.input_tokens  CacheWrite
//	gen_ai.usage.output_tokens                Output
//
// so that the input_tokens metric of a task is the sum of its calls'
// input_tokens less their cache reads, and cached_input_tokens and
// output_tokens are the sums of theirs. It is the one span of the call
// that carries usage: Anthropic's SDK, which would make its own with the
// same counts, is told not to (anthropic.go). The agent depends on the
// OpenTelemetry API only, as any plugin author's would.

const scope = "github.com/hearth-dev/hearth/plugins/model"

// maxResponseID bounds the provider's response ID on a span; real ones
// are tens of bytes ("msg_01...", "chatcmpl-...").
const maxResponseID = 256

// complete is the provider's Complete in its span.
func (a *Agent) complete(ctx context.Context, r Request) (Response, error) {
	ctx, span := otel.Tracer(scope).Start(ctx, "chat "+a.s.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.GenAIOperationNameChat, providerAttr(a.s.Provider), semconv.GenAIRequestModel(a.s.Model)))
	defer span.End()
	resp, err := a.provider.Complete(ctx, r)
	if !span.IsRecording() {
		return resp, err
	}
	if r.MaxTokens > 0 {
		span.SetAttributes(semconv.GenAIRequestMaxTokens(r.MaxTokens))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return resp, err
	}
	u := resp.Usage
	span.SetAttributes(
		semconv.GenAIUsageInputTokens(int(u.Input+u.CacheWrite+u.CachedInput)),
		semconv.GenAIUsageCacheReadInputTokens(int(u.CachedInput)),
		semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWrite)),
		semconv.GenAIUsageOutputTokens(int(u.Output)),
	)
	if resp.StopReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(resp.StopReason))
	}
	if resp.ID != "" {
		// The endpoint's word, bounded: a span is no place for an
		// answer's megabytes.
		span.SetAttributes(semconv.GenAIResponseID(text.Prefix(resp.ID, maxResponseID)))
	}
	return resp, nil
}

func providerAttr(p string) attribute.KeyValue {
	switch p {
	case ProviderAnthropic:
		return semconv.GenAIProviderNameAnthropic
	case ProviderOpenAI:
		return semconv.GenAIProviderNameOpenAI
	}
	return semconv.GenAIProviderNameKey.String(p)
}

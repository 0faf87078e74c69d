package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/hearth-dev/hearth/sdk"
)

// Errors callers can test for with errors.Is.
var (
	// ErrRateLimited: the provider still refused for rate or load after
	// the retries, each made after its retry-after. The task may be
	// retried later.
	ErrRateLimited = errors.New("the model provider is rate limiting or overloaded")
	// ErrAuth: the provider refused the key. Permanent.
	ErrAuth = errors.New("the model provider refused the API key")
	// ErrBadRequest: the provider refused the request (a model name it
	// does not know, a prompt longer than the window). Permanent.
	ErrBadRequest = errors.New("the model provider refused the request")
)

// classifyStatus turns a provider's HTTP error into one that says what to
// do: an authentication failure or a bad request is permanent (retrying
// sends the same), a rate limit or overload that outlasted the SDK's
// retries is not.
func classifyStatus(status int, who, keyEnv string, err error) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		where := "the key"
		if keyEnv != "" {
			where = "the key in " + keyEnv
		}
		return sdk.Permanent(fmt.Errorf("model: %s: %w (HTTP %d): check %s, and that it may use this model: %v", who, ErrAuth, status, where, err))
	case status == http.StatusTooManyRequests || status == 529 || status >= 500 || status == http.StatusRequestTimeout || status == http.StatusConflict:
		return fmt.Errorf("model: %s: %w (HTTP %d) after the retries: %v", who, ErrRateLimited, status, err)
	case status == http.StatusNotFound:
		return sdk.Permanent(fmt.Errorf("model: %s: %w (HTTP 404): check the model name and base_url: %v", who, ErrBadRequest, err))
	default:
		return sdk.Permanent(fmt.Errorf("model: %s: %w (HTTP %d): %v", who, ErrBadRequest, status, err))
	}
}

// classifyTransport passes a cancelled task's error on as the context's,
// and any other (a refused connection, a reset) as a failure that may be
// retried.
func classifyTransport(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("model: reaching the provider: %w", err)
}

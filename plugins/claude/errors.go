package claude

import (
	"errors"
	"fmt"

	"github.com/hearth-dev/hearth/sdk"
)

// Errors callers can test for with errors.Is.
var (
	// ErrNoCLI: the claude program is not there, or is not Claude Code.
	// Permanent.
	ErrNoCLI = errors.New("claude code is not installed")
	// ErrOldCLI: the claude program is older than MinVersion. Permanent.
	ErrOldCLI = errors.New("claude code is too old")
	// ErrAuth: the model API refused the key. Permanent.
	ErrAuth = errors.New("the model API refused the API key")
	// ErrRateLimited: the model API still refused for rate or load after
	// Claude Code's retries, each made after the server's retry-after.
	// The task may be retried later.
	ErrRateLimited = errors.New("the model API is rate limiting or overloaded")
	// ErrMaxTurns: Claude Code reached max_turns without an answer.
	// Permanent: the same task would take as many turns again.
	ErrMaxTurns = errors.New("claude code reached its max_turns")
	// ErrFailed: Claude Code ended the task with an error of its own.
	ErrFailed = errors.New("claude code failed the task")
)

// authError is the permanent failure of a refused key, naming the
// variable to check.
func authError(status int, keyEnv, detail string) error {
	where := "the key"
	if keyEnv != "" {
		where = "the key in " + keyEnv
	}
	return sdk.Permanent(fmt.Errorf("claude: %w (HTTP %d): check %s, and that it may use this model: %s", ErrAuth, status, where, detail))
}

// apiError classifies the model API's final error status, as a result
// reports it (api_error_status): a refused key or request is permanent,
// a rate limit or overload that outlasted Claude Code's retries is not.
func apiError(status int, keyEnv, detail string) error {
	switch {
	case status == 401 || status == 403:
		return authError(status, keyEnv, detail)
	case status == 429 || status == 529 || status >= 500 || status == 408 || status == 409:
		return fmt.Errorf("claude: %w (HTTP %d) after Claude Code's retries: %s", ErrRateLimited, status, detail)
	}
	return sdk.Permanent(fmt.Errorf("claude: %w: the model API answered HTTP %d: %s", ErrFailed, status, detail))
}

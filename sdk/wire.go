package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth/sdk/internal/agentpb"
)

// This file translates between the SDK's Go types and the protobuf wire.
// Nothing else in the SDK touches agentpb message fields.

func infoToWire(i Info) *agentpb.Info {
	return &agentpb.Info{
		Name:         i.Name,
		Version:      i.Version,
		Description:  i.Description,
		Technologies: i.Technologies,
		Capacity:     int32(i.Capacity),
		ExportsState: i.ExportsState,
	}
}

func infoFromWire(m *agentpb.Info) Info {
	return Info{
		Name:         m.GetName(),
		Version:      m.GetVersion(),
		Description:  m.GetDescription(),
		Technologies: m.GetTechnologies(),
		Capacity:     int(m.GetCapacity()),
		ExportsState: m.GetExportsState(),
	}
}

func taskToWire(t Task) *agentpb.Task {
	return &agentpb.Task{
		Id:     t.ID,
		RunId:  t.Run,
		Name:   t.Name,
		Prompt: t.Prompt,
		Hints: &agentpb.Hints{
			Files:        t.Hints.Files,
			Directories:  t.Hints.Directories,
			Technologies: t.Hints.Technologies,
		},
		IdempotencyKey: t.IdempotencyKey,
		Attempt:        int32(t.Attempt),
		Metadata:       t.Metadata,
		SessionId:      t.Session,
	}
}

func taskFromWire(m *agentpb.Task) Task {
	h := m.GetHints()
	return Task{
		ID:     m.GetId(),
		Run:    m.GetRunId(),
		Name:   m.GetName(),
		Prompt: m.GetPrompt(),
		Hints: Hints{
			Files:        h.GetFiles(),
			Directories:  h.GetDirectories(),
			Technologies: h.GetTechnologies(),
		},
		IdempotencyKey: m.GetIdempotencyKey(),
		Attempt:        int(m.GetAttempt()),
		Metadata:       m.GetMetadata(),
		Session:        m.GetSessionId(),
	}
}

func resultToWire(r Result) *agentpb.RunResponse {
	return &agentpb.RunResponse{
		Output:   r.Output,
		Metrics:  r.Metrics,
		Cost:     r.Cost,
		ToolUses: r.ToolUses,
	}
}

func resultFromWire(m *agentpb.RunResponse) Result {
	return Result{
		Output:   m.GetOutput(),
		Metrics:  m.GetMetrics(),
		Cost:     m.GetCost(),
		ToolUses: m.GetToolUses(),
	}
}

func artifactToWire(a ContextArtifact) *agentpb.Artifact {
	var created int64
	if !a.CreatedAt.IsZero() {
		created = a.CreatedAt.UnixNano()
	}
	return &agentpb.Artifact{
		KeyDecisions:     a.KeyDecisions,
		ModifiedFiles:    a.ModifiedFiles,
		NewPatterns:      a.NewPatterns,
		PotentialGotchas: a.PotentialGotchas,
		SourceSession:    a.SourceSession,
		CreatedUnixNano:  created,
	}
}

func artifactFromWire(m *agentpb.Artifact) ContextArtifact {
	a := ContextArtifact{
		KeyDecisions:     m.GetKeyDecisions(),
		ModifiedFiles:    m.GetModifiedFiles(),
		NewPatterns:      m.GetNewPatterns(),
		PotentialGotchas: m.GetPotentialGotchas(),
		SourceSession:    m.GetSourceSession(),
	}
	if n := m.GetCreatedUnixNano(); n != 0 {
		a.CreatedAt = time.Unix(0, n).UTC()
	}
	return a
}

var outcomeToWire = map[Outcome]agentpb.Outcome{
	OutcomeOK:     agentpb.Outcome_OUTCOME_OK,
	OutcomeError:  agentpb.Outcome_OUTCOME_ERROR,
	OutcomeDenied: agentpb.Outcome_OUTCOME_DENIED,
}

func toolUseToWire(taskID string, u ToolUse) *agentpb.ToolUse {
	return &agentpb.ToolUse{
		TaskId:        taskID,
		CallId:        u.CallID,
		Tool:          u.Tool,
		Paths:         u.Paths,
		Technologies:  u.Technologies,
		Outcome:       outcomeToWire[u.Outcome],
		Error:         u.Error,
		DurationNanos: int64(u.Duration),
		Cost:          u.Cost,
		AtUnixNano:    u.At.UnixNano(),
	}
}

func toolUseFromWire(m *agentpb.ToolUse) ToolUse {
	var o Outcome
	switch m.GetOutcome() {
	case agentpb.Outcome_OUTCOME_ERROR:
		o = OutcomeError
	case agentpb.Outcome_OUTCOME_DENIED:
		o = OutcomeDenied
	}
	u := ToolUse{
		CallID:       m.GetCallId(),
		Tool:         m.GetTool(),
		Paths:        m.GetPaths(),
		Technologies: m.GetTechnologies(),
		Outcome:      o,
		Error:        m.GetError(),
		Duration:     time.Duration(m.GetDurationNanos()),
		Cost:         m.GetCost(),
	}
	if n := m.GetAtUnixNano(); n != 0 {
		u.At = time.Unix(0, n)
	}
	return u
}

func toolCallToWire(taskID string, c ToolCall) (*agentpb.ToolCall, error) {
	m := &agentpb.ToolCall{TaskId: taskID, CallId: c.CallID, Tool: c.Tool, Paths: c.Paths, InputJson: c.RawInput}
	if c.Input != nil && c.RawInput == nil {
		b, err := json.Marshal(c.Input)
		if err != nil {
			return nil, fmt.Errorf("tool call %q: input is not JSON-encodable: %w", c.Tool, err)
		}
		m.InputJson = b
	}
	return m, nil
}

// toolCallFromWire leaves the input as JSON: the host decodes it only if
// it needs it (ToolCall.DecodeInput). Decoding every input cost more than
// the rest of answering a question without guards.
func toolCallFromWire(m *agentpb.ToolCall) (ToolCall, error) {
	c := ToolCall{CallID: m.GetCallId(), Tool: m.GetTool(), Paths: m.GetPaths()}
	if b := m.GetInputJson(); len(b) > 0 {
		if !json.Valid(b) {
			return c, fmt.Errorf("tool call %q: input is not valid JSON", c.Tool)
		}
		c.RawInput = b
	}
	return c, nil
}

func filesToWire(fs []File) *agentpb.FileList {
	out := &agentpb.FileList{Files: make([]*agentpb.RunFile, len(fs))}
	for i, f := range fs {
		out.Files[i] = &agentpb.RunFile{Name: f.Name, Path: f.Path, Sha256: f.SHA256, Size: f.Size}
	}
	return out
}

func filesFromWire(m *agentpb.FileList) []File {
	out := make([]File, len(m.GetFiles()))
	for i, f := range m.GetFiles() {
		out[i] = File{Name: f.GetName(), Path: f.GetPath(), SHA256: f.GetSha256(), Size: f.GetSize()}
	}
	return out
}

// toStatus maps an error returned by an agent or host implementation to a
// gRPC status, so that its kind survives the process boundary.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, ErrPermanent):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, ErrStateNotSupported):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, ErrNotOwner):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, ErrNoRun):
		return status.Error(codes.OutOfRange, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

// ownerError is ErrNotOwner as it comes back across the wire: the host's
// message (naming the agent and the section) is the whole text.
type ownerError struct{ msg string }

func (e *ownerError) Error() string        { return e.msg }
func (e *ownerError) Is(target error) bool { return target == ErrNotOwner }

// panicPrefix starts the message of a panic the plugin recovered.
const panicPrefix = "agent panicked in "

// deadlineSlack is how close to its deadline a caller's context must be for
// a remote cancellation to count as that deadline passing.
const deadlineSlack = 50 * time.Millisecond

// fromStatus is the inverse of toStatus: it turns a gRPC error back into an
// error that errors.Is recognizes. ctx is the caller's context, consulted
// so that a cancellation by the caller reads as the caller's own error.
func fromStatus(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	msg := st.Message()
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded:
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", op, context.Cause(ctx))
		}
		// The plugin's copy of the caller's deadline can fire a moment
		// before the caller's own.
		if d, ok := ctx.Deadline(); ok && time.Until(d) < deadlineSlack {
			return fmt.Errorf("%s: %s: %w", op, msg, context.DeadlineExceeded)
		}
		if st.Code() == codes.DeadlineExceeded {
			return fmt.Errorf("%s: %s: %w", op, msg, context.DeadlineExceeded)
		}
		return fmt.Errorf("%s: %s: %w", op, msg, context.Canceled)
	case codes.FailedPrecondition:
		return fmt.Errorf("%s: %w", op, &permanentError{errors.New(msg)})
	case codes.Unimplemented:
		return fmt.Errorf("%s: %s: %w", op, msg, errors.ErrUnsupported)
	case codes.Internal:
		// gRPC reports its own transport and encoding failures as
		// Internal too: only the SDK's recovered panics say so.
		if strings.HasPrefix(msg, panicPrefix) {
			return fmt.Errorf("%s: %s: %w", op, msg, ErrAgentPanicked)
		}
	case codes.Unavailable:
		return fmt.Errorf("%s: %s: %w", op, msg, ErrConnectionLost)
	case codes.PermissionDenied:
		return fmt.Errorf("%s: %w", op, &ownerError{msg})
	case codes.OutOfRange:
		return fmt.Errorf("%s: %s: %w", op, msg, ErrNoRun)
	}
	return fmt.Errorf("%s: %s", op, msg)
}

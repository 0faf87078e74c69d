package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth/internal/protoconv"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/internal/agentpb"
)

// This file translates between the SDK's Go types and the protobuf wire.
// Nothing else in the SDK touches agentpb message fields. Times are
// encoded as the daemon API and the store encode them (package
// internal/protoconv), and read back in UTC.

func infoToWire(i sdk.Info, exportsState bool) *agentpb.Info {
	return &agentpb.Info{
		Name:         i.Name,
		Version:      i.Version,
		Description:  i.Description,
		Technologies: i.Technologies,
		Capacity:     int32(i.Capacity),
		ExportsState: exportsState,
	}
}

func infoFromWire(m *agentpb.Info) sdk.Info {
	return sdk.Info{
		Name:         m.GetName(),
		Version:      m.GetVersion(),
		Description:  m.GetDescription(),
		Technologies: m.GetTechnologies(),
		Capacity:     int(m.GetCapacity()),
	}
}

func taskToWire(t sdk.Task) *agentpb.Task {
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
		Upstream:       upstreamToWire(t.Upstream),
		Context:        t.Context,
		Feedback:       t.Feedback,
	}
}

func upstreamToWire(us []sdk.Upstream) []*agentpb.Upstream {
	if len(us) == 0 {
		return nil
	}
	out := make([]*agentpb.Upstream, len(us))
	for i, u := range us {
		out[i] = &agentpb.Upstream{
			Task:            u.Task,
			Version:         int32(u.Version),
			SessionId:       u.Session,
			CreatedUnixNano: protoconv.UnixNano(u.CreatedAt),
			Artifact:        artifactToWire(u.Artifact),
		}
	}
	return out
}

func upstreamFromWire(ms []*agentpb.Upstream) []sdk.Upstream {
	if len(ms) == 0 {
		return nil
	}
	out := make([]sdk.Upstream, len(ms))
	for i, m := range ms {
		out[i] = sdk.Upstream{
			Task:      m.GetTask(),
			Version:   int(m.GetVersion()),
			Session:   m.GetSessionId(),
			CreatedAt: protoconv.Time(m.GetCreatedUnixNano()).UTC(),
			Artifact:  artifactFromWire(m.GetArtifact()),
		}
	}
	return out
}

func taskFromWire(m *agentpb.Task) sdk.Task {
	h := m.GetHints()
	return sdk.Task{
		ID:     m.GetId(),
		Run:    m.GetRunId(),
		Name:   m.GetName(),
		Prompt: m.GetPrompt(),
		Hints: sdk.Hints{
			Files:        h.GetFiles(),
			Directories:  h.GetDirectories(),
			Technologies: h.GetTechnologies(),
		},
		IdempotencyKey: m.GetIdempotencyKey(),
		Attempt:        int(m.GetAttempt()),
		Metadata:       m.GetMetadata(),
		Session:        m.GetSessionId(),
		Upstream:       upstreamFromWire(m.GetUpstream()),
		Context:        m.GetContext(),
		Feedback:       m.GetFeedback(),
	}
}

// resultToWire encodes a result with the number of tool-use reports the
// host acknowledged for its task.
func resultToWire(r sdk.Result, toolUses uint64) *agentpb.RunResponse {
	return &agentpb.RunResponse{
		Output:   r.Output,
		Metrics:  r.Metrics,
		Cost:     r.Cost,
		ToolUses: toolUses,
		Artifact: artifactToWire(r.Artifact),
	}
}

func resultFromWire(m *agentpb.RunResponse) sdk.Result {
	return sdk.Result{
		Output:   m.GetOutput(),
		Metrics:  m.GetMetrics(),
		Cost:     m.GetCost(),
		Artifact: artifactFromWire(m.GetArtifact()),
	}
}

func artifactToWire(a sdk.ContextArtifact) *agentpb.Artifact {
	if a.Empty() {
		return nil
	}
	return &agentpb.Artifact{
		KeyDecisions:     a.KeyDecisions,
		ModifiedFiles:    a.ModifiedFiles,
		NewPatterns:      a.NewPatterns,
		PotentialGotchas: a.PotentialGotchas,
	}
}

// artifactFromWire decodes an artifact. The version-1 fields
// source_session and created_unix_nano are not read: the host knows where
// and when a task ran.
func artifactFromWire(m *agentpb.Artifact) sdk.ContextArtifact {
	return sdk.ContextArtifact{
		KeyDecisions:     m.GetKeyDecisions(),
		ModifiedFiles:    m.GetModifiedFiles(),
		NewPatterns:      m.GetNewPatterns(),
		PotentialGotchas: m.GetPotentialGotchas(),
	}
}

var outcomeToWire = map[sdk.ToolOutcome]agentpb.Outcome{
	sdk.OutcomeOK:     agentpb.Outcome_OUTCOME_OK,
	sdk.OutcomeError:  agentpb.Outcome_OUTCOME_ERROR,
	sdk.OutcomeDenied: agentpb.Outcome_OUTCOME_DENIED,
}

// checkToolUse is what the SDK refuses to send: a tool use without an
// outcome or with a kind it does not know.
func checkToolUse(u sdk.ToolUse) error {
	switch u.Outcome {
	case sdk.OutcomeOK, sdk.OutcomeError, sdk.OutcomeDenied:
	case sdk.OutcomeUnset:
		return fmt.Errorf("tool use %q has no outcome: set ToolUse.Outcome to OutcomeOK, OutcomeError or OutcomeDenied", u.Tool)
	default:
		return fmt.Errorf("tool use %q has an unknown outcome %d: set ToolUse.Outcome to OutcomeOK, OutcomeError or OutcomeDenied", u.Tool, u.Outcome)
	}
	if !u.Kind.Valid() {
		return fmt.Errorf("tool use %q has an unknown kind %q: use one of the sdk.Kind constants, or leave it empty", u.Tool, u.Kind)
	}
	return nil
}

func toolUseToWire(taskID string, u sdk.ToolUse) *agentpb.ToolUse {
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
		AtUnixNano:    protoconv.UnixNano(u.At),
		Kind:          string(u.Kind),
	}
}

// toolUseFromWire decodes a tool use; OUTCOME_UNSPECIFIED becomes
// OutcomeUnset, which the caller refuses or, for protocol version 1,
// reads as OutcomeOK.
func toolUseFromWire(m *agentpb.ToolUse) sdk.ToolUse {
	var o sdk.ToolOutcome
	switch m.GetOutcome() {
	case agentpb.Outcome_OUTCOME_OK:
		o = sdk.OutcomeOK
	case agentpb.Outcome_OUTCOME_ERROR:
		o = sdk.OutcomeError
	case agentpb.Outcome_OUTCOME_DENIED:
		o = sdk.OutcomeDenied
	}
	u := sdk.ToolUse{
		CallID:       m.GetCallId(),
		Tool:         m.GetTool(),
		Kind:         sdk.ToolKind(m.GetKind()),
		Paths:        m.GetPaths(),
		Technologies: m.GetTechnologies(),
		Outcome:      o,
		Error:        m.GetError(),
		Duration:     time.Duration(m.GetDurationNanos()),
		Cost:         m.GetCost(),
	}
	u.At = protoconv.Time(m.GetAtUnixNano()).UTC()
	return u
}

func toolCallToWire(taskID string, c sdk.ToolCall) (*agentpb.ToolCall, error) {
	if !c.Kind.Valid() {
		return nil, fmt.Errorf("tool call %q has an unknown kind %q: use one of the sdk.Kind constants, or leave it empty", c.Tool, c.Kind)
	}
	m := &agentpb.ToolCall{TaskId: taskID, CallId: c.CallID, Tool: c.Tool, Kind: string(c.Kind), Paths: c.Paths, InputJson: c.RawInput}
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
func toolCallFromWire(m *agentpb.ToolCall) (sdk.ToolCall, error) {
	c := sdk.ToolCall{CallID: m.GetCallId(), Tool: m.GetTool(), Kind: sdk.ToolKind(m.GetKind()), Paths: m.GetPaths()}
	if b := m.GetInputJson(); len(b) > 0 {
		if !json.Valid(b) {
			return c, fmt.Errorf("tool call %q: input is not valid JSON", c.Tool)
		}
		c.RawInput = b
	}
	return c, nil
}

func filesToWire(fs []sdk.File) *agentpb.FileList {
	out := &agentpb.FileList{Files: make([]*agentpb.RunFile, len(fs))}
	for i, f := range fs {
		out.Files[i] = &agentpb.RunFile{Name: f.Name, Path: f.Path, Sha256: f.SHA256, Size: f.Size}
	}
	return out
}

func filesFromWire(m *agentpb.FileList) []sdk.File {
	out := make([]sdk.File, len(m.GetFiles()))
	for i, f := range m.GetFiles() {
		out[i] = sdk.File{Name: f.GetName(), Path: f.GetPath(), SHA256: f.GetSha256(), Size: f.GetSize()}
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
	case errors.Is(err, sdk.ErrPermanent):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, sdk.ErrStateNotSupported):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, sdk.ErrNotOwner):
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

// ownerError is ErrNotOwner as it comes back across the wire: the host's
// message (naming the agent and the section) is the whole text.
type ownerError struct{ msg string }

func (e *ownerError) Error() string        { return e.msg }
func (e *ownerError) Is(target error) bool { return target == sdk.ErrNotOwner }

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
		return fmt.Errorf("%s: %w", op, sdk.Permanent(errors.New(msg)))
	case codes.Unimplemented:
		return fmt.Errorf("%s: %s: %w", op, msg, errors.ErrUnsupported)
	case codes.Internal:
		// gRPC reports its own transport and encoding failures as
		// Internal too: only the SDK's recovered panics say so.
		if strings.HasPrefix(msg, panicPrefix) {
			return fmt.Errorf("%s: %s: %w", op, msg, sdk.ErrAgentPanicked)
		}
	case codes.Unavailable:
		return fmt.Errorf("%s: %s: %w", op, msg, sdk.ErrConnectionLost)
	case codes.PermissionDenied:
		return fmt.Errorf("%s: %w", op, &ownerError{msg})
	}
	return fmt.Errorf("%s: %s", op, msg)
}

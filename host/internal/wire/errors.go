package wire

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/apipb"
)

// MaxMessage bounds a message either way: a hook payload may carry a
// whole file (claudecode.MaxPayload, 16 MiB), and a run's outputs can be large.
// gRPC's default, 4 MiB, is too small for both.
const MaxMessage = 32 << 20

// MaxReply bounds what a client receives: a run's outputs come in one
// reply, each up to hearth.MaxOutput, so a reply may hold many of them.
const MaxReply = 1 << 30

// Errors of the wire's own.
var (
	// ErrBadPayload is wrapped by the errors of hook payloads that cannot
	// be read; the server reports it as INVALID_ARGUMENT.
	ErrBadPayload = errors.New("bad hook payload")
	// ErrUnreachable is wrapped by the errors of calls that did not reach
	// the daemon or lost it on the way (UNAVAILABLE with no reason of the
	// host's): the client's ErrUnreachable.
	ErrUnreachable = errors.New("the hearth daemon cannot be reached")
	// ErrBadRecord is wrapped by the errors of a cluster listing with a
	// record the client cannot read (its JSON too long, or not a record's
	// JSON); the error names the host.
	ErrBadRecord = errors.New("bad cluster record")
)

// kinds maps the errors that cross the boundary to their code and reason.
var kinds = []struct {
	err    error
	code   codes.Code
	reason string
}{
	{hearth.ErrUnknownAgent, codes.NotFound, "UNKNOWN_AGENT"},
	{hearth.ErrUnknownSession, codes.NotFound, "UNKNOWN_SESSION"},
	{hearth.ErrUnknownRun, codes.NotFound, "UNKNOWN_RUN"},
	{hearth.ErrRunActive, codes.FailedPrecondition, "RUN_ACTIVE"},
	{hearth.ErrRunInvalid, codes.FailedPrecondition, "RUN_INVALID"},
	{hearth.ErrIllegalTransition, codes.FailedPrecondition, "ILLEGAL_TRANSITION"},
	{hearth.ErrExternalAgent, codes.FailedPrecondition, "EXTERNAL_AGENT"},
	{hearth.ErrNotExternal, codes.FailedPrecondition, "NOT_EXTERNAL"},
	{hearth.ErrSessionID, codes.InvalidArgument, "SESSION_ID"},
	{hearth.ErrDenied, codes.PermissionDenied, "DENIED"},
	{hearth.ErrClosed, codes.Unavailable, "CLOSED"},
	{hearth.ErrNoSpace, codes.ResourceExhausted, "NO_SPACE"},
	{ErrBadPayload, codes.InvalidArgument, "BAD_PAYLOAD"},
	{hearth.ErrHookPayload, codes.InvalidArgument, "BAD_HOOK_PAYLOAD"},
	{hearth.ErrConfig, codes.InvalidArgument, "CONFIG"},
	// A task whose plugin failed under it: the task did not run to its
	// end, and may be tried again.
	{hearth.ErrPluginStart, codes.Aborted, "PLUGIN_START"},
	{hearth.ErrChecksumMismatch, codes.Aborted, "CHECKSUM_MISMATCH"},
	{hearth.ErrConfinement, codes.Aborted, "CONFINEMENT"},
	{hearth.ErrStartTimeout, codes.Aborted, "START_TIMEOUT"},
	{hearth.ErrHandshake, codes.Aborted, "HANDSHAKE"},
	{hearth.ErrProtocolVersion, codes.Aborted, "PROTOCOL_VERSION"},
	{hearth.ErrPluginExited, codes.Aborted, "PLUGIN_EXITED"},
	{hearth.ErrPluginHung, codes.Aborted, "PLUGIN_HUNG"},
	{hearth.ErrRehydrate, codes.Aborted, "REHYDRATE"},
}

// Status turns an error of the host into a gRPC status error: the message
// is the error's text, the code and ErrorInfo reason say what kind it is.
func Status(err error) error {
	if err == nil {
		return nil
	}
	// A status the server made itself goes as it is; one wrapped deeper
	// belongs to a plugin (a task's failure), whose code means nothing
	// to the client.
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		return err
	}
	code, reason := codes.Unknown, ""
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			code, reason = k.code, k.reason
			break
		}
	}
	if reason == "" {
		switch {
		case errors.Is(err, context.Canceled):
			code = codes.Canceled
		case errors.Is(err, context.DeadlineExceeded):
			code = codes.DeadlineExceeded
		}
	}
	st := status.New(code, err.Error())
	if reason != "" {
		if d, derr := st.WithDetails(&apipb.ErrorInfo{Reason: reason}); derr == nil {
			st = d
		}
	}
	return st.Err()
}

// Error is an error the daemon returned: its message is the daemon's
// error text, and it wraps the host's sentinel error its reason names,
// if any, so errors.Is(err, hearth.ErrUnknownRun) works across the socket.
type Error struct {
	Code    codes.Code
	Reason  string
	Message string
	err     error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel error of the reason, or nil.
func (e *Error) Unwrap() error { return e.err }

// GRPCStatus lets status.FromError see the original status.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// ErrorOf turns a gRPC status error back into an error that wraps the
// sentinel its reason names. ctx is the call's: a call its caller
// cancelled returns the context's error.
func ErrorOf(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	if ctx.Err() != nil && (st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded) {
		return context.Cause(ctx)
	}
	e := &Error{Code: st.Code(), Message: st.Message()}
	for _, d := range st.Details() {
		if info, ok := d.(*apipb.ErrorInfo); ok {
			e.Reason = info.GetReason()
		}
	}
	for _, k := range kinds {
		if k.reason == e.Reason {
			e.err = k.err
			break
		}
	}
	switch {
	case e.err != nil:
	case st.Code() == codes.Canceled:
		e.err = context.Canceled
	case st.Code() == codes.DeadlineExceeded:
		e.err = context.DeadlineExceeded
	case st.Code() == codes.Unavailable:
		e.err = ErrUnreachable
	}
	return e
}

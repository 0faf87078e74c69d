// Package claudecode turns Claude Code's hooks into hearth's external
// sessions. Claude Code calls a hook at each point of a session's life
// (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop,
// SessionEnd, ...) with a JSON payload: on a command hook's stdin
// (`hearth hook`, which forwards it to the daemon) or as an HTTP hook's
// POST body (the daemon's /hooks/claude-code). Handle reads the payload,
// reports it to the host, and returns what the hook answers Claude Code.
//
// What each event does:
//
//	SessionStart      the session is live (new, or again after it ended)
//	UserPromptSubmit  a turn begins: the session is busy
//	PreToolUse        the pre_tool_use guards decide; a denial answers
//	                  permissionDecision "deny" with the guard's message
//	PostToolUse       the tool use is recorded: Read, Glob, Grep, LS,
//	                  Write, Edit, MultiEdit and NotebookEdit name files
//	                  and directories for the session's fingerprint, and
//	                  so does a Bash command's words that name what exists
//	PostToolUseFailure the failed use is recorded as failed; a Bash
//	                  command that failed still ran where it names, and
//	                  teaches the fingerprint that
//	Stop              the turn ended: the session is idle
//	SessionEnd        the session is dormant, its fingerprint kept
//
// Other events are accepted and answered with nothing. Only a denial
// answers anything: an empty answer leaves Claude Code's own permission
// flow as it is (hearth never approves a tool use on a person's behalf).
//
// Paths are taken as Claude Code gives them: absolute (a relative one is
// joined to the session's cwd). A tool that works on a directory (Glob,
// Grep and LS without a path) works in cwd. The pre_tool_use guards read
// the whole tool input themselves (package host/guard): the payload's
// cwd is what its relative paths and shell commands are read against.
package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/claudecode/answer"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// MaxPayload bounds a payload: a Write of a large file carries the whole
// file in tool_input.
const MaxPayload = answer.MaxPayload

// ErrPayload is wrapped by every error about a payload. It is
// hearth.ErrHookPayload, so that the daemon's client maps it without
// importing this package (and the guards it reads tool inputs with).
var ErrPayload = hearth.ErrHookPayload

// Hook events.
const (
	SessionStart       = answer.SessionStart
	UserPromptSubmit   = answer.UserPromptSubmit
	PreToolUse         = answer.PreToolUse
	PostToolUse        = answer.PostToolUse
	PostToolUseFailure = answer.PostToolUseFailure
	Stop               = answer.Stop
	SessionEnd         = answer.SessionEnd
)

// Payload is one hook call, with the fields hearth reads. Claude Code
// sends more (permission_mode, prompt, ...), which are ignored: new
// versions add fields, and a hook must not break on them.
type Payload struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path,omitempty"`
	Cwd            string          `json:"cwd,omitempty"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	ToolResponse   json.RawMessage `json:"tool_response,omitempty"`
	// Reason is why a session ended (SessionEnd); Source, how one
	// started (SessionStart: startup, resume, clear, compact).
	Reason string `json:"reason,omitempty"`
	Source string `json:"source,omitempty"`
	// Error is a failed tool use's error (PostToolUseFailure).
	Error string `json:"error,omitempty"`
}

// Parse reads a payload. Its errors wrap ErrPayload and say where the
// payload is wrong (line and column for broken JSON) and what it lacks.
func Parse(b []byte) (*Payload, error) {
	if len(b) > MaxPayload {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d MiB a hook payload may have", ErrPayload, len(b), MaxPayload>>20)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%w: it is empty; a hook gets Claude Code's JSON on stdin (or as the POST body)", ErrPayload)
	}
	var p Payload
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrPayload, jsonError(b, err))
	}
	switch {
	case p.SessionID == "":
		return nil, fmt.Errorf("%w: session_id is missing; is this a Claude Code hook payload?", ErrPayload)
	case p.HookEventName == "":
		return nil, fmt.Errorf("%w: hook_event_name is missing; is this a Claude Code hook payload?", ErrPayload)
	case (p.HookEventName == PreToolUse || p.HookEventName == PostToolUse || p.HookEventName == PostToolUseFailure) && p.ToolName == "":
		return nil, fmt.Errorf("%w: a %s payload needs tool_name", ErrPayload, p.HookEventName)
	}
	if len(p.ToolInput) > 0 && !isNull(p.ToolInput) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(p.ToolInput, &obj); err != nil {
			return nil, fmt.Errorf("%w: tool_input must be a JSON object (%v)", ErrPayload, err)
		}
	}
	return &p, nil
}

func isNull(b json.RawMessage) bool { return string(bytes.TrimSpace(b)) == "null" }

// jsonError places a JSON decoding error at its line and column.
func jsonError(b []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included; at
		// the end of the input, there is none: point just past it.
		off = max(se.Offset-1, 0)
		if strings.HasPrefix(se.Error(), "unexpected end") {
			off = se.Offset
		}
	case errors.As(err, &te):
		off = te.Offset
		if te.Field != "" {
			return fmt.Sprintf("%s must be a %s, not %s (%s)", te.Field, te.Type, te.Value, position(b, off))
		}
	}
	if off < 0 {
		return "invalid JSON: " + err.Error()
	}
	return fmt.Sprintf("invalid JSON at %s: %v", position(b, off), err)
}

// position is "line L, column C" of byte offset off in b.
func position(b []byte, off int64) string {
	off = max(0, min(off, int64(len(b))))
	line := 1 + bytes.Count(b[:off], []byte{'\n'})
	col := off - int64(bytes.LastIndexByte(b[:off], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}

// EventName is answer.EventName: a payload's hook_event_name, or, for a
// payload that does not decode, PreToolUse or "" (see there).
func EventName(b []byte) string { return answer.EventName(b) }

// Answer is what the hook answers Claude Code: the JSON to print on
// stdout (or return as the HTTP body), nil for nothing.
type Answer = answer.Answer

// Deny is answer.Deny: the answer that refuses a PreToolUse with reason.
func Deny(reason string) Answer { return answer.Deny(reason) }

// DenyNotice is answer.DenyNotice: Deny, with a notice for the person.
func DenyNotice(reason, notice string) Answer { return answer.DenyNotice(reason, notice) }

// Notice is answer.Notice: an answer that decides nothing and shows the
// person msg.
func Notice(msg string) Answer { return answer.Notice(msg) }

// Failed is answer.Failed: the answer to a hook call hearth could not
// handle, failing closed (deny) or open.
func Failed(event string, deny bool, why string) Answer { return answer.Failed(event, deny, why) }

// Sessions is what Handle reports to: the external sessions of an engine
// (package host/engine).
type Sessions interface {
	AttachExternal(ctx context.Context, ref hearth.ExternalRef) error
	ExternalTurn(ctx context.Context, ref hearth.ExternalRef, busy bool) error
	DetachExternal(ctx context.Context, ref hearth.ExternalRef, reason string) error
	CheckExternalToolUse(ctx context.Context, ref hearth.ExternalRef, call sdk.ToolCall) (sdk.Verdict, error)
	ReportExternalToolUse(ctx context.Context, ref hearth.ExternalRef, u sdk.ToolUse) error
}

// Handle reports p to h for the external agent agent (empty: the
// config's hooks.agent) and returns the hook's answer.
func Handle(ctx context.Context, h Sessions, agent string, p *Payload) (Answer, error) {
	ref := hearth.ExternalRef{Agent: agent, Session: p.SessionID, Workspace: p.Cwd}
	switch p.HookEventName {
	case SessionStart:
		return nil, h.AttachExternal(ctx, ref)
	case UserPromptSubmit:
		return nil, h.ExternalTurn(ctx, ref, true)
	case Stop:
		return nil, h.ExternalTurn(ctx, ref, false)
	case SessionEnd:
		return nil, h.DetachExternal(ctx, ref, p.Reason)
	case PreToolUse:
		call := Call(p)
		v, err := h.CheckExternalToolUse(ctx, ref, call)
		if err != nil {
			return nil, err
		}
		if !v.Allow {
			reason := v.Reason
			if v.Guard != "" {
				reason = fmt.Sprintf("%s (hearth guard %q)", v.Reason, v.Guard)
			}
			return Deny(reason), nil
		}
		return nil, nil
	case PostToolUse, PostToolUseFailure:
		return nil, h.ReportExternalToolUse(ctx, ref, Use(p))
	}
	return nil, nil
}

// Call is the tool call a PreToolUse payload asks about. A Bash
// command's paths are left to the guards, which read the whole command
// as the shell will (Paths reads only what exists, for the fingerprint).
func Call(p *Payload) sdk.ToolCall {
	c := sdk.ToolCall{CallID: p.ToolUseID, Tool: p.ToolName, Kind: Kind(p.ToolName), RawInput: p.ToolInput}
	if p.ToolName != "Bash" {
		c.Paths = Paths(p.ToolName, p.ToolInput, p.Cwd)
	}
	if isNull(c.RawInput) {
		c.RawInput = nil
	}
	return c
}

// Use is the tool use a PostToolUse or PostToolUseFailure payload
// reports.
func Use(p *Payload) sdk.ToolUse {
	u := sdk.ToolUse{CallID: p.ToolUseID, Tool: p.ToolName, Kind: Kind(p.ToolName), Paths: Paths(p.ToolName, p.ToolInput, p.Cwd), Outcome: sdk.OutcomeOK}
	if p.HookEventName == PostToolUseFailure || failed(p.ToolResponse) {
		u.Outcome, u.Error = sdk.OutcomeError, p.Error
	}
	return u
}

// failed reports whether a tool_response says the tool failed.
func failed(resp json.RawMessage) bool {
	if len(resp) == 0 {
		return false
	}
	var r struct {
		Success *bool `json:"success"`
		IsError bool  `json:"is_error"`
	}
	if json.Unmarshal(resp, &r) != nil {
		return false
	}
	return r.IsError || (r.Success != nil && !*r.Success)
}

// Paths are the files and directories a tool use names, for the
// session's fingerprint: absolute (a relative path is joined to cwd),
// clean, as given (not through symbolic links). A directory ends in
// "/": the fingerprint tells directories from files by it. The fields
// are read as the guards read them (guard.Named): Read, Write, Edit,
// MultiEdit, NotebookEdit and NotebookRead name a file; LS, and Glob
// (its pattern's leading directories), a directory; Grep's path is a
// file or a directory, as the file system says. A Bash command names
// what its words name that exists (guard.NamedByCommand): today's
// Claude Code lists and searches through Bash (ls, grep, find), so its
// commands are much of what a session learns.
func Paths(tool string, input json.RawMessage, cwd string) []string {
	var targets []guard.Target
	if tool == "Bash" {
		var in struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(input, &in) != nil {
			return nil
		}
		targets = guard.NamedByCommand(in.Command, cwd)
	} else {
		targets = guard.Named(guard.Call{Tool: tool, RawInput: input, Cwd: cwd})
	}
	var out []string
	for _, t := range targets {
		p := t.Path
		if t.Dir && p != "/" {
			p += "/"
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Kind is what Claude Code's tool does, for the fingerprint: Bash runs a
// command (sdk.KindExec: a command that failed still ran where it
// names); other tools are read from their names by the host.
func Kind(tool string) sdk.ToolKind {
	if tool == "Bash" {
		return sdk.KindExec
	}
	return ""
}

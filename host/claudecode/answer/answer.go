// Package answer is what a Claude Code hook answers, and the little a hook
// must read of a payload to answer it when hearth cannot handle it (its
// event): the part of package host/claudecode that a hook relay needs,
// with nothing but the standard library beneath it, so that a relay
// program (cmd/hearth-hook) starts in a millisecond, not in the tens a
// program linking the whole host takes. Package claudecode re-exports
// all of it.
package answer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// MaxPayload bounds a payload: a Write of a large file carries the whole
// file in tool_input.
const MaxPayload = 16 << 20

// Hook events.
const (
	SessionStart       = "SessionStart"
	UserPromptSubmit   = "UserPromptSubmit"
	PreToolUse         = "PreToolUse"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	Stop               = "Stop"
	SessionEnd         = "SessionEnd"
)

// EventName reads a payload's hook_event_name as the decoder does: on
// every payload the decoder accepts, it is the name Parse reads — keys
// compared without case, the last one winning, null changing nothing —
// because it is the same decoding. On a payload the decoder refuses (too
// big and cut short, or broken), a later key could still name another
// event, so it says only what failing closed needs: PreToolUse when a
// key before the break names it, "" (cannot tell) otherwise. It never
// names another event for a payload that could be a PreToolUse, so the
// hook's fail-closed handling, which denies PreToolUse and "", never lets
// one through.
func EventName(b []byte) string {
	var p struct {
		HookEventName string `json:"hook_event_name"`
	}
	if json.Unmarshal(b, &p) == nil {
		return p.HookEventName
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	pre := false
	for d.More() {
		k, err := d.Token()
		if err != nil {
			break
		}
		if key, _ := k.(string); strings.EqualFold(key, "hook_event_name") {
			var v *string
			if d.Decode(&v) != nil {
				break
			}
			if v != nil && *v == PreToolUse {
				pre = true
			}
			continue
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			break
		}
	}
	if pre {
		return PreToolUse
	}
	return ""
}

// Answer is what the hook answers Claude Code: the JSON to print on
// stdout (or return as the HTTP body), nil for nothing.
type Answer []byte

// hookOutput is Claude Code's JSON hook output, with the fields hearth
// answers: a PreToolUse's decision, and a message for the person.
// SystemMessage, a field every event's answer may have, is shown to the
// person (what the hook says on stderr is not, outside verbose mode).
type hookOutput struct {
	HookSpecificOutput *permission `json:"hookSpecificOutput,omitempty"`
	SystemMessage      string      `json:"systemMessage,omitempty"`
}

// permission is a PreToolUse's decision, or the context it adds for the
// model (additionalContext: the one thing a hook says that a headless
// run, `claude -p`, carries to anyone: the model reads it, and says so
// in its answer; a systemMessage shows only in Claude Code's window).
type permission struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
	AdditionalContext        string `json:"additionalContext,omitempty"`
}

// Deny is the answer that refuses a PreToolUse with reason, which Claude
// Code shows Claude.
func Deny(reason string) Answer { return DenyNotice(reason, "") }

// DenyNotice refuses a PreToolUse with reason, and shows the person
// notice too (empty: nothing).
func DenyNotice(reason, notice string) Answer {
	b, _ := json.Marshal(hookOutput{HookSpecificOutput: &permission{HookEventName: PreToolUse, PermissionDecision: "deny", PermissionDecisionReason: reason}, SystemMessage: notice})
	return b
}

// Notice is the answer that decides nothing and shows the person msg:
// how a hook that could not do its work says so where it is seen.
func Notice(msg string) Answer {
	b, _ := json.Marshal(hookOutput{SystemMessage: msg})
	return b
}

// Failed is the answer to a hook call hearth could not handle, for the
// reason why: failing closed (deny), a PreToolUse, or a call whose event
// cannot be told (a payload too big or broken), is denied; otherwise it
// goes ahead. Either way the person is told, in Claude Code's window
// (systemMessage), since a hook's stderr and an HTTP hook's error status
// show only in verbose mode or the transcript. A PostToolUse gets
// nothing: its PreToolUse already said so.
func Failed(event string, deny bool, why string) Answer {
	unknown := event == PreToolUse || event == ""
	switch {
	case deny && unknown:
		return DenyNotice(
			fmt.Sprintf("hearth could not check this tool use (%s) and is configured to deny tool uses then (when_unreachable = deny)", why),
			"hearth denied a tool use it could not check: "+why)
	case event == PostToolUse || event == PostToolUseFailure:
		return nil
	case event == PreToolUse:
		// The person sees the notice in Claude Code's window; in a
		// headless run only the model does, and can say so.
		msg := "hearth could not check this tool use, which goes ahead unchecked by its guards: " + why
		b, _ := json.Marshal(hookOutput{SystemMessage: msg, HookSpecificOutput: &permission{HookEventName: PreToolUse,
			AdditionalContext: msg + ". Tell the user, in your answer, that hearth's guards did not check this tool use."}})
		return b
	case unknown:
		return Notice("hearth could not check this tool use, which goes ahead unchecked by its guards: " + why)
	}
	return Notice(fmt.Sprintf("hearth is not following this session (%s): %s", event, why))
}

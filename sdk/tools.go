package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Tools are the common tools an agent uses, each done the honest way in
// one call: ask the host (CheckToolUse, with a fresh call ID, the tool's
// kind and its paths), do nothing and return a *DeniedError when the host
// says no, do the work, and report it (ReportToolUse, with the same call
// ID, kind and paths, OutcomeOK or OutcomeError, and how long it took).
// A denied call is reported too, with OutcomeDenied.
//
// Paths are given to the host as the agent named them: a relative path
// stays relative (the host reads it against the session's workspace,
// which is where an agent's root normally is), an absolute one absolute.
// The work resolves a relative path against the root given to NewTools.
//
// Tools keep no state of their own beyond their Callbacks and root, and are
// safe for concurrent use. Make one per task: a task's Callbacks are its own.
//
// Guards stop what an agent asks about; they cannot stop an agent's own
// code from calling the operating system. Tools make asking the default.
type Tools struct {
	cb   Callbacks
	root string
}

// NewTools returns the tools of one task, reaching the host through cb and
// resolving relative paths against root (the agent's workspace; "" means
// the current directory).
func NewTools(cb Callbacks, root string) *Tools {
	return &Tools{cb: cb, root: root}
}

// DeniedError is the error of a tool use the host denied. It wraps
// ErrDenied. Nothing was done.
type DeniedError struct {
	// Tool is the tool's name ("Read").
	Tool string
	// Paths are the paths the tool would have touched.
	Paths []string
	// Guard names the guard that denied it.
	Guard string
	// Reason is the guard's message.
	Reason string
}

// Error says what was denied, by which guard, and why.
func (e *DeniedError) Error() string {
	what := e.Tool
	if len(e.Paths) > 0 {
		what += " " + strings.Join(e.Paths, ", ")
	}
	by := ""
	if e.Guard != "" {
		by = fmt.Sprintf(" by guard %q", e.Guard)
	}
	return fmt.Sprintf("%s was denied%s: %s", what, by, e.Reason)
}

// Unwrap returns ErrDenied.
func (e *DeniedError) Unwrap() error { return ErrDenied }

// use asks the host about a tool use, does it with work unless denied,
// and reports it. paths are what the host is asked about; work returns
// the paths to report when they differ (nil: the same).
func (t *Tools) use(ctx context.Context, tool string, kind ToolKind, paths []string, input map[string]any, work func() ([]string, error)) error {
	return t.Do(ctx, ToolCall{Tool: tool, Kind: kind, Paths: paths, Input: input}, work)
}

// Do is the honest way for a tool the SDK does not have (an MCP
// server's, say), as every tool above does it: ask the host about call
// (a fresh CallID is given when it has none), return a *DeniedError
// without calling work when the host says no, else do work and report
// the use with call's kind and paths, or those work returns when not
// nil. work's error is Do's, after the report.
func (t *Tools) Do(ctx context.Context, call ToolCall, work func() (paths []string, err error)) error {
	if call.CallID == "" {
		call.CallID = NewID("call")
	}
	v, err := t.cb.CheckToolUse(ctx, call)
	if err != nil {
		return err
	}
	u := ToolUse{CallID: call.CallID, Tool: call.Tool, Kind: call.Kind, Paths: call.Paths}
	if !v.Allow {
		denied := &DeniedError{Tool: call.Tool, Paths: call.Paths, Guard: v.Guard, Reason: v.Reason}
		u.Outcome, u.Error = OutcomeDenied, v.Reason
		if rerr := t.cb.ReportToolUse(ctx, u); rerr != nil {
			return errors.Join(denied, rerr)
		}
		return denied
	}
	start := time.Now()
	reported, werr := work()
	u.Duration = time.Since(start)
	if reported != nil {
		u.Paths = reported
	}
	u.Outcome = OutcomeOK
	if werr != nil {
		u.Outcome, u.Error = OutcomeError, werr.Error()
	}
	if rerr := t.cb.ReportToolUse(ctx, u); rerr != nil {
		return errors.Join(werr, rerr)
	}
	return werr
}

// resolve returns where a path the agent named is on disk.
func (t *Tools) resolve(p string) string {
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) || t.root == "" {
		return p
	}
	return filepath.Join(t.root, p)
}

// Read returns the contents of the file at path (tool "Read", KindRead).
func (t *Tools) Read(ctx context.Context, path string) ([]byte, error) {
	var b []byte
	err := t.use(ctx, "Read", KindRead, []string{path}, map[string]any{"file_path": path}, func() ([]string, error) {
		var err error
		b, err = os.ReadFile(t.resolve(path))
		return nil, err
	})
	return b, err
}

// Write replaces the contents of the file at path with data, creating it
// (mode 0644) if it does not exist (tool "Write", KindWrite).
func (t *Tools) Write(ctx context.Context, path string, data []byte) error {
	return t.use(ctx, "Write", KindWrite, []string{path}, map[string]any{"file_path": path, "content": string(data)}, func() ([]string, error) {
		return nil, os.WriteFile(t.resolve(path), data, 0o644)
	})
}

// Edit replaces old with new in the file at path (tool "Edit",
// KindWrite). old must occur exactly once: otherwise the file is left as
// it is and the error says how many times it occurs.
func (t *Tools) Edit(ctx context.Context, path, old, new string) error {
	input := map[string]any{"file_path": path, "old_string": old, "new_string": new}
	return t.use(ctx, "Edit", KindWrite, []string{path}, input, func() ([]string, error) {
		if old == "" {
			return nil, fmt.Errorf("edit %s: the text to replace is empty; name text that occurs exactly once", path)
		}
		file := t.resolve(path)
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if n := bytes.Count(b, []byte(old)); n != 1 {
			return nil, fmt.Errorf("edit %s: the text to replace occurs %d times; it must occur exactly once (include more of its surroundings)", path, n)
		}
		return nil, os.WriteFile(file, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644)
	})
}

// List returns the entries of directory dir, sorted by name (tool "List",
// KindList).
func (t *Tools) List(ctx context.Context, dir string) ([]fs.DirEntry, error) {
	var entries []fs.DirEntry
	err := t.use(ctx, "List", KindList, []string{dir}, map[string]any{"path": dir}, func() ([]string, error) {
		var err error
		entries, err = os.ReadDir(t.resolve(dir))
		return nil, err
	})
	return entries, err
}

// SearchOptions narrow a Search.
type SearchOptions struct {
	// Glob, when set, limits the search to files whose base name matches
	// it (path.Match syntax: "*.go").
	Glob string
	// MaxMatches stops the search after that many matches; 0 means no
	// limit.
	MaxMatches int
}

// Match is one line a Search matched.
type Match struct {
	// Path is the file, as the directory searched was named, joined with
	// the file's path below it (slash-separated).
	Path string
	// Line is the line's number, from 1.
	Line int
	// Text is the line, without its line ending.
	Text string
}

// Search returns the lines matching the regular expression pattern (Go
// syntax) in the files under dir, in lexical order of path (tool
// "Search", KindSearch). Directories whose names start with "." below dir
// (.git) and files that look binary (a NUL byte in their first 8000
// bytes) are skipped. The host is asked about dir; the use is reported
// with dir (ending in "/") and the files that matched.
func (t *Tools) Search(ctx context.Context, dir, pattern string, opts SearchOptions) ([]Match, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", dir, err)
	}
	if opts.Glob != "" {
		if _, err := path.Match(opts.Glob, ""); err != nil {
			return nil, fmt.Errorf("search %s: glob %q: %w", dir, opts.Glob, err)
		}
	}
	input := map[string]any{"path": dir, "pattern": pattern}
	if opts.Glob != "" {
		input["glob"] = opts.Glob
	}
	var matches []Match
	err = t.use(ctx, "Search", KindSearch, []string{dir}, input, func() ([]string, error) {
		var files []string
		root := t.resolve(dir)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if d.IsDir() {
				if p != root && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			if opts.Glob != "" {
				if ok, _ := path.Match(opts.Glob, d.Name()); !ok {
					return nil
				}
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			named := path.Join(filepath.ToSlash(dir), filepath.ToSlash(rel))
			found, err := searchFile(p, named, re, opts.MaxMatches-len(matches), opts.MaxMatches > 0)
			if err != nil {
				return err
			}
			if len(found) > 0 {
				files = append(files, named)
				matches = append(matches, found...)
			}
			if opts.MaxMatches > 0 && len(matches) >= opts.MaxMatches {
				return filepath.SkipAll
			}
			return nil
		})
		return append([]string{strings.TrimSuffix(dir, "/") + "/"}, files...), err
	})
	return matches, err
}

// searchFile returns the matches of re in the file at p, named named, at
// most limit of them when limited.
func searchFile(p, named string, re *regexp.Regexp, limit int, limited bool) ([]Match, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
		return nil, nil
	}
	var out []Match
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if re.MatchString(line) {
			out = append(out, Match{Path: named, Line: i + 1, Text: line})
			if limited && len(out) >= limit {
				break
			}
		}
	}
	return out, nil
}

// ExecResult is what a command run by Exec printed and how it exited.
type ExecResult struct {
	// Stdout and Stderr are what the command wrote.
	Stdout, Stderr []byte
	// ExitCode is the command's exit status.
	ExitCode int
}

// Exec runs the program name with args in the root directory (tool
// "Exec", KindExec), started with Command so that it dies with the
// plugin, and returns what it printed. A command that ran and exited with
// a non-zero status is not an error of Exec: ExitCode says so, and the
// use is reported as done. A command that could not start, or was killed,
// is an error. The paths the host sees are the arguments that name
// existing files.
func (t *Tools) Exec(ctx context.Context, name string, args ...string) (ExecResult, error) {
	var paths []string
	for _, a := range args {
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		if fi, err := os.Stat(t.resolve(a)); err == nil && fi.Mode().IsRegular() {
			paths = append(paths, a)
		}
	}
	argv := append([]string{name}, args...)
	input := map[string]any{"command": strings.Join(argv, " "), "argv": argv}
	var res ExecResult
	err := t.use(ctx, "Exec", KindExec, paths, input, func() ([]string, error) {
		cmd := Command(ctx, name, args...)
		cmd.Dir = t.root
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		res = ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: cmd.ProcessState.ExitCode()}
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Exited() && ctx.Err() == nil {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("exec %s: %w", name, err)
		}
		return nil, nil
	})
	return res, err
}

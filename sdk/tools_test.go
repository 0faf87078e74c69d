package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

// toolsRun runs f as the body of one task served over the plugin protocol,
// with the tools of a workspace, and returns the recorder's log of it and
// the error f returned, as the agent saw it.
func toolsRun(t *testing.T, root string, policy conformance.Policy, f func(ctx context.Context, tools *sdk.Tools) error) ([]conformance.Entry, error) {
	t.Helper()
	var ferr error
	a := &funcAgent{run: func(ctx context.Context, _ sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
		ferr = f(ctx, sdk.NewTools(cb, root))
		return sdk.Result{}, nil
	}}
	h := sdktest.New(t, a, conformance.Options{Policy: policy})
	if _, err := h.Run(context.Background(), sdk.Task{ID: "t"}); err != nil {
		t.Fatal(err)
	}
	return h.Recorder.Log("t"), ferr
}

func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// askedThenReported checks that log is one question and one report of
// the same call, with the kind, paths and outcome given.
func askedThenReported(t *testing.T, log []conformance.Entry, tool string, kind sdk.ToolKind, asked, reported []string, outcome sdk.ToolOutcome) {
	t.Helper()
	if len(log) != 2 || log[0].Call == nil || log[1].Use == nil {
		t.Fatalf("log: got %d entries, want a question then a report", len(log))
	}
	c, u := log[0].Call.Call, log[1].Use
	if c.CallID == "" || c.CallID != u.CallID {
		t.Errorf("call IDs: asked %q, reported %q; want the same, not empty", c.CallID, u.CallID)
	}
	if c.Tool != tool || u.Tool != tool || c.Kind != kind || u.Kind != kind {
		t.Errorf("asked %s (%s), reported %s (%s); want %s (%s)", c.Tool, c.Kind, u.Tool, u.Kind, tool, kind)
	}
	if !slices.Equal(c.Paths, asked) || !slices.Equal(u.Paths, reported) {
		t.Errorf("paths: asked %q, reported %q; want %q and %q", c.Paths, u.Paths, asked, reported)
	}
	if u.Outcome != outcome {
		t.Errorf("outcome: got %s, want %s (error %q)", u.Outcome, outcome, u.Error)
	}
}

func TestToolsReadWriteEdit(t *testing.T) {
	root := workspace(t, map[string]string{"src/a.go": "package a\n\nconst X = 1\n"})

	var got []byte
	log, err := toolsRun(t, root, nil, func(ctx context.Context, tools *sdk.Tools) (err error) {
		got, err = tools.Read(ctx, "src/a.go")
		return err
	})
	if err != nil || string(got) != "package a\n\nconst X = 1\n" {
		t.Fatalf("Read: got %q, %v", got, err)
	}
	askedThenReported(t, log, "Read", sdk.KindRead, []string{"src/a.go"}, []string{"src/a.go"}, sdk.OutcomeOK)
	if log[0].Call.Call.Input["file_path"] != "src/a.go" {
		t.Errorf("Read input: got %v, want file_path src/a.go", log[0].Call.Call.Input)
	}

	log, err = toolsRun(t, root, nil, func(ctx context.Context, tools *sdk.Tools) error {
		return tools.Write(ctx, "src/b.go", []byte("package a\n"))
	})
	if b, _ := os.ReadFile(filepath.Join(root, "src/b.go")); err != nil || string(b) != "package a\n" {
		t.Fatalf("Write: %v, file holds %q", err, b)
	}
	askedThenReported(t, log, "Write", sdk.KindWrite, []string{"src/b.go"}, []string{"src/b.go"}, sdk.OutcomeOK)

	log, err = toolsRun(t, root, nil, func(ctx context.Context, tools *sdk.Tools) error {
		return tools.Edit(ctx, "src/a.go", "X = 1", "X = 2")
	})
	if b, _ := os.ReadFile(filepath.Join(root, "src/a.go")); err != nil || !strings.Contains(string(b), "X = 2") {
		t.Fatalf("Edit: %v, file holds %q", err, b)
	}
	askedThenReported(t, log, "Edit", sdk.KindWrite, []string{"src/a.go"}, []string{"src/a.go"}, sdk.OutcomeOK)

	// Text that occurs twice, or not at all, is not replaced: the error
	// says how many times it occurs, and the use is reported as failed.
	for _, tt := range []struct{ old, want string }{{"package", "occurs 2 times"}, {"nothing like it", "occurs 0 times"}} {
		_ = os.WriteFile(filepath.Join(root, "twice.go"), []byte("package a // package\n"), 0o644)
		log, err = toolsRun(t, root, nil, func(ctx context.Context, tools *sdk.Tools) error {
			return tools.Edit(ctx, "twice.go", tt.old, "x")
		})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "exactly once") {
			t.Errorf("Edit %q: got %v, want an error saying it %s and must occur exactly once", tt.old, err, tt.want)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "twice.go")); string(b) != "package a // package\n" {
			t.Errorf("Edit %q changed the file: %q", tt.old, b)
		}
		askedThenReported(t, log, "Edit", sdk.KindWrite, []string{"twice.go"}, []string{"twice.go"}, sdk.OutcomeError)
	}
}

func TestToolsListSearchExec(t *testing.T) {
	root := workspace(t, map[string]string{
		"src/a.go":        "package a\n// TODO: one\n",
		"src/sub/b.go":    "package sub\n// TODO: two\n// TODO: three\n",
		"src/notes.md":    "TODO: not go\n",
		"src/.git/config": "TODO: hidden\n",
	})
	var entries []string
	log, err := toolsRun(t, root, nil, func(ctx context.Context, tools *sdk.Tools) error {
		es, err := tools.List(ctx, "src")
		for _, e := range es {
			entries = append(entries, e.Name())
		}
		return err
	})
	if err != nil || !slices.Equal(entries, []string{".git", "a.go", "notes.md", "sub"}) {
		t.Fatalf("List: got %v, %v", entries, err)
	}
	askedThenReported(t, log, "List", sdk.KindList, []string{"src"}, []string{"src"}, sdk.OutcomeOK)

	var matches []sdk.Match
	log, err = toolsRun(t, root, nil, func(ctx context.Context, tools *sdk.Tools) (err error) {
		matches, err = tools.Search(ctx, "src", `TODO: \w+`, sdk.SearchOptions{Glob: "*.go"})
		return err
	})
	want := []sdk.Match{{Path: "src/a.go", Line: 2, Text: "// TODO: one"}, {Path: "src/sub/b.go", Line: 2, Text: "// TODO: two"}, {Path: "src/sub/b.go", Line: 3, Text: "// TODO: three"}}
	if err != nil || fmt.Sprint(matches) != fmt.Sprint(want) {
		t.Fatalf("Search: got %v, %v; want %v", matches, err, want)
	}
	askedThenReported(t, log, "Search", sdk.KindSearch, []string{"src"}, []string{"src/", "src/a.go", "src/sub/b.go"}, sdk.OutcomeOK)

	_, err = toolsRun(t, root, nil, func(ctx context.Context, tools *sdk.Tools) (err error) {
		matches, err = tools.Search(ctx, "src", `TODO`, sdk.SearchOptions{MaxMatches: 2})
		return err
	})
	if err != nil || len(matches) != 2 {
		t.Errorf("Search with MaxMatches 2: got %v, %v", matches, err)
	}

	var res sdk.ExecResult
	log, err = toolsRun(t, root, nil, func(ctx context.Context, tools *sdk.Tools) (err error) {
		res, err = tools.Exec(ctx, "cat", "-s", "src/a.go", "missing.go", "src")
		return err
	})
	if err != nil || string(res.Stdout) == "" || res.ExitCode != 1 {
		// cat prints a.go, then fails on the missing file and the directory.
		t.Fatalf("Exec: got %+v, %v; want a.go printed and exit status 1", res, err)
	}
	askedThenReported(t, log, "Exec", sdk.KindExec, []string{"src/a.go"}, []string{"src/a.go"}, sdk.OutcomeOK)

	_, err = toolsRun(t, root, nil, func(ctx context.Context, tools *sdk.Tools) (err error) {
		_, err = tools.Exec(ctx, "no-such-program-hearth")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "exec no-such-program-hearth") {
		t.Errorf("Exec of a missing program: got %v, want an error naming it", err)
	}
}

// TestToolsDenied: a denied tool use is not done, comes back as a
// *DeniedError wrapping ErrDenied with the guard and its reason, and is
// reported as denied.
func TestToolsDenied(t *testing.T) {
	root := workspace(t, map[string]string{".env": "SECRET=1\n"})
	ops := []struct {
		tool string
		kind sdk.ToolKind
		path string
		do   func(context.Context, *sdk.Tools) error
	}{
		{"Read", sdk.KindRead, ".env", func(ctx context.Context, tl *sdk.Tools) error { _, err := tl.Read(ctx, ".env"); return err }},
		{"Write", sdk.KindWrite, "new.txt", func(ctx context.Context, tl *sdk.Tools) error { return tl.Write(ctx, "new.txt", []byte("x")) }},
		{"Edit", sdk.KindWrite, ".env", func(ctx context.Context, tl *sdk.Tools) error { return tl.Edit(ctx, ".env", "SECRET=1", "SECRET=2") }},
		{"List", sdk.KindList, ".", func(ctx context.Context, tl *sdk.Tools) error { _, err := tl.List(ctx, "."); return err }},
		{"Search", sdk.KindSearch, ".", func(ctx context.Context, tl *sdk.Tools) error {
			_, err := tl.Search(ctx, ".", "SECRET", sdk.SearchOptions{})
			return err
		}},
		{"Exec", sdk.KindExec, ".env", func(ctx context.Context, tl *sdk.Tools) error {
			_, err := tl.Exec(ctx, "sh", "-c", "echo done > ran.txt", ".env")
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.tool, func(t *testing.T) {
			log, err := toolsRun(t, root, conformance.DenyAll, op.do)
			var denied *sdk.DeniedError
			if !errors.As(err, &denied) || !errors.Is(err, sdk.ErrDenied) {
				t.Fatalf("got %v, want a *DeniedError wrapping ErrDenied", err)
			}
			if denied.Guard != "sdktest-deny-all" || !strings.Contains(denied.Reason, op.tool) || !strings.Contains(err.Error(), `by guard "sdktest-deny-all"`) {
				t.Errorf("got %+v (%v), want the guard and its reason", denied, err)
			}
			askedThenReported(t, log, op.tool, op.kind, []string{op.path}, []string{op.path}, sdk.OutcomeDenied)
		})
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".env")); string(b) != "SECRET=1\n" {
		t.Errorf(".env was changed: %q", b)
	}
	for _, f := range []string{"new.txt", "ran.txt"} {
		if _, err := os.Stat(filepath.Join(root, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v): a denied tool use was done", f, err)
		}
	}
}

// TestToolsConcurrently: one task's tools used from many goroutines
// (under -race this is a check for data races).
func TestToolsConcurrently(t *testing.T) {
	root := workspace(t, map[string]string{"a.txt": "a", "b.txt": "b"})
	log, err := toolsRun(t, root, nil, func(ctx context.Context, tools *sdk.Tools) error {
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = tools.Read(ctx, []string{"a.txt", "b.txt"}[i%2])
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	})
	if err != nil {
		t.Fatal(err)
	}
	asked := map[string]bool{}
	for _, e := range log {
		if e.Call != nil {
			asked[e.Call.Call.CallID] = true
		} else if !asked[e.Use.CallID] || e.Use.Outcome != sdk.OutcomeOK {
			t.Errorf("report %+v: want an OK use asked about first", e.Use)
		}
	}
	if len(log) != 32 {
		t.Errorf("got %d entries, want 16 questions and 16 reports", len(log))
	}
}

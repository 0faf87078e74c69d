package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
)

// runTimeout bounds each run a test waits for.
const runTimeout = 2 * time.Minute

// pipe builds a pipeline of the scripted agent's tasks: name, prompt, and
// the tasks it depends on.
func pipe(name string, tasks ...[]string) *hearth.Pipeline {
	p := &hearth.Pipeline{Name: name}
	for _, t := range tasks {
		p.Tasks = append(p.Tasks, &hearth.PipelineTask{Name: t[0], Agent: "scripted", Prompt: t[1], DependsOn: t[2:]})
	}
	p.Retry = hearth.Retry{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	return p
}

func startRun(t *testing.T, h *Engine, p *hearth.Pipeline, opts hearth.RunOptions) (hearth.RunInfo, error) {
	t.Helper()
	rh, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: p, RunOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	return waitRun(t, rh)
}

func waitRun(t *testing.T, rh hearth.RunWatch) (hearth.RunInfo, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	info, err := rh.Wait(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run %s did not stop within %s", rh.ID(), runTimeout)
	}
	return info, err
}

func outputsOf(t *testing.T, h *Engine, id string) map[string][]hearth.TaskOutput {
	t.Helper()
	outs, err := h.RunOutputs(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string][]hearth.TaskOutput)
	for _, o := range outs {
		m[o.Task] = append(m[o.Task], o)
	}
	return m
}

// current returns the current output of task.
func current(t *testing.T, outs map[string][]hearth.TaskOutput, task string) hearth.TaskOutput {
	t.Helper()
	for _, o := range outs[task] {
		if o.Current {
			return o
		}
	}
	t.Fatalf("task %s has no current output: %+v", task, outs[task])
	return hearth.TaskOutput{}
}

func runEventKinds(t *testing.T, h *Engine, id string) []string {
	t.Helper()
	evs, err := h.RunEvents(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		s := string(e.Kind)
		if e.From != "" || e.To != "" {
			s += " " + e.Task + ":" + e.From + ">" + e.To
		}
		out = append(out, s)
	}
	return out
}

// TestRunFilesAndChunksSurviveAPluginCrash: the run's files and chunk
// marks, kept by the store, outlive the plugin processes that crash in
// the middle of them (the run engine's own tests are in host/runs; this
// one needs a plugin that dies).
func TestRunFilesAndChunksSurviveAPluginCrash(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	dir := t.TempDir()
	syllabus := filepath.Join(dir, "syllabus.txt")
	if err := os.WriteFile(syllabus, []byte("week 1: limits\nweek 2: series\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The plugin exits after every second chunk: each crash is a failed
	// attempt, placed again on a new session, which skips what is done.
	p := pipe("ingest", []string{"ingest", "files;chunks:syllabus.txt:5:2"}, []string{"done", "files;chunks:syllabus.txt:5", "ingest"})
	info, err := startRun(t, h, p, hearth.RunOptions{Files: []string{syllabus, syllabus}})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := h.Run(context.Background(), info.ID)
	ingest := d.TaskList[0]
	if ingest.Attempt != 3 || ingest.Failures != 2 || !strings.Contains(ingest.Errors[0], "plugin") {
		t.Errorf("ingest = %+v; want 2 crashes then success", ingest)
	}
	outs := outputsOf(t, h, info.ID)
	if got := current(t, outs, "ingest").Output; got != "syllabus.txt=30 did=4 skipped=0,1,2,3" {
		t.Errorf("ingest output = %q", got)
	}
	if got := current(t, outs, "done").Output; got != "syllabus.txt=30 did= skipped=0,1,2,3,4" {
		t.Errorf("done output = %q", got)
	}
	if len(d.Files) != 1 || d.Files[0].Size != 30 || !slices.Equal(d.Chunks["syllabus.txt"], []int{0, 1, 2, 3, 4}) {
		t.Errorf("files %+v, chunks %v", d.Files, d.Chunks)
	}
	if fi, err := os.Stat(d.Files[0].Path); err != nil || fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("stored file: %v, %v; want it read-only", fi, err)
	}
}

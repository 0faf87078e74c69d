package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hearth-dev/hearth/internal/hosttest"

	"github.com/hearth-dev/hearth"
)

// crashPipeline is the run the "run" host mode starts and kills itself in
// the middle of: a -> b -> c -> d, each task appending its name to
// work/log when it starts, b and c asking for a checkpoint and writing its
// acknowledged number to work/acked. c reports progress once its
// checkpoint is acknowledged, then waits for work/release.
func crashPipeline(work string) *testPipeline {
	log, acked, release := filepath.Join(work, "log"), filepath.Join(work, "acked"), filepath.Join(work, "release")
	return &testPipeline{
		log: log, acked: acked, release: release,
		tasks: [][]string{
			{"a", "append:" + log + "=a"},
			{"b", "append:" + log + "=b;ckfile:" + acked + ":b-mid", "a"},
			{"c", "append:" + log + "=c;ckfile:" + acked + ":c-mid;progress:0.5;wait:" + release + ";append:" + log + "=c-done", "b"},
			{"d", "append:" + log + "=d", "c"},
		},
	}
}

type testPipeline struct {
	log, acked, release string
	tasks               [][]string
}

// runCrashHost is the "run" host mode: start crashPipeline, say the run's
// ID, say "waiting" once c is past its checkpoint, and wait for kill -9.
func runCrashHost(h *Engine) int {
	ctx := context.Background()
	tp := crashPipeline(os.Getenv("HEARTH_TEST_WORK"))
	sub := subscribe(h, 256)
	rh, err := h.StartRun(ctx, hearth.RunSpec{Pipeline: pipe("crash", tp.tasks...), RunOptions: hearth.RunOptions{}})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("run", rh.ID())
	for e := range sub.Events() {
		if e.Kind == hearth.EventTaskProgress {
			break
		}
	}
	fmt.Println("waiting")
	select {}
}

// TestRunSurvivesKill9OfTheHost kills a host with kill -9 in the middle
// of a run, starts a new host on its data directory, and resumes the run:
// the tasks that had succeeded are not run again, every checkpoint an
// agent was told was written is there, and the run completes.
func TestRunSurvivesKill9OfTheHost(t *testing.T) {
	t.Parallel()
	dir, work := t.TempDir(), t.TempDir()
	tp := crashPipeline(work)
	cmd, sc := startHostIn(t, "run", dir, "HEARTH_TEST_WORK="+work)
	id := hosttest.ExpectLine(t, sc, "run")[0]
	hosttest.ExpectLine(t, sc, "waiting")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	acked := readLines(t, tp.acked)
	if len(acked) != 2 {
		t.Fatalf("acknowledged checkpoints %v; want b's and c's", acked)
	}

	h := newTestHostIn(t, dir, testAgent("scripted", "agent"))
	d, err := h.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != hearth.RunPaused || !strings.Contains(d.Reason, "interrupted") || !strings.Contains(d.Reason, "hearth runs resume "+id) {
		t.Fatalf("after the crash: %s (%s); want paused as interrupted, with how to resume", d.Status, d.Reason)
	}
	statuses := map[string]hearth.TaskStatus{}
	for _, ti := range d.TaskList {
		statuses[ti.Name] = ti.Status
	}
	want := map[string]hearth.TaskStatus{"a": hearth.TaskSucceeded, "b": hearth.TaskSucceeded, "c": hearth.TaskPending, "d": hearth.TaskPending}
	for name, s := range want {
		if statuses[name] != s {
			t.Errorf("task %s is %s after the crash; want %s", name, statuses[name], s)
		}
	}
	before, err := h.RunCheckpoints(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([]uint64, len(before))
	for i, c := range before {
		seqs[i] = c.Seq
	}
	for _, a := range acked {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(seqs, n) {
			t.Errorf("checkpoint %d was acknowledged to the agent but is not stored (stored: %v)", n, seqs)
		}
	}

	if err := os.WriteFile(tp.release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rh, err := h.ResumeRun(context.Background(), id, hearth.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := waitRun(t, rh)
	if err != nil || info.Status != hearth.RunCompleted {
		t.Fatalf("resumed run: %s, %v; want completed", info.Status, err)
	}
	// c was interrupted, so it starts again; a and b do not.
	if got, want := readLines(t, tp.log), []string{"a", "b", "c", "c", "c-done", "d"}; !slices.Equal(got, want) {
		t.Errorf("tasks started %v; want %v", got, want)
	}
	outs := outputsOf(t, h, id)
	for _, name := range []string{"a", "b"} {
		if len(outs[name]) != 1 || outs[name][0].Attempt != 1 {
			t.Errorf("task %s has outputs %+v; want its one first-attempt output", name, outs[name])
		}
	}
	after, err := h.RunCheckpoints(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) <= len(before) || !slices.Equal(after[:len(before)], before) {
		t.Errorf("checkpoints changed across the resume:\nbefore %+v\nafter  %+v", before, after)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/testenv"
)

// smallFileSystem mounts a tmpfs of size bytes for the test, so that what
// the store sees as free space is real.
func smallFileSystem(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		testenv.Missing(t, "cannot mount a tmpfs ("+err.Error()+")", "run the tests as root on Linux, as CI does")
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file that leaves about free bytes free on dir's file
// system.
func fill(t *testing.T, dir string, free int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * st.Bsize
	if avail <= free {
		t.Fatalf("only %d bytes free, want more than %d", avail, free)
	}
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for left := avail - free; left > 0; left -= int64(len(chunk)) {
		if left < int64(len(chunk)) {
			chunk = chunk[:left]
		}
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestFullFileSystemPausesTheRun reproduces issue 14's fourth finding on a
// real file system: a run whose outputs fill the disk used to die of
// SIGBUS in Badger's value log. Now, once free space falls below the store
// block's min_free_space, the run pauses and says so on disk, with the
// reason (the store keeps a reserve for that one record), hearth run exits
// 1 saying why, and once space is freed `runs resume` completes it: every
// task succeeded exactly once, none the store had acknowledged ran again,
// and hearth verify finds nothing wrong.
func TestFullFileSystemPausesTheRun(t *testing.T) {
	t.Parallel()
	fs := smallFileSystem(t, "96m")
	var tasks strings.Builder
	prev := ""
	for i := range 8 {
		name := "t" + string(rune('a'+i))
		tasks.WriteString("  task \"" + name + "\" {\n    prompt = \"echo:" + name + ";bigout:1048576\"\n")
		if prev != "" {
			tasks.WriteString("    depends_on = [\"" + prev + "\"]\n")
		}
		tasks.WriteString("  }\n")
		prev = name
	}
	cfg := writeConfig(t, `data_dir = "`+filepath.Join(fs, "data")+`"
store {
  min_free_space = "24MiB"
}
agent "scripted" {
  command = ["`+os.Args[0]+`"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}
pipeline "fill" {
  agent = "scripted"
`+tasks.String()+`}
`)
	env := map[string]string{"HEARTH_CONFIG": cfg, "HEARTH_DATA_DIR": filepath.Join(fs, "data")}
	filler := fill(t, fs, 30<<20) // room for a few outputs, not eight

	code, stdout, stderr := run(t, env, "run", cfg, "fill")
	if code != 1 || !strings.Contains(stdout+stderr, "not enough free space") || !strings.Contains(stdout, "paused: ") {
		t.Fatalf("hearth run on a filling disk: exit %d\n%s%s\nwant exit 1, the run paused, saying there is not enough free space", code, stdout, stderr)
	}
	// The pause is on disk, with its reason: not a run that reads as
	// running (interrupted) with the reason it started for.
	var list []hearth.RunInfo
	runJSON(t, env, &list, "runs", "list", "--json")
	if len(list) != 1 || list[0].Status != hearth.RunPaused || list[0].Interrupted || !strings.Contains(list[0].Reason, "not enough free space") ||
		list[0].Succeeded == 0 || list[0].Succeeded >= 8 {
		t.Fatalf("runs list after the full disk: %+v; want one run paused part way, saying there is not enough free space", list)
	}
	id := list[0].ID
	var before runShowJSON
	runJSON(t, env, &before, "runs", "show", id, "--json")
	if before.Status != hearth.RunPaused || !strings.Contains(before.Reason, "not enough free space") || before.Succeeded != list[0].Succeeded {
		t.Fatalf("runs show after the full disk: %s (%s), %d succeeded; want paused as runs list says", before.Status, before.Reason, before.Succeeded)
	}
	acked := make(map[string]hearth.TaskOutput) // what the store acknowledged
	for _, o := range before.Outputs {
		acked[o.Task] = o
	}
	if len(acked) != before.Succeeded || len(before.Outputs) != before.Succeeded {
		t.Fatalf("after the full disk: %d outputs of %d tasks for %d succeeded; want one output per succeeded task", len(before.Outputs), len(acked), before.Succeeded)
	}
	if code, stdout, stderr := run(t, env, "runs", "resume", id); code != 1 || !strings.Contains(stdout+stderr, "not enough free space") {
		t.Fatalf("runs resume with the disk still full: exit %d\n%s%s\nwant exit 1 saying there is not enough free space", code, stdout, stderr)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := run(t, env, "runs", "resume", id); code != 0 {
		t.Fatalf("runs resume after freeing space: exit %d\n%s%s", code, stdout, stderr)
	}
	var after runShowJSON
	runJSON(t, env, &after, "runs", "show", id, "--json")
	if after.Status != hearth.RunCompleted || after.Succeeded != 8 {
		t.Fatalf("after resuming: %s with %d succeeded; want completed with 8", after.Status, after.Succeeded)
	}
	// Exactly once: one output per task, version 1, and the ones the
	// store had acknowledged before the pause are the same outputs.
	seen := make(map[string]bool)
	for _, o := range after.Outputs {
		if seen[o.Task] || o.Version != 1 {
			t.Errorf("task %s has output v%d (seen before: %v); want each task to have run to success once", o.Task, o.Version, seen[o.Task])
		}
		seen[o.Task] = true
		if a, ok := acked[o.Task]; ok && !a.Time.Equal(o.Time) {
			t.Errorf("task %s succeeded before the pause (at %s) and ran again (at %s)", o.Task, a.Time, o.Time)
		}
	}
	if len(seen) != 8 {
		t.Errorf("outputs of %d tasks after resuming; want 8", len(seen))
	}
	if code, stdout, stderr := run(t, env, "verify"); code != 0 {
		t.Errorf("hearth verify after the full disk: exit %d\n%s%s", code, stdout, stderr)
	}
}

// runShowJSON is what `runs show --json` prints.
type runShowJSON struct {
	hearth.RunDetail
	Outputs []hearth.TaskOutput `json:"outputs"`
}

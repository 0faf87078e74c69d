package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// crashConfig writes, in dir, a config whose pipeline "crash" has a first
// task with a 256 KiB output and a second that opens the FIFO started
// (which tells the test it runs) and then hangs: a run to kill in the
// middle, with writes for its data directory to replay. The store's
// min_free_space is minFree.
func crashConfig(t *testing.T, dir, started, minFree string) string {
	t.Helper()
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	return writeConfigIn(t, dir, `store {
  min_free_space = "`+minFree+`"
}
agent "scripted" {
  command = ["`+os.Args[0]+`"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}
pipeline "crash" {
  agent = "scripted"
  task "first" {
    prompt = "bigout:262144"
  }
  task "second" {
    prompt     = "touch:`+started+`;hang"
    depends_on = ["first"]
  }
}
`)
}

// crashedRun runs hearth run crash as a real process on env's data
// directory and kills it (SIGKILL) once its second task runs: the
// directory is left with writes to replay.
func crashedRun(t *testing.T, env map[string]string, started string) {
	t.Helper()
	cmd := hearthProcess(t, env, "run", "crash", "-q")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	running := signalled(t, started)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-running
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if mems, _ := filepath.Glob(filepath.Join(env["HEARTH_DATA_DIR"], "*.mem")); len(mems) == 0 {
		t.Fatalf("hearth run killed left no memtable log in %s to replay\n%s", env["HEARTH_DATA_DIR"], out.String())
	}
}

// runProcess runs hearth args as a real process and returns its exit
// code, its output, and whether a signal ended it (SIGBUS, a crash).
func runProcess(t *testing.T, env map[string]string, args ...string) (code int, out string, signalled bool) {
	t.Helper()
	cmd := hearthProcess(t, env, args...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, b.String(), false
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		return ee.ExitCode(), b.String(), ws.Signaled()
	}
	t.Fatalf("hearth %s: %v", strings.Join(args, " "), err)
	return 0, "", false
}

// crashed reports whether out is a Go runtime crash (SIGBUS on a mapped
// write shows as "unexpected fault address" and exit 2).
func crashed(out string) bool {
	return strings.Contains(out, "fatal error") || strings.Contains(out, "SIGBUS") || strings.Contains(out, "unexpected fault address") || strings.Contains(out, "panic:")
}

// TestFullFileSystemRefusesReplay is issue 24's third finding for the
// writes a crash left: on a full file system, replaying them (hearth
// recover, or any command that writes) crashed with SIGBUS in Badger's
// mapped writes. Now every command refuses before Badger writes a byte:
// recover and the commands that write say there is not enough free
// space, the read commands say the directory needs hearth recover, none
// crashes, and no byte of the directory changes. Once space is freed,
// recover replays it and the run reads as interrupted.
func TestFullFileSystemRefusesReplay(t *testing.T) {
	t.Parallel()
	fs := smallFileSystem(t, "24m")
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	cfg := crashConfig(t, dir, started, "4MiB")
	data := filepath.Join(fs, "data")
	env := map[string]string{"HEARTH_CONFIG": cfg, "HEARTH_DATA_DIR": data}
	crashedRun(t, env, started)
	filler := fill(t, fs, 0)

	before := dirHashes(t, data)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"recover"}, "not enough free space"},
		{[]string{"run", "crash", "-q"}, "not enough free space"},
		{[]string{"runs", "list"}, "hearth recover"},
		{[]string{"verify"}, "hearth recover"},
		{[]string{"backup", filepath.Join(dir, "b.tar")}, "hearth recover"},
	} {
		code, out, sig := runProcess(t, env, tc.args...)
		if code == 0 || sig || crashed(out) || !strings.Contains(out, tc.want) {
			t.Errorf("hearth %s on a full file system: exit %d (signal %v)\n%s\nwant a refusal saying %q", strings.Join(tc.args, " "), code, sig, out, tc.want)
		}
	}
	sameHashes(t, "commands refused on a full file system", before, dirHashes(t, data))

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runProcess(t, env, "recover"); code != 0 {
		t.Fatalf("hearth recover with space freed: exit %d\n%s", code, out)
	}
	code, out, _ := runProcess(t, env, "runs", "list")
	if code != 0 || !strings.Contains(out, "interrupted") {
		t.Errorf("runs list after recover: exit %d\n%s\nwant the run, interrupted", code, out)
	}
}

// TestRestoreOntoAFullFileSystem is issue 24's third finding for restore:
// onto a file system too small for the backup it crashed (SIGBUS in
// Badger's mapped writes) and left files behind. Now it compares the
// backup's size (and min_free_space) with the free space before it
// writes: it refuses, saying so, without crashing, and leaves nothing;
// once there is room, the same backup restores.
func TestRestoreOntoAFullFileSystem(t *testing.T) {
	t.Parallel()
	env, id := ranStore(t)
	want := views(t, env, id)
	backup := filepath.Join(t.TempDir(), "b.tar")
	if code, out, errOut := run(t, env, "backup", backup); code != 0 {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}
	fs := smallFileSystem(t, "16m")
	cfg := writeConfigIn(t, t.TempDir(), "store {\n  min_free_space = \"4MiB\"\n}\n")
	renv := map[string]string{"HEARTH_CONFIG": cfg, "HEARTH_DATA_DIR": filepath.Join(fs, "restored")}
	// Less free than min_free_space and the backup together, more than
	// either alone.
	filler := fill(t, fs, 4<<20+64<<10)
	code, out, sig := runProcess(t, renv, "restore", backup)
	if code == 0 || sig || crashed(out) || !strings.Contains(out, "not enough free space") {
		t.Errorf("hearth restore onto a full file system: exit %d (signal %v)\n%s\nwant a refusal saying there is not enough free space", code, sig, out)
	}
	if got := entries(t, fs); len(got) != 1 || got[0] != filepath.Base(filler) {
		t.Errorf("after restore was refused, %s holds %v; want the filler alone", fs, got)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runProcess(t, renv, "restore", backup); code != 0 {
		t.Fatalf("hearth restore with room: exit %d\n%s", code, out)
	}
	sameViews(t, "restored once there was room", views(t, renv, id), want)
}

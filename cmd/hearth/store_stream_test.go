package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/hearth-dev/hearth/internal/testenv"
)

// hearthProcess is the hearth command as a real process: the test binary,
// which TestMain makes the hearth command when HEARTH_TEST_MAIN holds its
// arguments. env is its whole HEARTH_ environment.
func hearthProcess(t testing.TB, env map[string]string, args ...string) *exec.Cmd {
	t.Helper()
	argv, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HEARTH_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HEARTH_TEST_MAIN="+string(argv), "GORACE=atexit_sleep_ms=0")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// readViews are the read commands whose output is the data itself
// (--json, so that no "5s ago" differs between two reads of the same
// data); their outputs are what a restored or damaged directory must give
// exactly, or refuse.
func readViews(id string) [][]string {
	return [][]string{
		{"runs", "list", "--json"},
		{"runs", "show", id, "--json"},
		{"sessions", "list", "--json"},
	}
}

// views runs the readViews on env's data directory and returns their
// outputs, with the directory's path (which stored files' paths hold)
// replaced by DATA.
func views(t *testing.T, env map[string]string, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, args := range readViews(id) {
		code, stdout, stderr := run(t, env, args...)
		if code != 0 {
			t.Fatalf("hearth %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
		out[strings.Join(args, " ")] = strings.ReplaceAll(stdout, env["HEARTH_DATA_DIR"], "DATA")
	}
	return out
}

// sameViews fails the test unless got and want hold the same outputs.
func sameViews(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: hearth %s gives\n%s\nwant, as the original:\n%s", what, k, got[k], w)
		}
	}
}

// TestBackupPipesIntoRestore is issue 24's second finding: `hearth backup
// -` wrote a tar with every NUL byte rewritten as the six characters
// \u0000 by the CLI's terminal-safe writer, and exited 0. A byte stream
// is not text: `hearth backup - | hearth restore -`, two real processes
// joined by a pipe, restores the store, which reads exactly as the
// original.
func TestBackupPipesIntoRestore(t *testing.T) {
	t.Parallel()
	env, id := ranStore(t)
	want := views(t, env, id)

	renv := map[string]string{"HEARTH_DATA_DIR": filepath.Join(t.TempDir(), "restored")}
	backup := hearthProcess(t, env, "backup", "-")
	restore := hearthProcess(t, renv, "restore", "-")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var backupErr, restoreOut bytes.Buffer
	backup.Stdout, backup.Stderr = w, &backupErr
	restore.Stdin, restore.Stdout, restore.Stderr = r, &restoreOut, &restoreOut
	if err := backup.Start(); err != nil {
		t.Fatal(err)
	}
	if err := restore.Start(); err != nil {
		t.Fatal(err)
	}
	// The pipe's ends are the children's now.
	r.Close()
	w.Close()
	backupDone, restoreDone := backup.Wait(), restore.Wait()
	if backupDone != nil || restoreDone != nil {
		t.Fatalf("hearth backup - | hearth restore -: backup %v, restore %v\nbackup: %s\nrestore: %s", backupDone, restoreDone, backupErr.String(), restoreOut.String())
	}
	sameViews(t, "restored from hearth backup - | hearth restore -", views(t, renv, id), want)

	// The same through Main in this process: stdout a buffer, not a
	// terminal.
	code, stream, stderr := run(t, env, "backup", "-")
	if code != 0 {
		t.Fatalf("hearth backup -: exit %d\n%s", code, stderr)
	}
	renv = map[string]string{"HEARTH_DATA_DIR": filepath.Join(t.TempDir(), "restored"), "STDIN": stream}
	if code, out, stderr := run(t, renv, "restore", "-"); code != 0 {
		t.Fatalf("hearth restore - of hearth backup -: exit %d\n%s%s", code, out, stderr)
	}
	sameViews(t, "restored from hearth backup - through Main", views(t, renv, id), want)
}

// byteStreamCommands are the commands whose stdout is a byte stream; every
// other command's output is text. A command added to either side is
// added here.
var byteStreamCommands = map[string]bool{"hearth backup": true}

// TestByteStreamsBypassTheTextWriter sweeps the command tree: the commands
// that declare a byte stream on stdout (streamsBytes) are exactly
// byteStreamCommands, each gets the process's stdout itself, and every
// other command gets it through text.Safe.
func TestByteStreamsBypassTheTextWriter(t *testing.T) {
	t.Parallel()
	var visit func(c *cobra.Command)
	seen := 0
	visit = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			visit(sub)
		}
		if !c.Runnable() {
			return
		}
		seen++
		if writesBytes(c) != byteStreamCommands[c.CommandPath()] {
			t.Errorf("%s: declares a byte stream %v, byteStreamCommands says %v", c.CommandPath(), writesBytes(c), byteStreamCommands[c.CommandPath()])
		}
	}
	visit((&Main{}).command())
	if seen < 20 {
		t.Fatalf("found %d commands; the sweep lost its way", seen)
	}

}

// pty opens a pseudo-terminal and returns its two ends: what is written
// to tty reaches a terminal.
func pty(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testenv.Missing(t, "no pseudo-terminal ("+err.Error()+")", "run the tests on Linux with /dev/ptmx")
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// TestByteStreamIsNotWrittenToATerminal: hearth backup - with stdout a
// terminal is refused (exit 2, saying how to redirect it), and writes
// nothing to it.
func TestByteStreamIsNotWrittenToATerminal(t *testing.T) {
	t.Parallel()
	env, _ := ranStore(t)
	master, tty := pty(t)
	// What reaches the terminal is read as it comes (a terminal holds a
	// few KiB), up to the mark written after the command.
	const mark = "end of the command's output"
	read := make(chan []byte)
	go func() {
		var shown []byte
		buf := make([]byte, 4096)
		for !bytes.Contains(shown, []byte(mark)) {
			n, err := master.Read(buf)
			if err != nil {
				break
			}
			shown = append(shown, buf[:n]...)
		}
		read <- shown
	}()
	var stderr bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: tty, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
	code := m.Run(context.Background(), []string{"backup", "-"})
	if code != exitUsage || !strings.Contains(stderr.String(), "stdout is a terminal") || !strings.Contains(stderr.String(), "> FILE") {
		t.Errorf("hearth backup - on a terminal: exit %d\n%s\nwant %d, saying to redirect it", code, stderr.String(), exitUsage)
	}
	if _, err := tty.WriteString(mark); err != nil {
		t.Fatal(err)
	}
	shown := <-read
	if got := bytes.TrimSuffix(shown, []byte(mark)); len(got) > 0 {
		t.Errorf("hearth backup - wrote %d bytes to the terminal: %q", len(got), got[:min(len(got), 64)])
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/testenv"
	"github.com/hearth-dev/hearth/internal/testnet"
)

// TestReadmeCluster runs the README's cluster section as written, with
// Debian's etcd and openssl: three hosts on one machine, a package warmed
// on each, questions submitted to one host landing on the host that knows
// their package, then a host killed and placement moving on. Only the
// ports are changed, to free ones.
func TestReadmeCluster(t *testing.T) {
	for _, tool := range []string{"etcd", "openssl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool+" is missing", "apt-get install etcd-server openssl")
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n## Several hosts, one placement\n")
	section, _, _ = strings.Cut(section, "\n## ")
	m := shBlock.FindStringSubmatch(section)
	if m == nil {
		t.Fatal("the README's cluster section has no sh block")
	}
	script := m[1]
	for _, port := range []string{"2379", "2380", "7421", "7422", "7423"} {
		if !strings.Contains(script, ":"+port) {
			t.Fatalf("the README's script no longer uses port %s; update this test", port)
		}
		script = strings.ReplaceAll(script, ":"+port, fmt.Sprintf(":%d", testnet.FreePort(t)))
	}

	dir, bin := t.TempDir(), t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "hearth")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HEARTH_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GORACE=atexit_sleep_ms=0")
	// The script leaves etcd and the two surviving hosts running in the
	// background: one process group, stopped as a whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if syscall.Kill(-pgid, 0) != nil {
				return
			}
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
	err = cmd.Wait()
	logs := func() string {
		var b strings.Builder
		for _, f := range []string{"a.log", "b.log", "c.log", "etcd.log"} {
			data, _ := os.ReadFile(filepath.Join(dir, f))
			fmt.Fprintf(&b, "--- %s\n%s\n", f, data)
		}
		return b.String()
	}
	if err != nil {
		t.Fatalf("the README's script: %v\nstdout:\n%s\nstderr:\n%s\n%s", err, stdout.String(), stderr.String(), logs())
	}

	// The script keeps the data directories out of the agents' workspace,
	// as the README's Configure section asks (the walkthrough saw every
	// host warn that they were in it).
	for _, f := range []string{"a.log", "b.log", "c.log"} {
		if data, _ := os.ReadFile(filepath.Join(dir, f)); strings.Contains(string(data), "inside the workspace") {
			t.Errorf("%s warns that the data directory is inside the workspace:\n%s", f, data)
		}
	}

	var ran []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(line, "task-") && strings.Contains(line, " ran on ") {
			ran = append(ran, line)
		}
	}
	if len(ran) != 7 {
		t.Fatalf("%d tasks ran, want the script's 7:\n%s", len(ran), stdout.String())
	}
	wants := []struct{ in, notIn string }{
		{notIn: "(host "}, {notIn: "(host "}, {notIn: "(host "}, // each host warms its own
		{in: "(host b)"}, {in: "(host c)"}, {notIn: "(host "}, // the questions land where their package is
		{notIn: "(host c)"}, // c is dead
	}
	for i, w := range wants {
		if w.in != "" && !strings.Contains(ran[i], w.in) || w.notIn != "" && strings.Contains(ran[i], w.notIn) {
			t.Errorf("task %d: %s\nwant %q in it, %q not", i+1, ran[i], w.in, w.notIn)
		}
	}
	if strings.Count(stdout.String(), "HOST ") != 2 || !strings.Contains(stdout.String(), "a *") {
		t.Errorf("hosts list:\n%s", stdout.String())
	}
}

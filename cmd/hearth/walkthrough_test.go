package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeSection is the text of the README section headed title, up to
// the next heading of its level or above.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("the README has no section %q", heading)
	}
	level := strings.Fields(heading)[0] + " "
	for _, stop := range []string{"\n## ", "\n" + level} {
		section, _, _ = strings.Cut(section, stop)
	}
	return section
}

// readmeLines are the command lines of a section's sh blocks.
func readmeLines(t *testing.T, section string) []string {
	t.Helper()
	var lines []string
	for _, m := range shBlock.FindAllStringSubmatch(section, -1) {
		for _, l := range strings.Split(strings.TrimSpace(m[1]), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// newUser is what a new user's shell has, in the repository's root: the
// hearth command (this test binary, as `go run ./cmd/hearth` and `go
// install ./cmd/hearth` make it) on the PATH, a home with nothing of
// hearth's in it, and none of hearth's variables.
type newUser struct {
	t     *testing.T
	env   []string
	state string
}

func newUserShell(t *testing.T) *newUser {
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "hearth")); err != nil {
		t.Fatal(err)
	}
	u := &newUser{t: t, state: t.TempDir()}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HEARTH_") && !strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			u.env = append(u.env, kv)
		}
	}
	u.env = append(u.env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "XDG_STATE_HOME="+u.state, "GORACE=atexit_sleep_ms=0")
	return u
}

// command is line as the shell runs it, `go run ./cmd/hearth` being the
// hearth command.
func (u *newUser) command(ctx context.Context, line string) *exec.Cmd {
	line = strings.ReplaceAll(line, "go run ./cmd/hearth ", "hearth ")
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = "../.."
	cmd.Env = u.env
	return cmd
}

// run runs line to its end and returns its output; it fails the test on
// a failure or a warning.
func (u *newUser) run(line string) string {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := u.command(ctx, line).CombinedOutput()
	if err != nil {
		u.t.Fatalf("%s: %v\n%s", line, err, out)
	}
	if strings.Contains(string(out), "[WARN]") || strings.Contains(string(out), "Warning:") {
		u.t.Errorf("%s warns:\n%s", line, out)
	}
	return string(out)
}

// TestReadmeFirstSteps runs the README's first steps as a new user would,
// command by command as written: the Quick start's tour (its test command
// aside), a task on its own, and the daemon walkthrough, where a run
// started in another terminal goes through the daemon and the dashboard
// shows it. Nothing may warn. Only the daemon's dashboard port is
// changed, to a free one.
func TestReadmeFirstSteps(t *testing.T) {
	t.Parallel()
	u := newUserShell(t)

	quick := readmeLines(t, readmeSection(t, "## Quick start"))
	if len(quick) != 3 || !strings.HasPrefix(quick[0], "go run ./cmd/hearth run examples/code-tour") || !strings.HasPrefix(quick[1], "go test ") {
		t.Fatalf("the Quick start's commands changed: %q", quick)
	}
	out := u.run(quick[0])
	if !strings.Contains(out, "48 succeeded") || !strings.Contains(out, "data in "+filepath.Join(u.state, "hearth", "code-tour-")) {
		t.Errorf("the tour: %s\nwant its 48 questions answered, its data in the state directory", out)
	}
	if !strings.Contains(strings.Join(strings.Fields(readmeSection(t, "## Quick start")), " "), "`go run ./cmd/hearth --config examples/code-tour sessions list`") {
		t.Errorf("the Quick start no longer shows how to list the tour's sessions")
	} else if out := u.run("go run ./cmd/hearth --config examples/code-tour sessions list"); !strings.Contains(out, "gotour-") {
		t.Errorf("the tour's sessions:\n%s", out)
	}
	if out := u.run(quick[2]); !strings.Contains(out, "package http (net/http)") {
		t.Errorf("a task on its own: %s", out)
	}

	daemon := readmeSection(t, "## Run hearth as a daemon")
	lines := readmeLines(t, daemon)
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "hearth serve ") || !strings.HasSuffix(lines[3], " dashboard") {
		t.Fatalf("the daemon walkthrough's commands changed: %q", lines)
	}
	serve := u.command(context.Background(), lines[0]+" --http 127.0.0.1:0")
	serve.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-serve.Process.Pid, syscall.SIGTERM)
		_ = serve.Wait()
		if strings.Contains(stderr.String(), "[WARN]") {
			t.Errorf("hearth serve warns:\n%s", stderr.String())
		}
	})
	printed := map[string]string{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 {
			printed[f[0]] = f[1]
		}
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), "sign in") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	if printed["dashboard"] == "" || printed["token"] == "" {
		t.Fatalf("hearth serve printed %v\nstderr:\n%s", printed, stderr.String())
	}
	// Its output as the README shows it: the same lines.
	for k := range printed {
		if k != "hearth" && !strings.Contains(daemon, "\n  "+k+" ") {
			t.Errorf("hearth serve prints a %q line that the README's output does not show", k)
		}
	}

	run := u.run(lines[1])
	id := regexp.MustCompile(`(?m)^run (\S+)$`).FindStringSubmatch(run)
	if !strings.Contains(run, " in the daemon (") || id == nil || !strings.Contains(run, "48 succeeded") {
		t.Fatalf("the run in another terminal: %s\nwant it run in the daemon", run)
	}
	if out := u.run(lines[2]); !strings.Contains(out, id[1]) {
		t.Errorf("runs list: %s\nwant run %s", out, id[1])
	}
	if out := u.run(lines[3]); !strings.Contains(out, strings.TrimSuffix(printed["dashboard"], "/")+"/login?code=") {
		t.Errorf("dashboard: %s\nwant a sign-in link to %s", out, printed["dashboard"])
	}
	// What the dashboard shows, as its page reads it.
	token, err := os.ReadFile(printed["token"])
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, printed["dashboard"]+"api/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil || !strings.Contains(string(snap["runs"]), id[1]) {
		t.Errorf("the dashboard's snapshot (%v): %s\nwant run %s in it", err, fmt.Sprint(snap["runs"]), id[1])
	}
}

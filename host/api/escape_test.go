package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/internal/procgroup"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/internal/hostile"
	"github.com/hearth-dev/hearth/internal/testenv"
)

// TestEscapeSuite is the escape suite (issue 25): a hostile agent, built
// on the SDK and confined as users run agents (confinement = "require",
// a workspace, a write grant, a command that names a file in a home
// directory), tries every way out of its sandbox the project knows of
// (package internal/hostile lists them: files, /proc, links, processes,
// signals, ptrace, capabilities, sockets of every family, the daemon's
// API over every transport, from the plugin and from descendants that
// left its process group and session) and reports each attempt. Every
// one must fail. It runs twice: with TCP open (connect_ports unset), so
// that the daemon's own checks are what refuse, and with connect_ports
// = [], so that the kernel is. Then the agent plants a link over its
// write grant and crashes: the next start must not follow it.
func TestEscapeSuite(t *testing.T) {
	t.Parallel()
	if st := process.Landlock(); !st.Available() {
		testenv.Missing(t, "no Landlock: "+st.String(), "run on a Linux kernel with Landlock, as CI machines have")
	}
	root := shortTempDir(t)
	mk := func(p, body string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	home := filepath.Join(root, "home")
	tg := hostile.Targets{
		Home:    home,
		Bashrc:  mk(filepath.Join(home, ".bashrc"), "echo hi\n", 0o644),
		ArgFile: mk(filepath.Join(home, "agent-notes.txt"), "notes\n", 0o644),
		Secret:  mk(filepath.Join(root, "secret.txt"), "secret\n", 0o600),
	}
	ws := filepath.Join(root, "ws")
	tg.WriteGrant = filepath.Join(ws, "build")
	if err := os.MkdirAll(tg.WriteGrant, 0o755); err != nil {
		t.Fatal(err)
	}
	token := mk(filepath.Join(root, "token"), "escape-suite-token-0123456789\n", 0o600)
	abstract := "@hearth-escape-" + filepath.Base(root)
	al, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	tg.Abstract = abstract

	agent := func(name string, ports []uint16) *config.Agent {
		a := testAgent(name)
		a.Command = []string{os.Args[0], tg.ArgFile}
		a.Env[envPlugin] = "hostile"
		a.Confinement = config.ConfinementRequire
		a.Workspace = ws
		a.WritePaths = []string{tg.WriteGrant}
		a.ConnectPorts = ports
		return a
	}
	sibling := testAgent("sibling")
	sibling.Workspace = ws
	cfg := &config.Config{
		DataDir: filepath.Join(root, "data"),
		Agents:  []*config.Agent{agent("open", nil), agent("netless", []uint16{}), sibling},
		Server:  config.Server{HTTP: "127.0.0.1:0", Listen: "127.0.0.1:0", TokenFile: token},
	}
	d := startDaemon(t, cfg)
	tg.Socket, tg.TCP, tg.HTTP, tg.TokenFile, tg.DataDir, tg.HostPID = d.l.Socket, d.l.TCP, d.l.HTTP, token, cfg.DataDir, os.Getpid()
	ctx := context.Background()
	out, err := d.h.Submit(ctx, hearth.Task{Agent: "sibling", Prompt: "pid"})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Sscan(out.Result.Output, &tg.SiblingPID)

	attack := func(agent string, tg hostile.Targets) []hostile.Attempt {
		t.Helper()
		b, _ := json.Marshal(tg)
		out, err := d.h.Submit(ctx, hearth.Task{Agent: agent, Prompt: string(b)})
		if err != nil {
			t.Fatalf("%s: %v", agent, err)
		}
		var as []hostile.Attempt
		if err := json.Unmarshal([]byte(out.Result.Output), &as); err != nil {
			t.Fatalf("%s: %v: %s", agent, err, out.Result.Output)
		}
		return as
	}
	for _, run := range []struct {
		agent      string
		restricted bool
	}{{"open", false}, {"netless", true}} {
		tg := tg
		tg.Restricted = run.restricted
		as := attack(run.agent, tg)
		if len(as) < 30 {
			t.Errorf("%s: only %d attempts came back", run.agent, len(as))
		}
		for _, a := range as {
			if a.Escaped {
				t.Errorf("%s: ESCAPED: %s: %s", run.agent, a.Name, a.Detail)
			} else {
				t.Logf("%s: held: %s: %s", run.agent, a.Name, a.Detail)
			}
		}
	}

	// Between starts: a link planted over the write grant, then a crash.
	sub, err := d.h.Subscribe(ctx, hearth.EventFilter{Buffer: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	tg.Stage = "plant"
	if as := attack("open", tg); len(as) != 1 || !strings.Contains(as[0].Detail, "planted") {
		t.Fatalf("plant: %+v", as)
	}
	for e := range sub.Events() {
		if e.Kind == hearth.EventSessionLost && e.Agent == "open" {
			break
		}
	}
	tg.Stage = "reap"
	b, _ := json.Marshal(tg)
	out, err = d.h.Submit(ctx, hearth.Task{Agent: "open", Prompt: string(b)})
	switch {
	case err != nil && errors.Is(err, hearth.ErrConfinement) && strings.Contains(err.Error(), tg.WriteGrant):
		t.Logf("held: the start after the plant was refused: %v", err)
	case err != nil:
		t.Errorf("the start after the plant failed, but not naming the planted grant: %v", err)
	default:
		t.Errorf("the start after the plant was not refused: %s", out.Result.Output)
	}
}

// TestEscapeSuiteWithoutCgroups: where the host cannot make cgroups (an
// unprivileged user without a delegated subtree), the daemon still
// refuses every process under a confined plugin's sandbox, by the
// no_new_privs and seccomp filter the shim leaves it, which nothing it
// starts can shed: the API attempts of the suite, setsid orphans and
// double forks included, all fail.
func TestEscapeSuiteWithoutCgroups(t *testing.T) {
	if st := process.Landlock(); !st.Available() {
		testenv.Missing(t, "no Landlock: "+st.String(), "run on a Linux kernel with Landlock, as CI machines have")
	}
	defer procgroup.CgroupsOffForTesting()()
	root := shortTempDir(t)
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	a := testAgent("hostile")
	a.Env[envPlugin] = "hostile"
	a.Confinement = config.ConfinementRequire
	a.Workspace = ws
	d := startDaemon(t, &config.Config{DataDir: filepath.Join(root, "data"), Agents: []*config.Agent{a}})
	b, _ := json.Marshal(hostile.Targets{Socket: d.l.Socket, HTTP: d.l.HTTP, HostPID: os.Getpid(), Stage: "api"})
	out, err := d.h.Submit(context.Background(), hearth.Task{Agent: "hostile", Prompt: string(b)})
	if err != nil {
		t.Fatal(err)
	}
	var as []hostile.Attempt
	if err := json.Unmarshal([]byte(out.Result.Output), &as); err != nil || len(as) < 6 {
		t.Fatalf("%v: %s", err, out.Result.Output)
	}
	for _, a := range as {
		if a.Escaped {
			t.Errorf("ESCAPED: %s: %s", a.Name, a.Detail)
		} else {
			t.Logf("held: %s: %s", a.Name, a.Detail)
		}
	}
}

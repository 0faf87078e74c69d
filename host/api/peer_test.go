package api_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/sdk"
)

// caller is the scripted agent, plus a step that calls the daemon
// through its real client: "call:SOCKET" lists the daemon's sessions,
// from the plugin itself; "childcall:SOCKET" does it from a process the
// plugin starts (this test binary, as a plain client).
type caller struct{ sdk.Agent }

func (c caller) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	if sock, ok := strings.CutPrefix(t.Prompt, "call:"); ok {
		n, err := callDaemon(ctx, sock)
		if err != nil {
			return sdk.Result{}, err
		}
		return sdk.Result{Output: fmt.Sprintf("%d sessions", n)}, nil
	}
	if sock, ok := strings.CutPrefix(t.Prompt, "childcall:"); ok {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envPlugin+"=", envCall+"="+sock)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return sdk.Result{}, fmt.Errorf("%v: %s", err, out)
		}
		return sdk.Result{Output: string(out)}, nil
	}
	return c.Agent.Run(ctx, t, cb)
}

// envCall makes this test binary a client that calls the daemon on the
// socket it names and exits (the plugin's child).
const envCall = "HEARTH_TEST_CALL"

func init() {
	if sock := os.Getenv(envCall); sock != "" {
		n, err := callDaemon(context.Background(), sock)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%d sessions\n", n)
		os.Exit(0)
	}
}

func callDaemon(ctx context.Context, sock string) (int, error) {
	c, err := client.Dial(ctx, client.Options{Socket: sock, Lazy: true})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	s, err := c.Sessions(ctx)
	return len(s), err
}

// TestDaemonRefusesItsPlugins: a plugin the daemon started, and a
// process that plugin starts, are refused on the daemon's socket, by
// name; the daemon's other callers are served. The plugin here is
// confined where Landlock is, and its calls are refused all the same: a
// Landlock older than ABI 9 does not restrict connecting to a socket.
func TestDaemonRefusesItsPlugins(t *testing.T) {
	t.Parallel()
	a := testAgent("scripted")
	a.Env[envPlugin] = "caller"
	// An unconfined plugin reaches the socket on any kernel: the daemon
	// is what refuses it.
	off := testAgent("unconfined")
	off.Env[envPlugin] = "caller"
	off.Confinement = config.ConfinementOff
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{a, off}})
	ctx := context.Background()
	for _, prompt := range []string{"call:" + d.l.Socket, "childcall:" + d.l.Socket} {
		_, err := d.h.Submit(ctx, hearth.Task{Agent: "unconfined", Prompt: prompt})
		if err == nil || !strings.Contains(err.Error(), "the daemon refuses calls from its own plugins") || !strings.Contains(err.Error(), `of agent "unconfined"`) {
			t.Errorf("unconfined %s: got %v, want the refusal naming the plugin", strings.Split(prompt, ":")[0], err)
		}
	}

	// From Landlock ABI 9 the kernel refuses a confined plugin's connect
	// itself (EACCES) before the daemon sees it.
	kernel := process.Landlock().ABI >= 9
	for _, prompt := range []string{"call:" + d.l.Socket, "childcall:" + d.l.Socket} {
		_, err := d.h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: prompt})
		switch {
		case err == nil:
			t.Errorf("%s: served", strings.Split(prompt, ":")[0])
		case kernel && strings.Contains(err.Error(), "permission denied"):
		case !strings.Contains(err.Error(), "the daemon refuses calls from its own plugins") || !strings.Contains(err.Error(), `of agent "scripted"`):
			t.Errorf("%s: got %v, want the refusal naming the plugin", strings.Split(prompt, ":")[0], err)
		}
	}
	if !strings.Contains(d.log.String(), "refused a connection on the unix socket") {
		t.Errorf("the daemon's log does not mention the refusal:\n%s", d.log)
	}
	// The test itself, not a plugin, is served.
	if _, err := d.c.Sessions(ctx); err != nil {
		t.Errorf("a caller that is no plugin: %v", err)
	}
	if n, err := callDaemon(ctx, d.l.Socket); err != nil || n != 2 {
		t.Errorf("a new connection from the test: %d sessions, %v; want 2, nil", n, err)
	}
}

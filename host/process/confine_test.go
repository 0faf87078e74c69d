package process

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/confine"
)

// granted returns the policy's grants of paths under root, as
// "path access" with root cut off.
func granted(p *confine.Policy, root string) []string {
	var out []string
	for _, g := range p.Grants {
		if rel, ok := strings.CutPrefix(g.Path, root); ok {
			out = append(out, rel+" "+string(g.Access))
		}
	}
	slices.Sort(out)
	return out
}

// TestPolicySplitsAroundTheDataDirectory: a workspace that holds the data
// directory is granted entry by entry, around it; links are judged by
// where they lead.
func TestPolicySplitsAroundTheDataDirectory(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	for _, d := range []string{"ws/src", "ws/state/.hearth/files", "ws/state/cache", "elsewhere"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ws/README", "ws/state/notes", "elsewhere/x"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"ws/to-data":   filepath.Join(ws, "state/.hearth"), // into the data directory
		"ws/to-files":  filepath.Join(ws, "state/.hearth/files"),
		"ws/loop":      ws, // back to the workspace
		"ws/to-else":   filepath.Join(root, "elsewhere"),
		"ws/dangling":  filepath.Join(root, "nowhere"),
		"ws/src/up-up": filepath.Join(ws, "state"),
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(ws, "state/.hearth")
	c := &Confinement{Protect: []string{data}, Blobs: filepath.Join(data, "files")}
	p, err := policy(c, "/bin/true", []string{"true"}, ws)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/elsewhere write",      // through ws/to-else: a link the user put in the workspace
		"/ws/README write",      // the workspace's entries, one by one
		"/ws/src write",         // its link up-up to ws/state grants nothing: Landlock judges where a path leads
		"/ws/state/cache write", // beside the data directory
		"/ws/state/notes write",
		"/ws/state/.hearth/files read-by-name", // run files, by name only
	}
	slices.Sort(want)
	if got := granted(p, root); !slices.Equal(got, want) {
		t.Errorf("grants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, g := range p.Grants {
		if g.Path == ws || g.Path == filepath.Join(ws, "state") {
			t.Errorf("%s is granted %s: it holds the data directory", g.Path, g.Access)
		}
	}

	for name, tc := range map[string]struct {
		c    Confinement
		ws   string
		want string
	}{
		"workspace in the data dir": {Confinement{Protect: []string{data}}, filepath.Join(data, "files"), "lies inside " + data},
		"grant in the data dir":     {Confinement{Protect: []string{data}, Read: []string{filepath.Join(ws, "to-data")}}, ws, "read_paths entry " + filepath.Join(ws, "to-data") + " lies inside " + data},
		"missing grant":             {Confinement{Write: []string{filepath.Join(root, "nowhere")}}, ws, "write_paths entry " + filepath.Join(root, "nowhere") + " does not exist"},
	} {
		if _, err := policy(&tc.c, "/bin/true", []string{"true"}, tc.ws); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}

// TestStartRequiresLandlock: a plugin that requires confinement is not
// started where Landlock is missing (a reload can add such an agent to a
// running host), and the error says why and what to do.
// TestPolicyGrantsAnInterpretersScript: for `python3 agents/finder.py`,
// the script is readable, and nothing else of its directory (which may
// be a home directory: issue 25, finding 4); an argument that is not a
// file grants nothing, and a script inside the data directory stays out
// of reach.
func TestPolicyGrantsAnInterpretersScript(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, agents, data := filepath.Join(root, "ws"), filepath.Join(root, "agents"), filepath.Join(root, "data")
	for _, d := range []string{ws, agents, data} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(agents, "finder.py"), filepath.Join(data, "evil.py")} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := &Confinement{Protect: []string{data}}
	p, err := policy(c, "/usr/bin/python3", []string{"python3", filepath.Join(agents, "finder.py"), "--mode=fast", filepath.Join(data, "evil.py")}, ws)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/agents/finder.py read", "/ws write"}
	if got := granted(p, root); !slices.Equal(got, want) {
		t.Errorf("grants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestGrantsAreNotRedirected (issue 25, finding 2): a grant that leads
// elsewhere than when the config was loaded (a link planted over it,
// over the workspace, over the command's file) refuses the start, naming
// the path; one that still leads where it did is granted, resolved, for
// the shim to open without following links.
func TestGrantsAreNotRedirected(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	build, cache, script := filepath.Join(ws, "build"), filepath.Join(root, "cache"), filepath.Join(ws, "agent.py")
	for _, d := range []string{ws, home, build, cache} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{script, filepath.Join(home, "secret")} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	argv := []string{"python3", script}
	c := &Confinement{Write: []string{build}, Read: []string{cache}, Pins: PinGrants(ws, []string{cache}, []string{build}, argv)}
	p, err := policy(c, "/usr/bin/python3", argv, ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range p.Grants {
		if strings.HasPrefix(g.Path, root) && !g.NoFollow {
			t.Errorf("%s is granted following links", g.Path)
		}
	}
	swap := func(path, to string) {
		t.Helper()
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, path); err != nil {
			t.Fatal(err)
		}
	}
	swap(build, home)
	if _, err := policy(c, "/usr/bin/python3", argv, ws); !errors.Is(err, hearth.ErrConfinement) || !strings.Contains(err.Error(), build) || !strings.Contains(err.Error(), home) {
		t.Errorf("a link over write_paths: got %v, want a refusal naming %s and %s", err, build, home)
	}
	if err := os.Remove(build); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(build, 0o700); err != nil {
		t.Fatal(err)
	}
	swap(script, filepath.Join(home, "secret"))
	if _, err := policy(c, "/usr/bin/python3", argv, ws); !errors.Is(err, hearth.ErrConfinement) || !strings.Contains(err.Error(), script) {
		t.Errorf("a link over the command's file: got %v, want a refusal naming %s", err, script)
	}
}

func TestStartRequiresLandlock(t *testing.T) {
	defer confine.FakeForTesting(confine.Status{Reason: "faked by the test"})()
	_, err := Start(context.Background(), Launch{
		Agent: "strict", Session: "strict-1", Argv: []string{"/bin/true"}, Dir: t.TempDir(),
		StartTimeout: time.Second, Logger: hclog.NewNullLogger(), Confine: &Confinement{Require: true},
	})
	var pe *hearth.PluginError
	if !errors.As(err, &pe) || !errors.Is(err, hearth.ErrConfinement) || !strings.Contains(err.Error(), "faked by the test") ||
		!strings.Contains(err.Error(), `confinement = "auto"`) {
		t.Errorf("got %v, want a plugin error for confinement naming the reason and the fix", err)
	}
}

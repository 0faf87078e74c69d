package api

import (
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/host/process"
)

// TestRefusal: who the unix socket serves. A test cannot become another
// user without root, so the rule is checked here on the credentials the
// kernel would give; TestDaemonRefusesItsPlugins covers plugins end to
// end.
func TestRefusal(t *testing.T) {
	t.Parallel()
	plugins := func(pid int) (process.Owner, bool) {
		switch pid {
		case 100:
			return process.Owner{Agent: "coder", Session: "coder-1", PID: 100}, true
		case 101: // a child of 100
			return process.Owner{Agent: "coder", Session: "coder-1", PID: 100}, true
		case 102: // under a confined plugin's sandbox, on a host without cgroups
			return process.Owner{Sandboxed: true}, true
		}
		return process.Owner{}, false
	}
	for _, tc := range []struct {
		name string
		pid  int
		uid  uint32
		want string
	}{
		{"the daemon's user", 7, 1000, ""},
		{"another user", 7, 1001, "the daemon serves its own user (uid 1000) only; process 7 runs as uid 1001"},
		{"root", 7, 0, "runs as uid 0"},
		{"a plugin", 100, 1000, `process 100 is a plugin of agent "coder" (session coder-1)`},
		{"a plugin's child", 101, 1000, `process 101 was started by process 100, a plugin of agent "coder"`},
		{"under a plugin's sandbox", 102, 1000, "no_new_privs and a seccomp filter"},
	} {
		got := refusal(tc.pid, tc.uid, 1000, plugins)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

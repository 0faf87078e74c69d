package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
)

// hostile is what an agent hostile to the person at the terminal writes:
// clear the screen, retitle the window, move the cursor up and rewrite
// the line, a C1 CSI, a right-to-left override. Its steps must not hold
// ';' (the scripted agent's step separator).
const hostile = "\x1b[2J\x1b[H\x1b]0:pwned\x07\x1b[1Aok\rrm -rf ~\u009b2J\u202egnp.exe"

// noControls fails the test if out holds anything a terminal acts on.
func noControls(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\r", "\x07", "\u009b", "\u202e"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s reaches the terminal with %q live: %q", what, bad, out)
		}
	}
}

// TestTerminalOutputIsNeutralized: what an agent says (its output, its
// error) reaches the terminal with its escape sequences shown, not
// obeyed (issue 13); --json stays the JSON of what the agent said.
func TestTerminalOutputIsNeutralized(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `agent "scripted" {
  command = ["`+os.Args[0]+`"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}`)
	env := map[string]string{"HEARTH_CONFIG": cfg, "HEARTH_DATA_DIR": t.TempDir()}
	code, out, errOut := run(t, env, "submit", "scripted", "echo:"+hostile)
	if code != 0 {
		t.Fatalf("submit: %d %s %s", code, out, errOut)
	}
	noControls(t, "an agent's output", out+errOut)
	if !strings.Contains(out, `\u001b[2J`) || !strings.Contains(out, `\u009b2J`) {
		t.Errorf("the output does not show the escapes it held: %q", out)
	}

	code, out, errOut = run(t, env, "submit", "scripted", "permanent:"+hostile)
	if code != exitWork {
		t.Fatalf("failing submit: %d %s %s", code, out, errOut)
	}
	noControls(t, "an agent's error", out+errOut)

	code, out, _ = run(t, env, "submit", "scripted", "echo:"+hostile, "--json")
	var o hearth.Outcome
	if code != 0 || json.Unmarshal([]byte(out), &o) != nil || !strings.Contains(o.Result.Output, hostile) {
		t.Errorf("--json: %d %q; want JSON holding the agent's output as it was", code, out)
	}
	noControls(t, "--json", out)
}

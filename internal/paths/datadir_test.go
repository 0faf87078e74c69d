package paths

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultDataDir: the default data directory lies in the state
// directory, never beside the config file (inside its agents'
// workspace); one per config file, the same for the same file whatever
// the current directory; a .hearth of an earlier version is used while
// the new one does not exist, with where to move it.
func TestDefaultDataDir(t *testing.T) {
	state, dir := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "hearth.hcl")
	if err := os.WriteFile(file, []byte("agent \"gotour\" {\n  bundled = \"gotour\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	def, _, move := DefaultDataDir(file, dir, state)
	if filepath.Dir(def) != state || !strings.HasPrefix(filepath.Base(def), filepath.Base(dir)+"-") || move != "" {
		t.Errorf("data dir %s (move %q), want one in %s named after %s", def, move, state, filepath.Base(dir))
	}
	if Within(def, dir) {
		t.Errorf("data dir %s is inside the config's directory %s, its agents' workspace", def, dir)
	}
	// The same file from another directory, through a symlink: the same
	// data directory. Another file beside it: another one.
	t.Chdir(t.TempDir())
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := DefaultDataDir(filepath.Join(link, "hearth.hcl"), link, state); got != def {
		t.Errorf("through a symlink: %s, want %s", got, def)
	}
	other := filepath.Join(dir, "other.hcl")
	if got, _, _ := DefaultDataDir(other, dir, state); got == def || !strings.Contains(got, "-other-") {
		t.Errorf("other.hcl beside it: %s, want a data directory of its own", got)
	}
	// No config: keyed by the directory.
	if a, _, _ := DefaultDataDir("", dir, state); a == def || filepath.Dir(a) != state {
		t.Errorf("no config in %s: %s", dir, a)
	}

	// An earlier version's .hearth beside the file is kept, and said
	// where to go; once the new one exists it wins.
	legacy := filepath.Join(dir, LegacyDataDir)
	if err := os.Mkdir(legacy, 0o700); err != nil {
		t.Fatal(err)
	}
	got, from, move := DefaultDataDir(file, dir, state)
	if got != legacy || move != def || !strings.Contains(from, "earlier versions") {
		t.Errorf("with %s: %s (%s), move to %q; want the legacy directory, to move to %s", legacy, got, from, move, def)
	}
	if err := os.MkdirAll(def, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, _, move := DefaultDataDir(file, dir, state); got != def || move != "" {
		t.Errorf("with both: %s (move %q), want the new default", got, move)
	}

	// No home: no default, and a message saying why.
	if got, from, _ := DefaultDataDir(file, dir, ""); got != "" || !strings.Contains(from, "HOME") {
		t.Errorf("no state home: %q (%s)", got, from)
	}
}

func TestStateHome(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}, "/x/state/hearth"},
		{map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/home/u"}, "/home/u/.local/state/hearth"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/hearth"},
		{map[string]string{}, ""},
	} {
		if got := StateHome(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("StateHome(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}

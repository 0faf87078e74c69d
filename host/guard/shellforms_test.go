package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/internal/testenv"
)

// TestShellFormsBashReads (issue 25, finding 6): each command reads
// .env or a key in ~/.ssh when real bash runs it in the tree (the test
// runs it and finds the secret in its output), and the guard on .env and
// ~/.ssh refuses it: it reads the command as bash does, or refuses what
// it cannot read. The forms: here-documents and here-strings piped into
// a shell, rbash and a copied shell, arrays, set --, a function's
// arguments, printf -v, read, operand prefixes and suffixes (dd if=,
// curl -d @, git's REV:PATH, -v SRC:DST), ~user, cd ~-, aliases, and
// /proc/self/cwd.
func TestShellFormsBashReads(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Missing(t, "no bash", "apt-get install bash")
	}
	tr := newTree(t)
	if err := os.WriteFile(filepath.Join(tr.w, ".env"), []byte("SECRET=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set := secretsGuard(t, tr.resolver(t, PathPolicy{}))
	forms := []struct{ name, cmd, secret string }{
		{"here-document into sh", "cat <<'E' | sh\ncat .env\nE", "SECRET"},
		{"here-string into bash", "cat <<< 'cat .env' | bash", "SECRET"},
		{"here-document to an unknown program", "cp " + bash + " ./shx && ./shx <<'E'\ncat .env\nE", "SECRET"},
		{"rbash", "rbash -c 'cat .env'", "SECRET"},
		{"a copied shell", "cp " + bash + " ./x && ./x -c 'cat .env'", "SECRET"},
		{"a shell named by a variable", "S=" + bash + "; $S -c 'cat .env'", "SECRET"},
		{"an array", "a=(x .en); cat \"${a[1]}v\"", "SECRET"},
		{"an array element", "a[3]=.en; cat \"${a[3]}v\"", "SECRET"},
		{"set --", "set -- .en; cat \"${1}v\"", "SECRET"},
		{"set -- with options", "set -e -- x .en; cat \"${2}v\"", "SECRET"},
		{"a function's arguments", "f() { cat \"${1}v\"; }; f .en", "SECRET"},
		{"a function's $@", "g() { cat \"$@\"v; }; g .en", "SECRET"},
		{"printf -v", "printf -v p '%s%s' .e nv; cat \"$p\"", "SECRET"},
		{"read <<<", "read p <<< .en; cat \"${p}v\"", "SECRET"},
		{"dd if=", "dd if=.env status=none", "SECRET"},
		{"an option's @file", "cp .env /dev/stdout --no-preserve=@.env 2>/dev/null; cat @.env 2>/dev/null || cat .env", "SECRET"},
		{"git REV:PATH", "git init -q r && cp .env r/ && cd r && git -c user.email=a@b -c user.name=a add -f .env && git -c user.email=a@b -c user.name=a commit -qm x && git show HEAD:.env", "SECRET"},
		{"SRC:DST", "tar -cf - .env:x 2>/dev/null; cat .env", "SECRET"},
		{"cd ~-", "cd ~/.ssh && cd / && cat ~-/id_rsa", "KEY"},
		{"cd -", "cd ~/.ssh && cd / && cd - >/dev/null && cat id_rsa", "KEY"},
		{"an alias", "shopt -s expand_aliases\nalias c='cat .env'\nc", "SECRET"},
		{"/proc/self/cwd", "cat /proc/self/cwd/.env", "SECRET"},
		{"/dev/fd", "exec 3<.env; cat /dev/fd/3", "SECRET"},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			// The command runs in a copy of the workspace, so that what it
			// makes (./x, r/) does not leak into the next.
			if err := exec.Command("cp", "-a", tr.w+"/.", dir).Run(); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bash, "-c", f.cmd)
			cmd.Dir = dir
			cmd.Env = []string{"HOME=" + tr.home, "PATH=" + os.Getenv("PATH")}
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), f.secret) {
				t.Fatalf("bash does not read the secret with %q: %s", f.cmd, out)
			}
			c := Call{Tool: "Bash", Input: map[string]any{"command": f.cmd}, Cwd: dir}
			env := set.ToolUse(c)
			if set.First(PreToolUse, Match{}, env) == nil {
				t.Errorf("the guard lets %q through: targets %v, unread %q", f.cmd, env.Targets, env.Unread)
			}
		})
	}
}

// TestTildeUser: ~user is the user's home directory from the user
// database, as bash expands it, so touches_under("~/.ssh") holds for
// cat ~ME/.ssh/id_rsa where ME is the user hearth runs as.
func TestTildeUser(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Missing(t, "no bash", "apt-get install bash")
	}
	me := os.Getenv("USER")
	if me == "" {
		me = "root"
	}
	home := userHome(me)
	if home == "" {
		t.Skipf("%s is in no user database", me)
	}
	out, err := exec.Command(bash, "-c", "echo ~"+me+"/.ssh/id_rsa").Output()
	if err != nil || strings.TrimSpace(string(out)) != home+"/.ssh/id_rsa" {
		t.Fatalf("bash expands ~%s to %q (%v), want %s", me, out, err, home)
	}
	r, err := NewResolver(PathPolicy{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	set := secretsGuard(t, r)
	if set.First(PreToolUse, Match{}, set.ToolUse(Call{Tool: "Bash", Input: map[string]any{"command": "cat ~" + me + "/.ssh/id_rsa"}, Cwd: "/tmp"})) == nil {
		t.Errorf("cat ~%s/.ssh/id_rsa passes touches_under(\"~/.ssh\")", me)
	}
}

// TestZshIsReadAsZsh: where agents' commands run in zsh, they are parsed
// as zsh; its own expansions, which are not read, refuse the call.
func TestZshIsReadAsZsh(t *testing.T) {
	r, err := NewResolver(PathPolicy{Home: "/nonexistent/h", Shell: "zsh"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"cat =cat", "cat *(.)", "cat ${(f)x}", "cat ${~x}", "cat ${x:h}/.env"} {
		_, unread := r.read(Call{Tool: "Bash", Input: map[string]any{"command": cmd}, Cwd: "/nonexistent/w"})
		if len(unread) == 0 {
			t.Errorf("zsh %q was read as if bash", cmd)
		}
	}
	targets, unread := r.read(Call{Tool: "Bash", Input: map[string]any{"command": "cat .env"}, Cwd: "/nonexistent/w"})
	if len(unread) != 0 || len(targets) != 1 || targets[0].Path != "/nonexistent/w/.env" {
		t.Errorf("zsh cat .env: %v %q", targets, unread)
	}
}

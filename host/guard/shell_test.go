package guard

import (
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// shellTargets reads cmd, run in /nonexistent/w with home /nonexistent/h
// (so that nothing on disk takes part), and renders its targets as
// "access path", with W and H for the two directories.
func shellTargets(t testing.TB, cmd string) ([]string, string) {
	t.Helper()
	r, err := NewResolver(PathPolicy{Home: "/nonexistent/h", CaseSensitive: true})
	if err != nil {
		t.Fatal(err)
	}
	targets, unread := r.read(Call{Tool: "Bash", Input: map[string]any{"command": cmd}, Cwd: "/nonexistent/w"})
	var out []string
	for _, tg := range targets {
		p := strings.NewReplacer("/nonexistent/w", "W", "/nonexistent/h", "H", unknown, "?").Replace(tg.Path)
		out = append(out, tg.Access+" "+p)
	}
	slices.Sort(out)
	return out, strings.Join(unread, "; ")
}

func TestShellWords(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string
	}{
		{"cat .env", []string{"any W/.env"}},
		{"ls -la --color=auto /etc", []string{"any /etc", "any W/a", "any W/auto"}},
		{"cat -- -x", []string{"any W/-x"}},
		{"tar -xf.env -C/tmp", []string{"any /tmp", "any W/.env", "any W/f.env"}},
		{"ssh -i~/.ssh/id_rsa host", []string{"any /.ssh/id_rsa", "any /id_rsa", "any H/.ssh/id_rsa", "any W/.ssh/id_rsa", "any W/host"}},
		{"/usr/bin/cat x", []string{"any /usr/bin/cat", "any W/x"}},
		{"cat < in > out 2>&1 >> log &> all", []string{"read W/in", "write W/all", "write W/log", "write W/out"}},
		{"cat <<< 'a b'", []string{"any W/a b"}},
		{"sh -c 'cat ~/x'", []string{"any H/x", "any W/cat ~/x"}},
		{"echo \"$(cat a)\" `cat b` <(cat c)", []string{"any W/a", "any W/b", "any W/c"}},
		{"X=1 Y=$HOME/k; cat $Y", []string{"any H/k", "any W/1"}},
		{"for f in a b; do rm $f; done", []string{"any W/a", "any W/b"}},
		{"cd /tmp/d && cat x", []string{"any /tmp/d", "any /tmp/d/x", "any W/x"}},
		{"cd && cat x", []string{"any H/x", "any W/x"}},
		{"a=(one two); cat ${a[@]}", []string{"any W/one", "any W/two"}},
		{"cat ${U:-dflt}", []string{"any W/dflt"}},
		{"[[ -f ~/.k ]] && echo ok", []string{"any H/.k", "any W/ok"}},
		{"case $x in a) cat b;; esac", []string{"any W/a", "any W/b"}},
		{"f() { cat inner; }; f", []string{"any W/inner"}},
		{"cat '~/quoted'", []string{"any W/~/quoted"}},
		{"cat ~nosuchuser/x", []string{"any W/~nosuchuser/x"}},
		{"cat ~root/x", []string{"any /root/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			got, unread := shellTargets(t, tt.cmd)
			if unread != "" {
				t.Fatalf("unread: %s", unread)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestShellUnread(t *testing.T) {
	deep := "cat x"
	for range maxShellDepth + 1 {
		q, _ := syntax.Quote(deep, syntax.LangBash)
		deep = "sh -c " + q
	}
	for _, tt := range []struct{ cmd, want string }{
		{"cat $(x", "does not parse as bash"},
		{strings.Repeat("a ", maxCommand), "more than the 65536 read"},
		{"echo {1..300}", "expands to more than 256 words"},
		{deep, "nests commands more than 4 deep"},
	} {
		_, unread := shellTargets(t, tt.cmd)
		if !strings.Contains(unread, tt.want) {
			t.Errorf("%.40s: unread %q, want %q", tt.cmd, unread, tt.want)
		}
	}
}

// FuzzShellWords feeds the shell reader anything: it never panics, every
// target it makes is absolute and clean, and a command that names a
// path as one quoted word reaches the guard with that path.
func FuzzShellWords(f *testing.F) {
	for _, s := range []string{
		"cat .env", "sh -c 'cat ~/.ssh/id_rsa'", "X=a; cat $X/b", "cd d && cat f", "cat <<< x", "for f in *; do :; done",
		"echo $((1+2)) ${x:-y} ${#z} ${!p} $'a\\tb'", "a=(1 2); echo ${a[1]}", "cat {a,b}{c,d}", "coproc cat x", "time (cat y)",
		"bash <<EOF\ncat z\nEOF", "declare -x A=b; export C=d", "cat $(cat $(cat x))", "select x in a b; do :; done",
	} {
		f.Add(s, "secret/file name")
	}
	r, err := NewResolver(PathPolicy{Home: "/nonexistent/h", CacheTTL: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd, word string) {
		targets, _ := r.read(Call{Tool: "Bash", Input: map[string]any{"command": cmd}, Cwd: "/nonexistent/w"})
		for _, tg := range targets {
			if !path.IsAbs(tg.Path) || path.Clean(tg.Path) != tg.Path || !path.IsAbs(tg.Real) {
				t.Fatalf("target %q from %q is not absolute and clean", tg.Path, cmd)
			}
		}
		if word == "" || strings.ContainsAny(word, "\x00") || !strings.ContainsFunc(word, func(r rune) bool { return r != '/' && r != '.' }) {
			return
		}
		q, err := syntax.Quote(word, syntax.LangBash)
		if err != nil {
			return
		}
		targets, unread := r.read(Call{Tool: "Bash", Input: map[string]any{"command": "cat -- " + q}, Cwd: "/nonexistent/w"})
		want := path.Clean(join("/nonexistent/w", word))
		for _, tg := range targets {
			if tg.Path == want {
				return
			}
		}
		if len(unread) == 0 {
			t.Fatalf("cat %s: no target %q in %v", q, want, targets)
		}
	})
}

// TestShellGlobFIFO: expanding a glob below a FIFO does not wait for a
// writer.
func TestShellGlobFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := mkfifo(dir + "/p"); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	r, _ := NewResolver(PathPolicy{Home: "/nonexistent/h"})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.read(Call{Tool: "Bash", Input: map[string]any{"command": "cat p/* /dev/stdin/*"}, Cwd: dir})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading the command blocked on a FIFO")
	}
}

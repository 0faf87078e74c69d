package guard

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree is a workspace and a home directory on disk, with the secrets a
// guard keeps agents away from and symbolic links to them.
type tree struct {
	root, home, w string
}

func newTree(t testing.TB) tree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{root: root, home: filepath.Join(root, "home", "u"), w: filepath.Join(root, "w")}
	files := map[string]string{
		"home/u/.ssh/id_rsa":      "KEY",
		"home/u/.ssh/known_hosts": "h",
		"home/u/notes.txt":        "n",
		"w/.env":                  "SECRET=1",
		"w/main.go":               "package main",
		"w/README.md":             "# w",
		"w/secrets/key":           "k",
		"w/src/a.go":              "package src",
		"w/app/config/.env.local": "X=1",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"w/link-env":      ".env",
		"w/abs-env":       filepath.Join(root, "w/.env"),
		"w/ssh":           "../home/u/.ssh",
		"w/sub":           "src",
		"w/loop":          "loop",
		"w/chain1":        "chain2",
		"w/chain2":        "link-env",
		"w/src/up":        "..",
		"w/harmless-link": "main.go",
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// secretsGuard is the guard the issue names: nothing touches a .env or
// anything in ~/.ssh.
func secretsGuard(t testing.TB, r *Resolver) *Set {
	t.Helper()
	rule, err := CompileWith(Spec{Name: "secrets", Hook: PreToolUse, Condition: `touches("**/.env") || touches_under("~/.ssh")`, Message: "no secrets"}, r)
	if err != nil {
		t.Fatal(err)
	}
	return NewSet([]*Rule{rule})
}

func (tr tree) resolver(t testing.TB, p PathPolicy) *Resolver {
	t.Helper()
	p.Home = tr.home
	r, err := NewResolver(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// bypassCase is a tool call, with $W, $HOME and $ROOT standing for the
// tree's directories.
type bypassCase struct {
	name  string
	tool  string
	input string
	deny  bool
}

func (tr tree) call(c bypassCase) Call {
	in := strings.NewReplacer("$W", tr.w, "$HOME", tr.home, "$ROOT", tr.root).Replace(c.input)
	return Call{Tool: c.tool, RawInput: json.RawMessage(in), Cwd: tr.w}
}

// TestBypasses: none of the tricks of issue 13 gets a tool call past a
// guard that denies .env and ~/.ssh; the calls that touch neither pass.
func TestBypasses(t *testing.T) {
	tr := newTree(t)
	r := tr.resolver(t, PathPolicy{})
	set := secretsGuard(t, r)
	tests := []bypassCase{
		// 1. Paths as written: relative, with ./, .., // and ~.
		{"read relative", "Read", `{"file_path":".env"}`, true},
		{"read ./", "Read", `{"file_path":"./.env"}`, true},
		{"read a/..", "Read", `{"file_path":"src/../.env"}`, true},
		{"read //", "Read", `{"file_path":"/$W//.env"}`, true},
		{"read trailing /.", "Read", `{"file_path":"$W/./.env/."}`, true},
		{"read ~", "Read", `{"file_path":"~/.ssh/id_rsa"}`, true},
		{"read ~ dir", "Read", `{"file_path":"~/.ssh"}`, true},
		{"edit a/../", "Edit", `{"file_path":"$W/secrets/../.env","old_string":"a","new_string":"b"}`, true},
		{"write new .env", "Write", `{"file_path":"$W/newdir/.env","content":"x"}`, true},
		{"notebook", "NotebookEdit", `{"notebook_path":"$HOME/.ssh/nb.ipynb"}`, true},
		// 2. Symbolic links, to a file, to a directory, chained, and ..
		// after a link (read as the kernel reads it).
		{"link to .env", "Read", `{"file_path":"link-env"}`, true},
		{"absolute link", "Read", `{"file_path":"abs-env"}`, true},
		{"chained links", "Read", `{"file_path":"chain1"}`, true},
		{"file in linked dir", "Read", `{"file_path":"ssh/id_rsa"}`, true},
		{".. after a link", "Read", `{"file_path":"src/up/.env"}`, true},
		{"linked dir", "LS", `{"path":"$W/ssh"}`, true},
		{"new file in linked dir", "Write", `{"file_path":"$W/ssh/authorized_keys","content":"x"}`, true},
		// 3. Case.
		{"upper case", "Read", `{"file_path":".ENV"}`, true},
		{"mixed case dir", "Read", `{"file_path":"~/.SSH/id_rsa"}`, true},
		// 4. Grep and Glob: a file without an extension, a directory
		// with a glob or type that reaches it, patterns that climb.
		{"grep a file", "Grep", `{"pattern":"x","path":"$HOME/.ssh/id_rsa"}`, true},
		{"grep ~/.ssh", "Grep", `{"pattern":"x","path":"$HOME/.ssh"}`, true},
		{"grep home with glob", "Grep", `{"pattern":"x","path":"$HOME","glob":"id_*"}`, true},
		{"grep workspace no filter", "Grep", `{"pattern":"SECRET"}`, true},
		{"grep workspace glob .env", "Grep", `{"pattern":"x","glob":".env"}`, true},
		{"grep workspace glob .e*", "Grep", `{"pattern":"x","glob":"**/.e*"}`, true},
		{"grep excluding glob", "Grep", `{"pattern":"x","glob":"!*.go"}`, true},
		{"grep unknown type", "Grep", `{"pattern":"x","type":"dotenv"}`, true},
		{"glob with path", "Glob", `{"pattern":"*","path":"$HOME/.ssh"}`, true},
		{"glob all of home", "Glob", `{"pattern":"$HOME/**/*"}`, true},
		{"glob climbing", "Glob", `{"pattern":"../home/u/.ssh/*"}`, true},
		{"glob climbing in rest", "Glob", `{"pattern":"*/../../home/u/.ssh/*"}`, true},
		{"glob absolute", "Glob", `{"pattern":"$HOME/.ssh/*"}`, true},
		{"ls ~/.ssh", "LS", `{"path":"$HOME/.ssh"}`, true},
		// 5. Shell commands.
		{"cat", "Bash", `{"command":"cat .env"}`, true},
		{"cat ./", "Bash", `{"command":"cat ./.env"}`, true},
		{"quoted pieces", "Bash", `{"command":"cat .e''nv"}`, true},
		{"escape", "Bash", `{"command":"cat .e\\nv"}`, true},
		{"braces", "Bash", `{"command":"cat {.e,x}nv"}`, true},
		{"glob in shell", "Bash", `{"command":"cat .e*"}`, true},
		{"glob in shell case", "Bash", `{"command":"cat .EN?"}`, true},
		{"redirect in", "Bash", `{"command":"wc -l < .env"}`, true},
		{"redirect out", "Bash", `{"command":"echo x > $W/.env"}`, true},
		{"here-string to a shell", "Bash", `{"command":"bash <<< 'cat .env'"}`, true},
		{"here-doc to a shell", "Bash", `{"command":"sh <<EOF\ncat .env\nEOF"}`, true},
		{"sh -c", "Bash", `{"command":"sh -c 'cat .env'"}`, true},
		{"sudo bash -lc", "Bash", `{"command":"sudo -u root bash -lc \"cat ~/.ssh/id_rsa\""}`, true},
		{"eval", "Bash", `{"command":"eval 'cat .env'"}`, true},
		{"pipe", "Bash", `{"command":"true | cat .env | wc"}`, true},
		{"and", "Bash", `{"command":"ls && cat .env"}`, true},
		{"subshell", "Bash", `{"command":"(cd src; cat ../.env)"}`, true},
		{"command substitution", "Bash", `{"command":"echo $(cat .env)"}`, true},
		{"backquotes", "Bash", "{\"command\":\"echo `cat .env`\"}", true},
		{"process substitution", "Bash", `{"command":"diff <(cat .env) /dev/null"}`, true},
		{"variable", "Bash", `{"command":"F=.env; cat $F"}`, true},
		{"variable dir", "Bash", `{"command":"D=~/.ssh; cat \"$D/id_rsa\""}`, true},
		{"HOME", "Bash", `{"command":"cat ${HOME}/.ssh/id_rsa"}`, true},
		{"tilde", "Bash", `{"command":"cat ~/.ssh/id_rsa"}`, true},
		{"for loop", "Bash", `{"command":"for f in a .env; do cat $f; done"}`, true},
		{"cd then relative", "Bash", `{"command":"cd ~/.ssh && cat id_rsa"}`, true},
		{"cd home then relative", "Bash", `{"command":"cd ~ && cat .ssh/id_rsa"}`, true},
		{"tar -C", "Bash", `{"command":"tar -C $HOME -cf - .ssh"}`, true},
		{"option value", "Bash", `{"command":"cmd --file=.env"}`, true},
		{"link via shell", "Bash", `{"command":"cat link-env"}`, true},
		{"unknown dir", "Bash", `{"command":"cat \"$D/.env\""}`, true},
		{"piped to a shell", "Bash", `{"command":"echo 'cat .env' | bash"}`, true},
		{"ansi-c quoting", "Bash", `{"command":"cat $'\\x2eenv'"}`, true},
		{"written then run", "Bash", `{"command":"printf '%s\\n' 'cat ~/.ssh/id_rsa' > /tmp/s.sh; sh /tmp/s.sh"}`, true},
		{"source", "Bash", `{"command":"source .env"}`, true},
		{"find", "Bash", `{"command":"find . -name .env -exec cat {} +"}`, true},
		{"xargs sh -c", "Bash", `{"command":"echo x | xargs sh -c 'cat .env'"}`, true},
		{"default word", "Bash", `{"command":"cat ${F:-.env}"}`, true},
		{"does not parse", "Bash", `{"command":"cat $(.env"}`, true},
		{"too many words", "Bash", `{"command":"echo {1..5000}"}`, true},
		// Tool inputs the decoders read differently: duplicate keys and
		// keys in another case all count.
		{"duplicate key", "Read", `{"file_path":"$W/.env","file_path":"$W/main.go"}`, true},
		{"key in another case", "Read", `{"file_path":"$W/main.go","FILE_PATH":"$W/.env"}`, true},
		// MCP and other tools: default fields.
		{"mcp path field", "mcp__fs__read_file", `{"path":".env"}`, true},
		{"mcp paths list", "mcp__fs__read_files", `{"paths":["main.go","~/.ssh/id_rsa"]}`, true},
		// What touches neither passes.
		{"read code", "Read", `{"file_path":"main.go"}`, false},
		{"read link to code", "Read", `{"file_path":"harmless-link"}`, false},
		{"read .env.local", "Read", `{"file_path":"app/config/.env.local"}`, false},
		{"grep code", "Grep", `{"pattern":"x","path":"$W/src","type":"go"}`, false},
		{"grep with glob", "Grep", `{"pattern":"x","glob":"*.go"}`, false},
		{"grep home for txt", "Grep", `{"pattern":"x","path":"$HOME","glob":"*.txt"}`, true},
		{"glob go files", "Glob", `{"pattern":"**/*.go"}`, false},
		{"ls home", "LS", `{"path":"$HOME"}`, false},
		{"ls workspace", "LS", `{}`, false},
		// A listing shows names; it touches the directory it lists.
		{"glob .env", "Glob", `{"pattern":"**/.env"}`, false},
		{"go test", "Bash", `{"command":"go test ./... && git status"}`, false},
		{"cat readme", "Bash", `{"command":"cat README.md | head -5 > /tmp/out"}`, false},
		{"commit message", "Bash", `{"command":"git commit -m \"keep .env out of git\""}`, false},
		{"loop", "Read", `{"file_path":"loop"}`, false},
		{"mcp other", "mcp__db__query", `{"sql":"select 1"}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := set.ToolUse(tr.call(tc))
			v := set.First(PreToolUse, Match{}, env)
			if got := v != nil; got != tc.deny {
				t.Errorf("denied: got %v, want %v\ntargets: %v\nunread: %s", got, tc.deny, env.Targets, env.Unread)
			}
			// Only what cannot be read is refused for being unread.
			if unread := tc.name == "does not parse" || tc.name == "too many words"; unread != (env.Unread != "") {
				t.Errorf("unread: got %q", env.Unread)
			}
		})
	}
}

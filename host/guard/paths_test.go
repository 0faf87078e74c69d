package guard

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWalk(t *testing.T) {
	tr := newTree(t)
	w := tr.w
	tests := []struct {
		in, want string
		dir      bool
	}{
		{w + "/main.go", w + "/main.go", false},
		{w + "/link-env", w + "/.env", false},
		{w + "/chain1", w + "/.env", false},
		{w + "/ssh/id_rsa", tr.home + "/.ssh/id_rsa", false},
		{w + "/ssh", tr.home + "/.ssh", true},
		{w + "/ssh/../notes.txt", tr.home + "/notes.txt", false},
		{w + "/src/up/.env", w + "/.env", false},
		// What does not exist is cleaned on top of what does.
		{w + "/ssh/new/../x", tr.home + "/.ssh/x", false},
		{w + "/nope/./a//b", w + "/nope/a/b", false},
		// A loop ends the resolution where it starts.
		{w + "/loop/x", w + "/loop/x", false},
		// Through a file that is not a directory.
		{w + "/main.go/x", w + "/main.go/x", false},
		{"/", "/", true},
	}
	for _, tt := range tests {
		got := walk(tt.in)
		if got.real != tt.want || got.dir != tt.dir {
			t.Errorf("walk(%s): got %s (dir %v), want %s (dir %v)", strings.TrimPrefix(tt.in, tr.root), strings.TrimPrefix(got.real, tr.root), got.dir, strings.TrimPrefix(tt.want, tr.root), tt.dir)
		}
	}
}

// TestCacheStaleness: a resolution is reused for CacheTTL, then read
// again from the file system.
func TestCacheStaleness(t *testing.T) {
	tr := newTree(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := tr.resolver(t, PathPolicy{CacheTTL: time.Second, Now: func() time.Time { return now }})
	p := tr.w + "/swap"
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := r.resolve(p).real; got != p {
		t.Fatalf("got %s", got)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", p); err != nil {
		t.Fatal(err)
	}
	if got := r.resolve(p).real; got != p {
		t.Errorf("within the TTL: got %s, want the cached %s", got, p)
	}
	now = now.Add(time.Second)
	if got := r.resolve(p).real; got != tr.w+"/.env" {
		t.Errorf("after the TTL: got %s, want the link's target", got)
	}
	off := tr.resolver(t, PathPolicy{CacheTTL: -1})
	if got := off.resolve(p).real; got != tr.w+"/.env" || off.cache != nil {
		t.Errorf("no cache: got %s", got)
	}
}

// TestHelpers: what each path helper counts, call by call.
func TestPathHelpers(t *testing.T) {
	tr := newTree(t)
	r := tr.resolver(t, PathPolicy{})
	calls := map[string]bypassCase{
		"read":      {tool: "Read", input: `{"file_path":".env"}`},
		"write":     {tool: "Write", input: `{"file_path":"$HOME/.ssh/config","content":""}`},
		"ls-ssh":    {tool: "LS", input: `{"path":"$HOME/.ssh"}`},
		"ls-home":   {tool: "LS", input: `{"path":"$HOME"}`},
		"grep-home": {tool: "Grep", input: `{"pattern":"x","path":"$HOME"}`},
		"bash":      {tool: "Bash", input: `{"command":"ls ~/.ssh"}`},
		"glob-env":  {tool: "Glob", input: `{"pattern":"**/.env"}`},
	}
	tests := []struct {
		cond string
		want []string // the calls it fires on, sorted
	}{
		// A search below home may read a .env anywhere below it.
		{`touches("**/.env")`, []string{"grep-home", "read"}},
		{`reads("**/.env")`, []string{"grep-home", "read"}},
		{`writes("**/.env")`, nil},
		{`names(".env")`, []string{"read"}},
		{`touches("~/.ssh/config")`, []string{"grep-home", "write"}},
		{`writes("~/.ssh/*")`, []string{"write"}},
		{`touches_under("~/.ssh")`, []string{"bash", "grep-home", "ls-ssh", "write"}},
		{`reads_under("~/.ssh")`, []string{"bash", "grep-home"}},
		{`writes_under("~/.ssh")`, []string{"bash", "write"}},
		// Any .ssh directory: the Glob lists what may be in one below
		// the workspace.
		{`touches_under(".ssh")`, []string{"bash", "glob-env", "grep-home", "ls-ssh", "write"}},
		{`names("~")`, []string{"grep-home", "ls-home"}},
		{`touches("~")`, []string{"grep-home", "ls-home"}},
		{`any(targets, .access == "list")`, []string{"glob-env", "ls-home", "ls-ssh"}},
		{`any(paths, glob(#, "~/.ssh/**"))`, []string{"bash", "ls-ssh", "write"}},
		{`any(paths, under(#, "~/.ssh"))`, []string{"bash", "ls-ssh", "write"}},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			rule, err := CompileWith(Spec{Name: "g", Hook: PreToolUse, Condition: tt.cond}, r)
			if err != nil {
				t.Fatal(err)
			}
			set := NewSet([]*Rule{rule})
			var got []string
			for name, c := range calls {
				if set.First(PreToolUse, Match{}, set.ToolUse(tr.call(c))) != nil {
					got = append(got, name)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("fires on %v, want %v", got, tt.want)
			}
		})
	}
}

// TestGlobCleans is finding 1: glob() cleans the path it is given, so
// that a condition on an input field is not fooled either.
func TestGlobCleans(t *testing.T) {
	for _, p := range []string{"./secrets/key", "a/../secrets/key", "secrets//key", "secrets/./key"} {
		rule := mustCompile(t, Spec{Name: "g", Hook: PreToolUse, Condition: `glob(input.file_path, "secrets/key") && under(input.file_path, "secrets")`})
		if fired, err := rule.Eval(ToolUseEnv{Input: map[string]any{"file_path": p}}); !fired || err != nil {
			t.Errorf("%s: got %v, %v", p, fired, err)
		}
	}
	rule := mustCompile(t, Spec{Name: "g", Hook: PreToolUse, Condition: `any(paths, glob(#, "/x/secrets/key"))`})
	if fired, _ := rule.Eval(ToolUseEnv{Paths: []string{"//x//secrets/key"}}); !fired {
		t.Error("//x//secrets/key passed")
	}
}

// TestRelativeRules: conditions written for relative paths keep
// matching the absolute paths guards now see.
func TestRelativeRules(t *testing.T) {
	tests := []struct {
		cond string
		path string
		want bool
	}{
		{`glob(path, "crypto/**")`, "/w/crypto/k.go", true},
		{`glob(path, "crypto/**")`, "/w/cryptox/k.go", false},
		{`glob(path, "*.pem")`, "/w/a/b.pem", true},
		{`glob(path, "crypto/**")`, "crypto/k.go", true},
		{`glob(path, "crypto/*")`, "x/crypto/k.go", false},
		{`under(path, "src")`, "/w/src/a.go", true},
		{`under(path, "src")`, "/w/srcs/a.go", false},
		{`under(path, "src/models")`, "/w/src/models", true},
		{`under(path, "src")`, "src/a.go", true},
		{`under(path, "src")`, "x/src/a.go", false},
	}
	for _, tt := range tests {
		rule := mustCompile(t, Spec{Name: "g", Hook: Transition, Condition: strings.ReplaceAll(tt.cond, "path", "state.p")})
		if got, err := rule.Eval(TransitionEnv{State: map[string]any{"p": tt.path}}); got != tt.want || err != nil {
			t.Errorf("%s on %s: got %v, %v", tt.cond, tt.path, got, err)
		}
	}
}

// TestCaseSensitive: with case_sensitive, names differing in case are
// other files.
func TestCaseSensitive(t *testing.T) {
	tr := newTree(t)
	for _, sensitive := range []bool{false, true} {
		r := tr.resolver(t, PathPolicy{CaseSensitive: sensitive})
		set := secretsGuard(t, r)
		for _, in := range []string{`{"file_path":".ENV"}`, `{"file_path":"$HOME/.SSH/id_rsa"}`} {
			denied := set.First(PreToolUse, Match{}, set.ToolUse(tr.call(bypassCase{tool: "Read", input: in}))) != nil
			if denied == sensitive {
				t.Errorf("case_sensitive %v, %s: denied %v", sensitive, in, denied)
			}
		}
		rule, _ := CompileWith(Spec{Name: "g", Hook: PreToolUse, Condition: `glob("A/B.PEM", "a/*.pem") && under("/W/X", "/w")`}, r)
		if fired, _ := rule.Eval(ToolUseEnv{}); fired == sensitive {
			t.Errorf("case_sensitive %v: glob and under fired %v", sensitive, fired)
		}
	}
}

// TestToolFields: an MCP tool's path fields, by configuration, and
// (issue 25, finding 6) whatever else in its input holds a path: at any
// depth, a file:// URI, a key that says path, file, dir or uri, a value
// that reads as a path.
func TestToolFields(t *testing.T) {
	tr := newTree(t)
	r := tr.resolver(t, PathPolicy{Fields: map[string][]string{"mcp__vault__*": {"secret_file", "more"}}})
	set := secretsGuard(t, r)
	tests := []struct {
		tool, input string
		deny        bool
	}{
		{"mcp__vault__get", `{"secret_file":"$W/.env"}`, true},
		{"mcp__vault__get", `{"more":["a","$HOME/.ssh/id_rsa"]}`, true},
		{"mcp__other__get", `{"secret_file":"$W/.env"}`, true},
		{"mcp__other__get", `{"Path":"$W/.env"}`, true},
		{"mcp__other__get", `{"options":{"target":{"path":"$W/.env"}}}`, true},
		{"mcp__other__get", `{"items":[{"name":"x","sourcePath":"$HOME/.ssh/id_rsa"}]}`, true},
		{"mcp__other__get", `{"uri":"file://$W/.env"}`, true},
		{"mcp__other__get", `{"resource":"file:///$HOME/.ssh/id%5Frsa"}`, true},
		{"mcp__other__get", `{"q":{"any":"~/.ssh/id_rsa"}}`, true},
		{"mcp__other__get", `{"q":"../w/.env"}`, true},
		{"mcp__other__get", `{"query":"what is in .env files","limit":3}`, false},
		{"mcp__other__get", `{"url":"https://example.com/.env"}`, false},
	}
	for _, tt := range tests {
		got := set.First(PreToolUse, Match{}, set.ToolUse(tr.call(bypassCase{tool: tt.tool, input: tt.input}))) != nil
		if got != tt.deny {
			t.Errorf("%s %s: denied %v, want %v", tt.tool, tt.input, got, tt.deny)
		}
	}
	if _, err := NewResolver(PathPolicy{Fields: map[string][]string{"mcp__[": {"x"}}}); err == nil {
		t.Error("a bad tool pattern was accepted")
	}
}

// TestKinds: a plugin's tool, unknown to hearth, read by the kind its
// agent declares, and by the paths it lists.
func TestKinds(t *testing.T) {
	tr := newTree(t)
	r := tr.resolver(t, PathPolicy{})
	set := secretsGuard(t, r)
	tests := []struct {
		call Call
		deny bool
	}{
		{Call{Tool: "run_shell", Kind: KindExec, Input: map[string]any{"command": "cat .env"}}, true},
		{Call{Tool: "run_shell", Kind: KindExec, Input: map[string]any{"command": []any{"sh", "-c", "cat ~/.ssh/id_rsa"}}}, true},
		{Call{Tool: "run_shell", Kind: KindExec, Input: map[string]any{"command": "go vet ./..."}}, false},
		{Call{Tool: "open", Kind: KindRead, Paths: []string{"./.env"}}, true},
		{Call{Tool: "open", Kind: KindRead, Paths: []string{"main.go"}}, false},
		{Call{Tool: "find_text", Kind: KindSearch, Paths: []string{tr.home}}, true},
		{Call{Tool: "list", Kind: KindList, Paths: []string{tr.home}}, false},
		{Call{Tool: "list", Kind: KindList, Paths: []string{"ssh"}}, true},
		{Call{Tool: "fetch", Kind: KindOther, Input: map[string]any{"file": "link-env"}}, true},
		{Call{Tool: "fetch", Input: map[string]any{"url": "https://example.com/.env"}}, false},
	}
	for _, tt := range tests {
		tt.call.Cwd = tr.w
		env := set.ToolUse(tt.call)
		if got := set.First(PreToolUse, Match{}, env) != nil; got != tt.deny {
			t.Errorf("%+v: denied %v, want %v (targets %v)", tt.call, got, tt.deny, env.Targets)
		}
	}
}

// TestHandBuiltEnv: an environment not built by ToolUse (a sample for
// hearth guard check, a test) has its paths read before guards see it.
func TestHandBuiltEnv(t *testing.T) {
	set := NewSet([]*Rule{mustCompile(t, Spec{Name: "g", Hook: PreToolUse, Condition: `touches("**/.env") || any(paths, glob(#, "/w/secrets/**"))`})})
	for _, env := range []ToolUseEnv{
		{Tool: "Bash", Input: map[string]any{"command": "cat .env"}, Cwd: "/w"},
		{Tool: "Read", Paths: []string{"/w/./a/../.env"}},
		{Tool: "Read", Paths: []string{"secrets/key"}, Cwd: "/w"},
	} {
		if set.First(PreToolUse, Match{}, env) == nil {
			t.Errorf("%+v passed", env)
		}
		if got := set.All(PreToolUse, Match{}, env); !got[0].Fired {
			t.Errorf("All: %+v passed", env)
		}
	}
	// Eval alone reads the call too, for the helpers.
	rule := mustCompile(t, Spec{Name: "g", Hook: PreToolUse, Condition: `reads(".env")`})
	if fired, err := rule.Eval(ToolUseEnv{Tool: "Read", Input: map[string]any{"file_path": "/x/.env"}}); !fired || err != nil {
		t.Errorf("Eval: got %v, %v", fired, err)
	}
}

func TestDecodeInputReadsTheCall(t *testing.T) {
	env, _, err := DecodeInput(PreToolUse, []byte(`{"tool":"Bash","input":{"command":"cat ../.ENV"},"cwd":"/w/src"}`), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	set := NewSet([]*Rule{mustCompile(t, Spec{Name: "g", Hook: PreToolUse, Condition: `touches("/w/.env")`})})
	if out := set.All(PreToolUse, Match{}, env); !out[0].Fired {
		t.Errorf("got %+v", out)
	}
	if _, _, err := DecodeInput(PreToolUse, []byte(`{"tool":"Read","targets":[]}`), time.Time{}); err == nil || !strings.Contains(err.Error(), "targets, which is read from the call") {
		t.Errorf("got %v", err)
	}
}

func TestHomeDir(t *testing.T) {
	h := HomeDir()
	if !filepath.IsAbs(h) {
		t.Errorf("home %q is not absolute", h)
	}
	r, _ := NewResolver(PathPolicy{})
	if r.Home() != filepath.ToSlash(filepath.Clean(h)) || r.CaseSensitive() {
		t.Errorf("default resolver: home %q, case sensitive %v", r.Home(), r.CaseSensitive())
	}
}

// TestToolUseFor: a call's paths are read only for guards that read
// them.
func TestToolUseFor(t *testing.T) {
	set := NewSet([]*Rule{
		mustCompile(t, Spec{Name: "shell", Hook: PreToolUse, Condition: `tool == "Bash"`, Agents: []string{"a"}}),
		mustCompile(t, Spec{Name: "env", Hook: PreToolUse, Condition: `tool == "Read" && reads(".env")`, Agents: []string{"b"}}),
	})
	c := Call{Tool: "Read", Input: map[string]any{"file_path": ".env"}, Cwd: "/w"}
	if e := set.ToolUseFor(Match{Agent: "a"}, c); e.Targets != nil || !e.read {
		t.Errorf("agent a: read %v", e.Targets)
	}
	if e := set.ToolUseFor(Match{Agent: "b"}, c); len(e.Targets) != 1 || set.First(PreToolUse, Match{Agent: "b"}, e) == nil {
		t.Errorf("agent b: got %v", e.Targets)
	}
}

// TestSearchesSkipHidden (issue 25, finding 7): searches_skip_hidden
// takes an agent's own search tool, without a filter, to skip hidden
// names below its path, as ripgrep does; one that names them, by path or
// glob, still reaches them. Claude Code's Grep passes --hidden to
// ripgrep on every call (and its Glob by default): whatever the setting,
// they reach .env.
func TestSearchesSkipHidden(t *testing.T) {
	tr := newTree(t)
	for _, skip := range []bool{false, true} {
		r := tr.resolver(t, PathPolicy{SearchesSkipHidden: skip})
		set := secretsGuard(t, r)
		for _, input := range []string{
			`{"pattern":"x"}`,
			`{"pattern":"x","path":"$HOME"}`,
			`{"pattern":"x","path":"$HOME/.ssh"}`,
			`{"pattern":"x","glob":".env"}`,
			`{"pattern":"x","path":"$HOME","glob":"id_*"}`,
			`{"pattern":"x","path":"$HOME","type":"sh"}`,
			`{"pattern":"x","path":"$W/ssh"}`,
		} {
			if set.First(PreToolUse, Match{}, set.ToolUse(tr.call(bypassCase{tool: "Grep", input: input}))) == nil {
				t.Errorf("skip %v, Claude Code's Grep %s: allowed; it passes --hidden and reaches .env", skip, input)
			}
		}
		// An agent's own search tool, which reads the directory in its
		// path field (its glob, hearth does not know how it reads).
		for _, tc := range []struct {
			input string
			deny  bool // with skip set
		}{
			{`{"path":"$W"}`, false},
			{`{"path":"$HOME"}`, false},
			{`{"path":"$HOME/.ssh"}`, true},
			{`{"path":"$W/ssh"}`, true},
			{`{"path":"$W/.env"}`, true},
		} {
			c := tr.call(bypassCase{tool: "search_code", input: tc.input})
			c.Kind = KindSearch
			own := set.First(PreToolUse, Match{}, set.ToolUse(c)) != nil
			if want := tc.deny || !skip; own != want {
				t.Errorf("skip %v, an agent's search %s: denied %v, want %v", skip, tc.input, own, want)
			}
		}
	}
}

// TestGrepGlobsSplitAsClaudeCodeSplitsThem: Claude Code splits a Grep's
// glob at white space and commas (not inside braces) before ripgrep sees
// it, so "*.go,.env" reaches .env.
func TestGrepGlobsSplitAsClaudeCodeSplitsThem(t *testing.T) {
	tr := newTree(t)
	set := secretsGuard(t, tr.resolver(t, PathPolicy{}))
	for _, tc := range []struct {
		glob string
		deny bool
	}{
		{"*.go,.env", true},
		{"*.go .env", true},
		{"*.{go,md}", false},
		{"*.go,*.md", false},
		{".e{nv,x}", true},
	} {
		in := fmt.Sprintf(`{"pattern":"x","glob":%q}`, tc.glob)
		if got := set.First(PreToolUse, Match{}, set.ToolUse(tr.call(bypassCase{tool: "Grep", input: in}))) != nil; got != tc.deny {
			t.Errorf("Grep with glob %q: denied %v, want %v", tc.glob, got, tc.deny)
		}
	}
}

// TestToolPaths: the function an MCP client calls before a tool runs
// reads the same paths a guard does, split into what the call may read
// and write, and says what it could not read.
func TestToolPaths(t *testing.T) {
	tr := newTree(t)
	r := tr.resolver(t, PathPolicy{Fields: map[string][]string{"mcp__fs__*": {"dest"}}})
	in := strings.NewReplacer("$W", tr.w, "$HOME", tr.home).Replace(`{"source":{"uri":"file://$W/link-env"},"dest":"out/x","note":"hello"}`)
	got := r.ToolPaths("mcp__fs__copy", json.RawMessage(in), tr.w)
	for _, want := range []string{tr.w + "/link-env", tr.w + "/.env", tr.w + "/out/x"} {
		if !slices.Contains(got.Read, want) || !slices.Contains(got.Write, want) {
			t.Errorf("%s is not in both Read %q and Write %q (a tool hearth does not know may do either)", want, got.Read, got.Write)
		}
	}
	if len(got.Unread) != 0 {
		t.Errorf("unread: %q", got.Unread)
	}
	got = r.ToolPaths("Read", json.RawMessage(`{"file_path":".env"}`), tr.w)
	if !slices.Equal(got.Read, []string{tr.w + "/.env"}) || len(got.Write) != 0 {
		t.Errorf("Read: read %q, wrote %q", got.Read, got.Write)
	}
	deep := strings.Repeat(`{"a":`, maxInputDepth+2) + `"/x"` + strings.Repeat(`}`, maxInputDepth+2)
	if got := r.ToolPaths("mcp__x__y", json.RawMessage(deep), tr.w); len(got.Unread) == 0 {
		t.Error("an input nested too deep to read is not unread")
	}
	if got := r.ToolPaths("Bash", json.RawMessage(`{"command":"cat /proc/self/cwd/.env"}`), tr.w); len(got.Unread) == 0 {
		t.Error("/proc/self is not unread")
	}
}

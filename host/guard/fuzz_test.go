package guard

import (
	"bytes"
	"encoding/json"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"unicode"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzBypass builds tool calls that reach a secret — w/.env, or
// ~/.ssh/id_rsa — with the tricks of issue 13 (./, .., //, case, ~,
// symbolic links to the file and to its directory, Read, Edit, Grep on
// the file or on a directory with a glob, Glob, LS, shell commands in
// every quoting, through sh -c, variables and cd, MCP fields) and checks
// that the guard denying .env and ~/.ssh refuses every one. The kernel
// is the judge of what reaches the secret: a spelling that does not
// (a name in another case on this file system, say) is not a bypass.
func FuzzBypass(f *testing.F) {
	tr := newTree(f)
	r := tr.resolver(f, PathPolicy{})
	set := secretsGuard(f, r)
	envInfo, err := os.Stat(tr.w + "/.env")
	if err != nil {
		f.Fatal(err)
	}
	keyInfo, err := os.Stat(tr.home + "/.ssh/id_rsa")
	if err != nil {
		f.Fatal(err)
	}
	for secret := range uint8(len(spellings)) {
		for form := range uint8(formCount) {
			f.Add(secret, form, []byte{})
			f.Add(secret, form, []byte{0, 1, 1, 3, 3, 2, 5, 0})
		}
	}
	f.Fuzz(func(t *testing.T, secret, form uint8, tricks []byte) {
		p := spell(tr, spellings[int(secret)%len(spellings)], tricks)
		// The kernel's answer: does p (from w, with ~ as home) lead to
		// a secret?
		abs := p
		if strings.HasPrefix(abs, "~/") {
			abs = tr.home + abs[1:]
		}
		if !path.IsAbs(abs) {
			abs = tr.w + "/" + abs
		}
		fi, err := os.Stat(abs)
		if err != nil || !(os.SameFile(fi, envInfo) || os.SameFile(fi, keyInfo)) {
			return
		}
		c, ok := dress(tr, int(form)%formCount, p, os.SameFile(fi, envInfo))
		if !ok {
			return
		}
		env := set.ToolUse(c)
		if set.First(PreToolUse, Match{}, env) == nil {
			t.Fatalf("allowed %s %s\ntargets: %v", c.Tool, c.RawInput, env.Targets)
		}
	})
}

// spellings are ways to name the secrets, from w.
var spellings = []string{
	".env", "link-env", "chain1", "abs-env", "src/up/.env", "$W/.env", "sub/../.env",
	"~/.ssh/id_rsa", "ssh/id_rsa", "../home/u/.ssh/id_rsa", "$HOME/.ssh/id_rsa", "ssh/../.ssh/id_rsa",
}

// spell applies tricks to a spelling: each pair of bytes is a trick and
// where it applies.
func spell(tr tree, p string, tricks []byte) string {
	p = strings.NewReplacer("$W", tr.w, "$HOME", tr.home).Replace(p)
	for i := 0; i+1 < len(tricks); i += 2 {
		op, at := tricks[i]%8, int(tricks[i+1])
		segs := strings.Split(p, "/")
		k := at % len(segs)
		switch op {
		case 0: // ./
			segs = insert(segs, k, ".")
		case 1: // an existing directory and back
			if k > 0 || !path.IsAbs(p) {
				segs = insert(segs, k, "src", "..")
			}
		case 2: // //
			segs = insert(segs, k, "")
		case 3: // case, in a secret's own names
			for j, s := range segs {
				if s == ".env" || s == ".ssh" || s == "id_rsa" {
					rs := []rune(s)
					n := at % len(rs)
					if unicode.IsUpper(rs[n]) {
						rs[n] = unicode.ToLower(rs[n])
					} else {
						rs[n] = unicode.ToUpper(rs[n])
					}
					segs[j] = string(rs)
					break
				}
			}
		case 4: // trailing /.
			segs = append(segs, ".")
		case 5: // ~ for the home directory
			if s, ok := strings.CutPrefix(strings.Join(segs, "/"), tr.home+"/"); ok {
				return "~/" + s
			}
		case 6: // absolute
			if !path.IsAbs(p) && !strings.HasPrefix(p, "~") {
				segs = append([]string{tr.w}, segs...)
			}
		case 7: // through the link back to the workspace
			if !path.IsAbs(p) && !strings.HasPrefix(p, "~") {
				segs = append([]string{"src", "up"}, segs...)
			}
		}
		p = strings.Join(segs, "/")
	}
	return p
}

func insert(s []string, at int, v ...string) []string {
	out := append([]string(nil), s[:at]...)
	out = append(out, v...)
	return append(out, s[at:]...)
}

const formCount = 16

// dress makes a tool call that reaches p. ok is false for a form that
// does not apply (a listing does not read a file's content).
func dress(tr tree, form int, p string, isEnv bool) (Call, bool) {
	dir, base := path.Split(p)
	if dir == "" {
		dir = "."
	}
	js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	// Quoting keeps the shell from expanding ~: it stays outside.
	quote := func(s string) string {
		if rest, ok := strings.CutPrefix(s, "~/"); ok {
			return "~/" + shellQuote(rest)
		}
		return shellQuote(s)
	}
	q, qd := quote(p), quote(strings.TrimSuffix(dir, "/"))
	qb := shellQuote(base)
	var tool, in string
	switch form {
	case 0:
		tool, in = "Read", `{"file_path":`+js(p)+`}`
	case 1:
		tool, in = "Edit", `{"file_path":`+js(p)+`,"old_string":"a","new_string":"b"}`
	case 2:
		tool, in = "Grep", `{"pattern":"x","path":`+js(p)+`}`
	case 3:
		tool, in = "Grep", `{"pattern":"x","path":`+js(dir)+`,"glob":`+js(base)+`}`
	case 4:
		if isEnv {
			return Call{}, false
		}
		tool, in = "Glob", `{"pattern":`+js(p)+`}`
	case 5:
		if isEnv {
			return Call{}, false
		}
		tool, in = "LS", `{"path":`+js(dir)+`}`
	case 6:
		tool, in = "Bash", `{"command":`+js("cat "+q)+`}`
	case 7:
		tool, in = "Bash", `{"command":`+js("sh -c "+shellQuote("cat "+q))+`}`
	case 8:
		tool, in = "Bash", `{"command":`+js("F="+q+"; head -1 \"$F\"")+`}`
	case 9:
		tool, in = "Bash", `{"command":`+js("cd "+qd+" && cat "+qb)+`}`
	case 10:
		tool, in = "Bash", `{"command":`+js("wc -c < "+q)+`}`
	case 11:
		tool, in = "Bash", `{"command":`+js("echo \"$(cat "+q+")\" | base64")+`}`
	case 12:
		tool, in = "Bash", `{"command":`+js("bash <<< "+shellQuote("cat "+q))+`}`
	case 13:
		tool, in = "mcp__files__read", `{"path":`+js(p)+`}`
	case 14:
		tool, in = "Bash", `{"command":`+js("for f in a "+q+"; do cat \"$f\"; done")+`}`
	case 15:
		tool, in = "Bash", `{"command":`+js("cp "+q+" /tmp/x")+`}`
	}
	return Call{Tool: tool, RawInput: json.RawMessage(in), Cwd: tr.w}, true
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	q, _ := syntax.Quote(s, syntax.LangBash)
	return q
}

// FuzzToolUse feeds ToolUse any tool and input: it never panics, and
// every path it gives a guard is absolute and clean.
func FuzzToolUse(f *testing.F) {
	for _, s := range [][3]string{
		{"Read", `{"file_path":"../x"}`, ""}, {"Grep", `{"path":"~","glob":"!*.go","type":"py"}`, ""},
		{"Glob", `{"pattern":"a/**/../*","path":"/x"}`, ""}, {"Bash", `{"command":["sh","-c","cat a"]}`, ""},
		{"mcp__x__y", `{"path":["a",1,{"b":2}]}`, "exec"}, {"LS", `null`, "list"}, {"Write", `{"file_path":"\u0000"}`, "write"},
		{"mcp__fs__read", `{"o":{"uri":"file://localhost/a%2F..%2F.env","l":[{"sourcePath":"~/x"}]}}`, ""},
		{"Bash", `{"command":"f() { cat \"$1\"; }; f .env; set -- a; printf -v p %s x; a[2]=y; cat ${a[2]} <<< ~root"}`, ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	tr := newTree(f)
	r := tr.resolver(f, PathPolicy{Fields: map[string][]string{"mcp__*": {"target"}}})
	rule, err := CompileWith(Spec{Name: "g", Hook: PreToolUse, Condition: `touches("**/.env") || reads_under("~/.ssh") || names("/")`}, r)
	if err != nil {
		f.Fatal(err)
	}
	set := NewSet([]*Rule{rule})
	f.Fuzz(func(t *testing.T, tool, input, kind string) {
		env := set.ToolUse(Call{Tool: tool, Kind: kind, RawInput: json.RawMessage(input), Cwd: tr.w})
		for _, p := range env.Paths {
			if !path.IsAbs(p) || path.Clean(p) != p {
				t.Fatalf("path %q of %s %s is not absolute and clean", p, tool, input)
			}
		}
		_ = set.First(PreToolUse, Match{}, env)
	})
}

// FuzzScanObject: on valid JSON, the quick scan of a tool input's top
// level reads the keys and values encoding/json reads, in order.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{
		`{"file_path":"a","FILE_PATH":"b","file_path":null}`, `{"a":{"b":["}",1]},"c":"d\"e"}`,
		`{"k\u0065y":"\u00e9\ud83d\ude00","x":[1,"y",{"z":"w"}],"n":-1.5e3,"t":true}`, ` { } `, `[1]`, `"s"`,
		"{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var got []string
		scanObject(b, func(k string, v []byte) {
			var x any
			if err := json.Unmarshal(v, &x); err != nil {
				t.Fatalf("value %q of %q is not JSON: %v", v, k, err)
			}
			got = append(got, k, string(mustJSON(t, x)))
		})
		var want []string
		d := json.NewDecoder(bytes.NewReader(b))
		if tok, err := d.Token(); err == nil && tok == json.Delim('{') {
			for d.More() {
				k, _ := d.Token()
				var x any
				if err := d.Decode(&x); err != nil {
					t.Fatal(err)
				}
				want = append(want, k.(string), string(mustJSON(t, x)))
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("scan %q\ndecoder %q", got, want)
		}
		in := &input{raw: b}
		for i := 0; i+1 < len(want); i += 2 {
			var s string
			if strings.HasPrefix(want[i+1], `"`) && json.Unmarshal([]byte(want[i+1]), &s) == nil && !slices.Contains(in.get(want[i]), s) {
				t.Fatalf("input.get(%q) = %q lacks %q", want[i], in.get(want[i]), s)
			}
		}
	})
}

func mustJSON(t *testing.T, x any) []byte {
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package guard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/user"
	"path"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Shell commands. A Bash call's command (and the command of a tool whose
// kind is exec) is parsed as bash by mvdan.cc/sh and read, never run:
// every word of every command in it — arguments, redirections,
// here-strings, assignments, loop lists; through pipes, &&, ||, ;,
// subshells, groups, command and process substitution — is expanded
// as bash would expand it, as far as that can be done without running
// anything:
//
//   - quotes and escapes are removed; braces, ~ and $HOME are expanded;
//   - variables assigned earlier in the command (X=~/.ssh; cat $X/id_rsa,
//     for f in .env; do cat $f; done) take the values assigned, every
//     one of them;
//   - glob patterns (cat .e*) are expanded against the file system, as
//     the shell would expand them, dot files included;
//   - what cannot be known (another variable, a command substitution's
//     output) becomes an unknown part, which matches no name: cat
//     "$D/.env" still names a .env, in an unknown directory.
//
// The words that look like paths — operands and the values of
// --opt=value, not options, not the name of a command found on $PATH —
// become targets. A relative word is read against the call's cwd and
// against every directory the command changes to or names before it
// (cd ~/.ssh && cat id_rsa; tar -C ~/.ssh ...). The arguments of a shell
// or of a command that runs its arguments as a command (sh -c, bash -c,
// eval, sudo, env, xargs, find -exec, ssh, ...; see runsCommands), and
// here-documents and here-strings given to one, are parsed as commands
// in turn, to a depth of maxShellDepth; in a command that runs a shell
// at all, every argument is, since the shell may read it from a pipe
// (echo 'cat .env' | sh).
//
// A command that does not parse, or that exceeds the limits below, is
// not read whole: the call's unread says why, and the path helpers
// refuse it.

// Limits on reading one call's commands.
const (
	maxCommand    = 64 << 10 // bytes of a command
	maxShellDepth = 4        // commands within commands
	maxWords      = 4096     // fields expanded
	maxFields     = 256      // fields one word may expand to
	maxGlobDirs   = 64       // directories read to expand globs
	maxCwds       = 8        // directories a relative word is read against
	maxValues     = 16       // values kept of one variable
)

// unknown stands for the part of a word that cannot be known without
// running the command. It is a byte no file name holds.
const unknown = "\x00"

// runsCommands are commands whose arguments, here-documents and
// here-strings may be commands themselves.
var runsCommands = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "fish": true,
	"csh": true, "tcsh": true, "busybox": true, "eval": true, "su": true, "runuser": true, "sudo": true, "doas": true,
	"env": true, "nohup": true, "nice": true, "ionice": true, "timeout": true, "time": true, "stdbuf": true,
	"setsid": true, "exec": true, "command": true, "builtin": true, "xargs": true, "parallel": true, "find": true,
	"fd": true, "watch": true, "script": true, "flock": true, "ssh": true, "strace": true, "ltrace": true,
	"chroot": true, "unbuffer": true, "nsenter": true, "unshare": true, "systemd-run": true, "tmux": true,
	"screen": true, "trap": true,
}

// changesDir are commands whose operands become the working directory.
var changesDir = map[string]bool{"cd": true, "pushd": true}

var errGlobBudget = errors.New("too many directories to read")

type shellReader struct {
	r     *Resolver
	x     *extraction
	from  string
	cwds  []string
	vars  map[string][]string
	words int
	dirs  int
	depth int
	// done marks the words read with a known role, so that the generic
	// pass over words skips them.
	done map[*syntax.Word]bool
	// failed: a limit was reached; the rest is not read.
	failed bool
	// shellRuns: the command runs a shell, which may read commands from
	// anywhere in it.
	shellRuns bool
	// funcs are the functions the command declares, by name: a call of
	// one reads its body again with the call's arguments as $1, $2, ...
	funcs     map[string]*syntax.Stmt
	funcCalls int
}

// maxFuncCalls bounds how many function calls are read, each by reading
// the function's body again.
const maxFuncCalls = 16

// shell reads the command line cmd, run in cwd.
func (r *Resolver) shell(x *extraction, cmd, cwd string) {
	sr := &shellReader{r: r, x: x, from: "command", cwds: []string{cwd}, vars: make(map[string][]string), done: make(map[*syntax.Word]bool),
		funcs: make(map[string]*syntax.Stmt)}
	sr.vars["PWD"] = []string{cwd}
	sr.script(cmd)
}

func (sr *shellReader) failf(format string, args ...any) {
	if !sr.failed {
		sr.x.failf(format, args...)
	}
	sr.failed = true
}

// script parses and reads src.
func (sr *shellReader) script(src string) {
	if sr.failed {
		return
	}
	if len(src) > maxCommand {
		sr.failf("the command is %d bytes, more than the %d read", len(src), maxCommand)
		return
	}
	if sr.depth >= maxShellDepth {
		sr.failf("the command nests commands more than %d deep", maxShellDepth)
		return
	}
	lang := syntax.LangBash
	if sr.r.shellLang == "zsh" {
		lang = syntax.LangZsh
	}
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(src), "")
	if err != nil {
		sr.failf("the command does not parse as %s: %v", lang, err)
		return
	}
	if lang == syntax.LangZsh {
		// mvdan.cc/sh parses zsh but does not expand it: what its words
		// stand for (=cmd, glob qualifiers, ${~x}, modifiers) is not
		// known here.
		if zshOnly(f) {
			sr.failf("the command uses zsh expansions (=cmd, glob qualifiers, parameter flags) that are not read")
			return
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok && fd.Name != nil {
			sr.funcs[fd.Name.Value] = fd.Body
		}
		return true
	})
	if !sr.shellRuns {
		// A shell anywhere in the command may run what the rest
		// writes to it (echo 'cat .env' | sh): then every word that
		// looks like a command is read as one.
		syntax.Walk(f, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 {
				// A program whose name is not a plain word ($SH, "$(which
				// bash)") may be any program, a shell too.
				if name := c.Args[0].Lit(); name == "" || shells[path.Base(name)] || !notShells[path.Base(name)] && sr.funcs[name] == nil {
					sr.shellRuns = true
				}
			}
			return !sr.shellRuns
		})
	}
	sr.depth++
	defer func() { sr.depth-- }()
	syntax.Walk(f, sr.visit)
}

// shells are the commands that run a script from their standard input.
var shells = map[string]bool{
	"sh": true, "bash": true, "rbash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "fish": true,
	"csh": true, "tcsh": true, "yash": true, "posh": true, "busybox": true, "source": true, ".": true,
}

// notShells are programs known not to run their arguments, standard
// input or here-documents as shell commands. Any other program may be a
// shell (a copy of bash under another name, ./x, a shell the guard has
// never heard of) and is read as one: its arguments and here-documents
// are parsed as commands, and it may read commands from a pipe.
var notShells = map[string]bool{
	"cat": true, "ls": true, "echo": true, "printf": true, "grep": true, "egrep": true, "fgrep": true, "rg": true,
	"head": true, "tail": true, "less": true, "more": true, "wc": true, "sort": true, "uniq": true, "cut": true,
	"tr": true, "tee": true, "cp": true, "mv": true, "rm": true, "mkdir": true, "rmdir": true, "touch": true,
	"chmod": true, "chown": true, "ln": true, "stat": true, "file": true, "diff": true, "cmp": true, "comm": true,
	"basename": true, "dirname": true, "realpath": true, "readlink": true, "pwd": true, "cd": true, "pushd": true,
	"popd": true, "test": true, "[": true, "[[": true, "true": true, "false": true, "sleep": true, "date": true,
	"base64": true, "xxd": true, "od": true, "hexdump": true, "md5sum": true, "sha256sum": true, "sha1sum": true,
	"tar": true, "gzip": true, "gunzip": true, "zcat": true, "unzip": true, "zip": true, "jq": true, "yq": true,
	"dd": true, "curl": true, "wget": true, "git": true, "go": true, "gofmt": true, "make": true, "diff3": true,
	"patch": true, "column": true, "nl": true, "fold": true, "fmt": true, "paste": true, "join": true, "split": true,
	"rev": true, "tac": true, "strings": true, "du": true, "df": true, "id": true, "whoami": true, "uname": true,
	"hostname": true, "ps": true, "kill": true, "which": true, "type": true, "export": true, "unset": true,
	"local": true, "declare": true, "typeset": true, "readonly": true, "set": true, "shift": true, "read": true,
	"return": true, "exit": true, "break": true, "continue": true, "wait": true, "cd-": true, "docker": true,
	"npm": true, "yarn": true, "pip": true, "cargo": true, "rustc": true, "gcc": true, "cc": true, "ld": true,
	"mktemp": true, "install": true, "sed": true, "tree": true, "find-": true, "seq": true, "yes": true,
	"printenv": true, "alias": true, "unalias": true, "hash": true, "umask": true, "getopts": true,
}

// mayBeShell reports whether the program named name may run commands it
// is given: a shell, a command that runs its arguments, or a program the
// guard does not know.
func mayBeShell(name string) bool {
	return shells[name] || runsCommands[name] || !notShells[name]
}

func (sr *shellReader) visit(n syntax.Node) bool {
	if sr.failed {
		return false
	}
	switch n := n.(type) {
	case *syntax.Stmt:
		sr.stmt(n)
	case *syntax.ForClause:
		if it, ok := n.Loop.(*syntax.WordIter); ok && it.Name != nil {
			var vals []string
			for _, w := range it.Items {
				for _, f := range sr.fields(w) {
					vals = append(vals, f)
					sr.add(f, AccessAny)
				}
				sr.done[w] = true
			}
			sr.assign(it.Name.Value, vals, false)
		}
	case *syntax.Assign:
		sr.assignNode(n)
	case *syntax.ParamExp:
		// Its default or replacement words may be paths; its name and
		// index are not.
		if n.Exp != nil && n.Exp.Word != nil {
			syntax.Walk(n.Exp.Word, sr.visit)
		}
		if n.Repl != nil {
			for _, w := range []*syntax.Word{n.Repl.Orig, n.Repl.With} {
				if w != nil {
					syntax.Walk(w, sr.visit)
				}
			}
		}
		return false
	case *syntax.Word:
		if !sr.done[n] {
			sr.done[n] = true
			for _, f := range sr.fields(n) {
				sr.add(f, AccessAny)
			}
		}
	}
	return true
}

// stmt reads a simple command with its redirections.
func (sr *shellReader) stmt(st *syntax.Stmt) {
	call, _ := st.Cmd.(*syntax.CallExpr)
	name := ""
	if call != nil {
		for _, a := range call.Assigns {
			sr.assignNode(a)
		}
		var args []string
		for _, w := range call.Args {
			args = append(args, sr.fields(w)...)
			sr.done[w] = true
		}
		name = sr.operands(args)
		sr.builtin(args, st)
	}
	for _, rd := range st.Redirs {
		sr.redirect(rd, name)
	}
}

// builtin reads what a command does to the shell's own state: the
// variables and positional parameters it sets (set --, printf -v, read,
// a function's arguments), the aliases it defines.
func (sr *shellReader) builtin(args []string, st *syntax.Stmt) {
	if len(args) == 0 {
		return
	}
	switch name := args[0]; {
	case sr.funcs[name] != nil:
		if sr.funcCalls >= maxFuncCalls {
			sr.failf("the command calls functions more than %d times", maxFuncCalls)
			return
		}
		sr.funcCalls++
		sr.positional(args[1:])
		syntax.Walk(sr.funcs[name], sr.visit)
	case name == "set":
		for i, a := range args[1:] {
			if a == "--" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
				if a == "--" {
					i++
				}
				sr.positional(args[1+i:])
				return
			}
		}
	case name == "printf":
		// printf -v NAME FORMAT ARGS: NAME holds the format with the
		// arguments in it, or any of them.
		if len(args) >= 4 && args[1] == "-v" {
			vals := append([]string{substitute(args[3], args[4:])}, args[3:]...)
			sr.assign(args[2], vals, false)
		}
	case name == "read" || name == "mapfile" || name == "readarray":
		// read NAME <<< WORD (or a here-document): NAME may hold any
		// line or word of it.
		var in []string
		for _, rd := range st.Redirs {
			switch {
			case rd.Op == syntax.WordHdoc && rd.Word != nil:
				in = append(in, sr.fields(rd.Word)...)
			case rd.Hdoc != nil:
				if body, err := expand.Document(sr.config(nil), rd.Hdoc); err == nil {
					in = append(in, strings.Fields(body)...)
				}
			}
		}
		for _, a := range args[1:] {
			if !strings.HasPrefix(a, "-") && syntax.ValidName(a) {
				sr.assign(a, append(in, strings.Join(in, " ")), false)
			}
		}
	case name == "alias":
		for _, a := range args[1:] {
			if _, v, ok := strings.Cut(a, "="); ok {
				sr.script(v)
			}
		}
	}
}

// positional sets $1, $2, ..., $@ and $*.
func (sr *shellReader) positional(args []string) {
	for i, a := range args {
		if i >= 9 {
			break
		}
		n := strconv.Itoa(i + 1)
		sr.vars[n] = nil
		sr.assign(n, []string{a}, false)
	}
	all := strings.Join(args, " ")
	for _, n := range []string{"@", "*"} {
		sr.vars[n] = nil
		sr.assign(n, append([]string{all}, args...), false)
	}
}

// substitute fills a printf format's %s (and %b, %q) with args, in
// order; what it cannot fill stays as written.
func substitute(format string, args []string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] == '%' && i+1 < len(format) && strings.IndexByte("sbq", format[i+1]) >= 0 && len(args) > 0 {
			b.WriteString(args[0])
			args = args[1:]
			i++
			continue
		}
		b.WriteByte(format[i])
	}
	return b.String()
}

// operands reads a command's fields, and returns its name.
func (sr *shellReader) operands(args []string) string {
	if len(args) == 0 {
		return ""
	}
	name := path.Base(args[0])
	if strings.Contains(args[0], "/") {
		// A program named by its path.
		sr.add(args[0], AccessAny)
	}
	nested := mayBeShell(name) || sr.shellRuns
	opts := true
	for _, a := range args[1:] {
		if nested && strings.ContainsAny(a, " \t\n;|&<>$`()") {
			sr.script(a)
		}
		switch {
		case opts && a == "--":
			opts = false
			continue
		case opts && strings.HasPrefix(a, "-") && a != "-":
			sr.optionValues(a)
			continue
		}
		sr.add(a, AccessAny)
		sr.addParts(a)
		if changesDir[name] {
			if a == "-" {
				continue // back to a directory read already
			}
			sr.chdir(a)
		}
	}
	if changesDir[name] && len(args) == 1 {
		sr.chdir(sr.r.home)
	}
	return name
}

// optionValues reads the paths an option may carry: the value of
// --opt=value, and the argument attached to a short option (-f.env,
// -xf/etc/passwd, -i~/.ssh/id_rsa): what follows its first letter, and
// each tail that starts like a path.
func (sr *shellReader) optionValues(a string) {
	if _, v, ok := strings.Cut(a, "="); ok {
		sr.add(v, AccessAny)
		sr.addParts(v)
	}
	if strings.HasPrefix(a, "--") || len(a) < 3 {
		return
	}
	sr.add(sr.tilde(a[2:]), AccessAny)
	for i := 3; i < len(a) && i < 256; i++ {
		if a[i] == '.' || a[i] == '/' || a[i] == '~' {
			sr.add(sr.tilde(a[i:]), AccessAny)
		}
	}
}

// addParts reads the paths inside an operand that programs take apart:
// the value of NAME=VALUE (dd if=.env), what follows an @ (curl -d
// @.env), and each part between colons or commas (git show HEAD:.env,
// docker -v $PWD/.env:/e, --files=a,.env).
func (sr *shellReader) addParts(a string) {
	if len(a) > 4096 {
		return
	}
	var parts []string
	if _, v, ok := strings.Cut(a, "="); ok {
		parts = append(parts, v)
	}
	for _, p := range append([]string{a}, parts...) {
		if rest, ok := strings.CutPrefix(p, "@"); ok {
			parts = append(parts, rest)
		}
	}
	for _, p := range append([]string{a}, parts...) {
		if strings.ContainsAny(p, ":,") {
			for _, q := range strings.FieldsFunc(p, func(r rune) bool { return r == ':' || r == ',' }) {
				parts = append(parts, strings.TrimPrefix(q, "@"))
			}
		}
	}
	for _, p := range parts {
		if p != a {
			sr.add(sr.tilde(p), AccessAny)
		}
	}
}

// tilde expands a leading ~ the shell left alone because it was not at
// the start of a word.
func (sr *shellReader) tilde(s string) string {
	if s == "~" || strings.HasPrefix(s, "~/") {
		return sr.r.expandHome(s)
	}
	return s
}

// redirect reads a redirection of command name.
func (sr *shellReader) redirect(rd *syntax.Redirect, name string) {
	// A here-document or here-string given to a program that may be a
	// shell, or in a command that runs one anywhere (cat <<'E' | sh), may
	// be a script.
	script := mayBeShell(name) || sr.shellRuns
	if rd.Hdoc != nil {
		sr.done[rd.Hdoc] = true
		if script {
			if body, err := expand.Document(sr.config(nil), rd.Hdoc); err == nil {
				sr.script(body)
			}
		}
	}
	if rd.Word == nil {
		return
	}
	sr.done[rd.Word] = true
	a := AccessAny
	switch rd.Op {
	case syntax.RdrIn:
		a = AccessRead
	case syntax.RdrOut, syntax.AppOut, syntax.ClbOut, syntax.RdrAll, syntax.AppAll:
		a = AccessWrite
	case syntax.Hdoc, syntax.DashHdoc:
		// The delimiter.
		return
	}
	for _, f := range sr.fields(rd.Word) {
		if rd.Op == syntax.WordHdoc && script {
			sr.script(f)
		}
		if (rd.Op == syntax.DplIn || rd.Op == syntax.DplOut) && isFD(f) {
			continue
		}
		sr.add(f, a)
	}
}

func isFD(s string) bool {
	s = strings.TrimSuffix(s, "-")
	if s == "" {
		return true
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (sr *shellReader) assignNode(a *syntax.Assign) {
	if a.Name == nil {
		return
	}
	var vals []string
	if a.Value != nil {
		sr.done[a.Value] = true
		vals = append(vals, strings.Join(sr.fields(a.Value), " "))
	}
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			if e.Value != nil {
				sr.done[e.Value] = true
				vals = append(vals, sr.fields(e.Value)...)
			}
		}
	}
	for _, v := range vals {
		sr.add(v, AccessAny)
	}
	sr.assign(a.Name.Value, vals, a.Append)
}

// assign records values of a variable: every value a variable was given
// is one it may hold.
func (sr *shellReader) assign(name string, vals []string, appendTo bool) {
	old := sr.vars[name]
	if appendTo && len(old) > 0 {
		var out []string
		for _, o := range old {
			for _, v := range vals {
				out = append(out, o+v)
			}
		}
		vals = out
	}
	for _, v := range vals {
		if len(sr.vars[name]) >= maxValues {
			break
		}
		if !containsStr(sr.vars[name], v) {
			sr.vars[name] = append(sr.vars[name], v)
		}
	}
}

func containsStr(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// chdir adds dir to the directories relative words are read against.
func (sr *shellReader) chdir(dir string) {
	for _, c := range sr.cwds {
		d := dir
		if !path.IsAbs(d) {
			d = c + "/" + d
		}
		d = path.Clean(d)
		if len(sr.cwds) >= maxCwds {
			return
		}
		if !containsStr(sr.cwds, d) {
			sr.cwds = append(sr.cwds, d)
		}
	}
	// $PWD, $OLDPWD and ~-, ~+ may be any of them.
	sr.vars["PWD"], sr.vars["OLDPWD"] = nil, nil
	sr.assign("PWD", sr.cwds, false)
	sr.assign("OLDPWD", sr.cwds, false)
}

// add records a field as a target, read against each working directory.
func (sr *shellReader) add(f string, a Access) {
	if f == "" || f == unknown {
		return
	}
	sr.x.add(rawTarget{p: f, access: a, from: sr.from, cwds: sr.cwds})
	// A directory a command names may be where it works (tar -C DIR,
	// git -C DIR, make --directory=DIR).
	if a == AccessAny && !strings.Contains(f, unknown) && len(sr.cwds) < maxCwds {
		if res := sr.r.resolve(join(sr.cwds[0], f)); res.dir {
			sr.chdir(f)
		}
	}
}

// fields expands a word as bash would, with every combination of the
// values its variables may hold.
func (sr *shellReader) fields(w *syntax.Word) []string {
	if sr.failed {
		return nil
	}
	names := paramNames(w)
	if lit := wordPrefix(w); strings.HasPrefix(lit, "~-") || strings.HasPrefix(lit, "~+") {
		names = append(names, "OLDPWD", "PWD")
	}
	combos := []map[string]string{nil}
	for _, n := range names {
		vals := sr.vars[n]
		if len(vals) == 0 {
			continue
		}
		var next []map[string]string
		for _, c := range combos {
			for _, v := range vals {
				m := make(map[string]string, len(c)+1)
				for k, x := range c {
					m[k] = x
				}
				m[n] = v
				next = append(next, m)
				if len(next) >= maxFields {
					break
				}
			}
		}
		combos = next
	}
	// An array's elements are not kept in order, only as values it may
	// hold: ${a[3]} and ${a[@]} read as any of them, the index dropped
	// for the expansion (and put back: the tree is read again when a
	// function is called).
	var indexed []*syntax.ParamExp
	var indexes []syntax.ArithmExpr
	syntax.Walk(w, func(n syntax.Node) bool {
		if pe, ok := n.(*syntax.ParamExp); ok && pe.Index != nil && pe.Param != nil && len(sr.vars[pe.Param.Value]) > 0 {
			indexed, indexes = append(indexed, pe), append(indexes, pe.Index)
			pe.Index = nil
		}
		return true
	})
	defer func() {
		for i, pe := range indexed {
			pe.Index = indexes[i]
		}
	}()
	var out []string
	for _, c := range combos {
		cfg := sr.config(c)
		n := 0
		for f, err := range expand.FieldsSeq(cfg, w) {
			if err != nil {
				if errors.Is(err, errGlobBudget) {
					sr.failf("expanding %q reads more than %d directories", wordText(w), maxGlobDirs)
					return nil
				}
				// What bash would refuse to expand: read the word's
				// literal parts, the rest unknown.
				out = append(out, wordText(w))
				break
			}
			n++
			sr.words++
			if n > maxFields || sr.words > maxWords {
				sr.failf("the command expands to more than %d words", min(maxFields, maxWords))
				return nil
			}
			out = append(out, f)
		}
	}
	return out
}

// wordPrefix is the literal start of a word.
func wordPrefix(w *syntax.Word) string {
	if len(w.Parts) > 0 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok {
			return l.Value
		}
	}
	return ""
}

// paramNames lists the variables a word reads.
func paramNames(w *syntax.Word) []string {
	var names []string
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ParamExp:
			if n.Param != nil && !containsStr(names, n.Param.Value) {
				names = append(names, n.Param.Value)
			}
		case *syntax.CmdSubst:
			return false
		}
		return true
	})
	return names
}

// wordText renders a word's literal parts, unknown for the rest.
func wordText(w *syntax.Word) string {
	var b strings.Builder
	var parts func([]syntax.WordPart)
	parts = func(ps []syntax.WordPart) {
		for _, p := range ps {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				parts(p.Parts)
			default:
				b.WriteString(unknown)
			}
		}
	}
	parts(w.Parts)
	return b.String()
}

// config is the expansion's configuration: no command runs, variables
// not assigned in the command are unknown, globs read the file system
// within a budget.
func (sr *shellReader) config(vars map[string]string) *expand.Config {
	return &expand.Config{
		Env: shellEnv{sr: sr, vars: vars},
		CmdSubst: func(w io.Writer, _ *syntax.CmdSubst) error {
			_, err := io.WriteString(w, unknown)
			return err
		},
		ProcSubst: func(*syntax.ProcSubst) (string, error) { return unknown, nil },
		ReadDir2: func(dir string) ([]fs.DirEntry, error) {
			if strings.Contains(dir, unknown) {
				return nil, fs.ErrNotExist
			}
			sr.dirs++
			if sr.dirs > maxGlobDirs {
				return nil, errGlobBudget
			}
			return readDir(dir)
		},
		DotGlob:    true,
		NoCaseGlob: sr.r.fold,
	}
}

// zshOnly reports whether f uses zsh expansions that mean something
// other than bash's, or nothing to bash, which mvdan.cc/sh parses but
// does not expand: parameter flags and modifiers (${(f)x}, ${x:h}),
// ${~x}, ${=x}, ${^x}, nested parameters, =cmd (the path of cmd), and
// glob qualifiers (*(.), **/*(D)).
func zshOnly(f *syntax.File) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ParamExp:
			if n.Flags != nil || n.IsSet || n.Split != syntax.OptUnset || n.GlobSubst != syntax.OptUnset ||
				n.RcExpand != syntax.OptUnset || n.NestedParam != nil || len(n.Modifiers) > 0 {
				found = true
			}
		case *syntax.ExtGlob:
			found = true
		case *syntax.Word:
			if lit := wordPrefix(n); strings.HasPrefix(lit, "=") && len(lit) > 1 {
				found = true
			}
			if l := n.Lit(); strings.HasSuffix(l, ")") && strings.ContainsAny(l, "*?") && strings.Contains(l, "(") {
				found = true
			}
		}
		return !found
	})
	return found
}

// shellEnv is the environment words expand in.
type shellEnv struct {
	sr   *shellReader
	vars map[string]string
}

func (e shellEnv) Get(name string) expand.Variable {
	str := func(s string) expand.Variable { return expand.Variable{Set: true, Kind: expand.String, Str: s} }
	if v, ok := e.vars[name]; ok {
		return str(v)
	}
	switch name {
	case "IFS":
		return expand.Variable{}
	case "HOME":
		return str(e.sr.r.home)
	case "PWD", "OLDPWD":
		return str(e.sr.cwds[len(e.sr.cwds)-1])
	}
	if u, ok := strings.CutPrefix(name, "HOME "); ok {
		// ~user: the user's home directory, from the user database, as
		// bash takes it; a user there is none of stays ~user.
		if home := userHome(u); home != "" {
			return str(home)
		}
		return expand.Variable{}
	}
	return str(unknown)
}

func (shellEnv) Each(func(string, expand.Variable) bool) {}

var _ expand.Environ = shellEnv{}

// userHome is the home directory of user name, "" when there is none.
func userHome(name string) string {
	if v, ok := userHomes.Load(name); ok {
		return v.(string)
	}
	home := ""
	if u, err := user.Lookup(name); err == nil {
		home = u.HomeDir
	}
	userHomes.Store(name, home)
	return home
}

// userHomes caches userHome: the user database does not change while a
// command is read, and is read once per name.
var userHomes sync.Map

// String renders a target for messages.
func (t Target) String() string {
	s := fmt.Sprintf("%s %s", t.Access, t.Path)
	if t.Real != t.Path {
		s += " -> " + t.Real
	}
	if t.Filter != "" {
		s += " (" + t.Filter + ")"
	}
	return strings.ReplaceAll(s, unknown, "?")
}

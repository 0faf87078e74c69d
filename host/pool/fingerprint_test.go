package pool

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/hearth-dev/hearth/sdk"
)

// TestFingerprintObserves: what a tool use teaches a session. Denied or
// failed uses teach nothing; a listing counts as the directory it lists;
// files bring their directory and their technology.
func TestFingerprintObserves(t *testing.T) {
	fp := newFingerprint(Limits{MaxFiles: 3, MaxDirectories: 10, MaxTechnologies: 4})
	for _, u := range []sdk.ToolUse{
		{Tool: "Read", Paths: []string{".env"}, Outcome: sdk.OutcomeDenied},
		{Tool: "Read", Paths: []string{"secrets/key"}, Outcome: sdk.OutcomeError},
		{Tool: "LS", Paths: []string{"docs/api"}, Outcome: sdk.OutcomeOK},
		{Tool: "Read", Paths: []string{"/work/src/a/1.go", "src/b/2.py"}, Outcome: sdk.OutcomeOK},
	} {
		fp.observe(u, "/work")
	}
	files, dirs, techs := fp.files.keys(), fp.dirs.keys(), fp.techs.keys()
	if !slices.Equal(files, []string{"src/a/1.go", "src/b/2.py"}) {
		t.Errorf("files: got %v, want the two reads, relative to the workspace", files)
	}
	slices.Sort(dirs)
	if want := []string{"docs/api", "src/a", "src/b"}; !slices.Equal(dirs, want) {
		t.Errorf("dirs %v: want %v, the directories worked in (the matcher derives their ancestors)", dirs, want)
	}
	if slices.Contains(dirs, "secrets") || slices.Contains(files, ".env") {
		t.Errorf("denied or failed uses were counted: files %v dirs %v", files, dirs)
	}
	if !slices.Equal(techs, []string{"go", "python"}) {
		t.Errorf("techs: got %v, want go and python from the extensions", techs)
	}
}

// TestFingerprintByKind: a tool use's kind says what its paths are; with
// no kind, the tool's name does.
func TestFingerprintByKind(t *testing.T) {
	tests := []struct {
		name        string
		use         sdk.ToolUse
		files, dirs []string
		techs       []string
	}{
		{"read", sdk.ToolUse{Tool: "cat", Kind: sdk.KindRead, Paths: []string{"src/a.go"}},
			[]string{"src/a.go"}, []string{"src"}, []string{"go"}},
		{"write", sdk.ToolUse{Tool: "Edit", Kind: sdk.KindWrite, Paths: []string{"db/schema.sql"}, Technologies: []string{"postgres"}},
			[]string{"db/schema.sql"}, []string{"db"}, []string{"postgres", "sql"}},
		{"list", sdk.ToolUse{Tool: "dir", Kind: sdk.KindList, Paths: []string{"docs/api"}},
			nil, []string{"docs/api"}, nil},
		{"search of a directory", sdk.ToolUse{Tool: "Grep", Kind: sdk.KindSearch, Paths: []string{"src/models"}},
			nil, []string{"src/models"}, nil},
		{"search naming its matches", sdk.ToolUse{Tool: "Search", Kind: sdk.KindSearch, Paths: []string{"src/", "src/models/user.py"}},
			[]string{"src/models/user.py"}, []string{"src", "src/models"}, []string{"python"}},
		{"exec", sdk.ToolUse{Tool: "Exec", Kind: sdk.KindExec, Paths: []string{"scripts/build.sh"}},
			[]string{"scripts/build.sh"}, []string{"scripts"}, []string{"shell"}},
		{"other, with a directory", sdk.ToolUse{Tool: "parse", Kind: sdk.KindOther, Paths: []string{"a.md", "notes/"}},
			[]string{"a.md"}, []string{".", "notes"}, []string{"markdown"}},
		{"no kind: Grep names files", sdk.ToolUse{Tool: "Grep", Paths: []string{"src/models"}},
			[]string{"src/models"}, []string{"src"}, nil},
		{"no kind: LS names directories", sdk.ToolUse{Tool: "LS", Paths: []string{"src/models"}},
			nil, []string{"src/models"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := newFingerprint(Limits{MaxFiles: 10, MaxDirectories: 10, MaxTechnologies: 10})
			tt.use.Outcome = sdk.OutcomeOK
			fp.observe(tt.use, "")
			files, dirs, techs := fp.files.keys(), fp.dirs.keys(), fp.techs.keys()
			slices.Sort(files)
			slices.Sort(dirs)
			slices.Sort(techs)
			if !slices.Equal(files, tt.files) || !slices.Equal(dirs, tt.dirs) || !slices.Equal(techs, tt.techs) {
				t.Errorf("got files %v, dirs %v, techs %v; want %v, %v, %v", files, dirs, techs, tt.files, tt.dirs, tt.techs)
			}
		})
	}
}

// TestFingerprintRecordsTheRoot: the workspace root is a directory like
// any other. A session that read a file at the root worked in "."; hints
// naming that file say "."; a listing of the root counts; paths outside
// the workspace stay absolute, and the file system's root is no directory.
func TestFingerprintRecordsTheRoot(t *testing.T) {
	ws := t.TempDir()
	fp := newFingerprint(Limits{MaxFiles: 10, MaxDirectories: 10, MaxTechnologies: 10})
	for _, u := range []sdk.ToolUse{
		{Tool: "Read", Paths: []string{"main.go"}, Outcome: sdk.OutcomeOK},
		{Tool: "Read", Paths: []string{filepath.Join(ws, "cmd", "x.go")}, Outcome: sdk.OutcomeOK},
		{Tool: "LS", Paths: []string{ws, "./"}, Outcome: sdk.OutcomeOK},
		{Tool: "Read", Paths: []string{"/etc/hosts", "", "/"}, Outcome: sdk.OutcomeOK},
	} {
		fp.observe(u, ws)
	}
	dirs, files := fp.dirs.keys(), fp.files.keys()
	slices.Sort(dirs)
	slices.Sort(files)
	if want := []string{".", "/etc", "cmd"}; !slices.Equal(dirs, want) {
		t.Errorf("dirs: got %q, want %q", dirs, want)
	}
	if want := []string{"/etc/hosts", "cmd/x.go", "main.go"}; !slices.Equal(files, want) {
		t.Errorf("files: got %q, want %q", files, want)
	}
	h := normalizeHints(sdk.Hints{Files: []string{filepath.Join(ws, "main.go")}, Directories: []string{ws}}, ws)
	if !slices.Equal(h.Files, []string{"main.go"}) || !slices.Equal(h.Dirs, []string{"."}) {
		t.Errorf("hints: got files %q, dirs %q, want main.go and .", h.Files, h.Dirs)
	}
}

// TestFingerprintByOutcome: a use that failed teaches nothing, but a
// command that ran and failed (a failing test) still worked where it
// names; a denied use teaches nothing, whatever its kind.
func TestFingerprintByOutcome(t *testing.T) {
	for _, c := range []struct {
		name  string
		use   sdk.ToolUse
		files []string
	}{
		{"failed read", sdk.ToolUse{Tool: "Read", Kind: sdk.KindRead, Paths: []string{"a.go"}, Outcome: sdk.OutcomeError}, nil},
		{"failed command", sdk.ToolUse{Tool: "Bash", Kind: sdk.KindExec, Paths: []string{"a_test.go"}, Outcome: sdk.OutcomeError}, []string{"a_test.go"}},
		{"denied command", sdk.ToolUse{Tool: "Bash", Kind: sdk.KindExec, Paths: []string{"a.go"}, Outcome: sdk.OutcomeDenied}, nil},
		{"command that worked", sdk.ToolUse{Tool: "Bash", Kind: sdk.KindExec, Paths: []string{"a.go"}, Outcome: sdk.OutcomeOK}, []string{"a.go"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fp := newFingerprint(Limits{MaxFiles: 10, MaxDirectories: 10, MaxTechnologies: 10})
			fp.observe(c.use, "")
			if got := fp.files.keys(); !slices.Equal(got, c.files) {
				t.Errorf("files %v, want %v", got, c.files)
			}
		})
	}
}

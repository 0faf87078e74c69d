package host

import (
	"slices"
	"testing"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/store/storepb"
	"github.com/hearth-dev/hearth/sdk"
)

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
			nil, []string{"docs", "docs/api"}, nil},
		{"search of a directory", sdk.ToolUse{Tool: "Grep", Kind: sdk.KindSearch, Paths: []string{"src/models"}},
			nil, []string{"src", "src/models"}, nil},
		{"search naming its matches", sdk.ToolUse{Tool: "Search", Kind: sdk.KindSearch, Paths: []string{"src/", "src/models/user.py"}},
			[]string{"src/models/user.py"}, []string{"src", "src/models"}, []string{"python"}},
		{"exec", sdk.ToolUse{Tool: "Exec", Kind: sdk.KindExec, Paths: []string{"scripts/build.sh"}},
			[]string{"scripts/build.sh"}, []string{"scripts"}, []string{"shell"}},
		{"other, with a directory", sdk.ToolUse{Tool: "parse", Kind: sdk.KindOther, Paths: []string{"a.md", "notes/"}},
			[]string{"a.md"}, []string{"notes"}, []string{"markdown"}},
		{"no kind: Grep names files", sdk.ToolUse{Tool: "Grep", Paths: []string{"src/models"}},
			[]string{"src/models"}, []string{"src"}, nil},
		{"no kind: LS names directories", sdk.ToolUse{Tool: "LS", Paths: []string{"src/models"}},
			nil, []string{"src", "src/models"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := newFingerprint(config.Fingerprint{MaxFiles: 10, MaxDirectories: 10, MaxTechnologies: 10})
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

// TestToolUseRecord: the store keeps a tool use's kind, and its outcome
// in the numbering records had before OutcomeUnset became the zero value.
func TestToolUseRecord(t *testing.T) {
	for _, o := range []sdk.Outcome{sdk.OutcomeOK, sdk.OutcomeError, sdk.OutcomeDenied, sdk.OutcomeUnset} {
		u := sdk.ToolUse{Tool: "Read", Kind: sdk.KindRead, Paths: []string{"a.go"}, Outcome: o}
		got := eventFromRecord(Event{Kind: EventToolUsed, ToolUse: &u}.record()).ToolUse
		if got == nil || got.Kind != sdk.KindRead || got.Outcome != o {
			t.Errorf("outcome %s: read back %+v", o, got)
		}
	}
	// A record written before kinds and OutcomeUnset: outcome 0 was OK.
	old := toolUseFromRecord(&storepb.ToolUse{Tool: "LS", Paths: []string{"docs"}})
	if old.Outcome != sdk.OutcomeOK || old.Kind != "" {
		t.Errorf("an old record reads as %+v, want an OK use with no kind", old)
	}
}

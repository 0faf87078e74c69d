package pool

import (
	"slices"
	"testing"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/sdk"
)

// TestFingerprintObserves: what a tool use teaches a session. Denied or
// failed uses teach nothing; listings count as directories, with their
// ancestors; files bring their directory and their technology.
func TestFingerprintObserves(t *testing.T) {
	fp := newFingerprint(config.Fingerprint{MaxFiles: 3, MaxDirectories: 10, MaxTechnologies: 4})
	for _, u := range []sdk.ToolUse{
		{Tool: "Read", Paths: []string{".env"}, Outcome: sdk.OutcomeDenied},
		{Tool: "Read", Paths: []string{"secrets/key"}, Outcome: sdk.OutcomeError},
		{Tool: "LS", Paths: []string{"docs/api"}},
		{Tool: "Read", Paths: []string{"/work/src/a/1.go", "src/b/2.py"}},
	} {
		fp.observe(u, "/work")
	}
	files, dirs, techs := fp.files.keys(), fp.dirs.keys(), fp.techs.keys()
	if !slices.Equal(files, []string{"src/a/1.go", "src/b/2.py"}) {
		t.Errorf("files: got %v, want the two reads, relative to the workspace", files)
	}
	for _, d := range []string{"docs/api", "docs", "src/a", "src", "src/b"} {
		if !slices.Contains(dirs, d) {
			t.Errorf("dirs %v: want %s", dirs, d)
		}
	}
	if slices.Contains(dirs, "secrets") || slices.Contains(files, ".env") {
		t.Errorf("denied or failed uses were counted: files %v dirs %v", files, dirs)
	}
	if !slices.Equal(techs, []string{"go", "python"}) {
		t.Errorf("techs: got %v, want go and python from the extensions", techs)
	}
}

package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseConfinement(t *testing.T) {
	src := `
confinement = "require"
agent "a" {
  bundled     = "gotour"
  read_paths  = ["docs", "/usr/share/dict"]
  write_paths = ["/srv/out"]
  connect_ports = [443, 8443]
}
agent "b" {
  bundled     = "gotour"
  confinement = "off"
}
agent "c" { bundled = "gotour" }
`
	cfg, err := Parse([]byte(src), "/etc/hearth/t.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := cfg.Agent("a"), cfg.Agent("b"), cfg.Agent("c")
	if a.Confinement != ConfinementRequire || b.Confinement != ConfinementOff || c.Confinement != ConfinementRequire {
		t.Errorf("modes %q %q %q, want require (the file's), off (its own), require", a.Confinement, b.Confinement, c.Confinement)
	}
	if !slices.Equal(a.ReadPaths, []string{"/etc/hearth/docs", "/usr/share/dict"}) || !slices.Equal(a.WritePaths, []string{"/srv/out"}) {
		t.Errorf("read %v write %v, want relative paths resolved against the file's directory", a.ReadPaths, a.WritePaths)
	}
	if !slices.Equal(a.ConnectPorts, []uint16{443, 8443}) || c.ConnectPorts != nil {
		t.Errorf("ports %v and %v, want [443 8443] and nil (TCP not restricted)", a.ConnectPorts, c.ConnectPorts)
	}

	cfg, err = Parse([]byte(`agent "a" { bundled = "gotour" }`), "t.hcl", opts)
	if err != nil || cfg.Agent("a").Confinement != ConfinementAuto {
		t.Errorf("default: %v, %v; want auto", cfg.Agent("a").Confinement, err)
	}
	if d := Default([]string{"gotour"}); d.Agent("gotour").Confinement != ConfinementAuto {
		t.Errorf("Default's agents: %q, want auto", d.Agent("gotour").Confinement)
	}
}

func TestConfinementErrors(t *testing.T) {
	dataDir, _ := filepath.Abs(".hearth")
	for _, tc := range []struct {
		name, src, pos, want string
	}{
		{"bad mode", "agent \"a\" {\n  bundled = \"gotour\"\n  confinement = \"requir\"\n}\n", "t.hcl:3:17", `confinement must be "auto"`},
		{"bad file mode", "confinement = \"strict\"\nagent \"a\" { bundled = \"gotour\" }\n", "t.hcl:1:15", `got "strict"`},
		{"grant in the data dir", "agent \"a\" {\n  bundled = \"gotour\"\n  read_paths = [\"src\", \".hearth/badger\"]\n}\ndata_dir = \".hearth\"\n", "t.hcl:3:24", "inside the data directory " + dataDir},
		{"grant of the data dir", "agent \"a\" {\n  bundled = \"gotour\"\n  write_paths = [\".hearth\"]\n}\ndata_dir = \".hearth\"\n", "t.hcl:3:18", "no plugin may reach the host's records"},
		{"tilde", "agent \"a\" {\n  bundled = \"gotour\"\n  read_paths = [\"~/src\"]\n}\n", "t.hcl:3:17", "~ is not expanded"},
		{"empty path", "agent \"a\" {\n  bundled = \"gotour\"\n  read_paths = [\" \"]\n}\n", "t.hcl:3:17", "remove the empty entry"},
		{"bad port", "agent \"a\" {\n  bundled = \"gotour\"\n  connect_ports = [443, 70000]\n}\n", "t.hcl:3:25", "70000 is not a port"},
		{"misspelt", "agent \"a\" {\n  bundled = \"gotour\"\n  read_path = [\"x\"]\n}\n", "t.hcl:3:3", `Did you mean "read_paths"?`},
		{"on an external agent", "agent \"cc\" {\n  external = \"claude-code\"\n  write_paths = [\"x\"]\n}\n", "t.hcl:3:17", "write_paths does not apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "t.hcl", opts)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.pos) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got\n%v\nwant %s and %q", err, tc.pos, tc.want)
			}
		})
	}
}

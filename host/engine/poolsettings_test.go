package engine

import (
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/pool"
)

// TestPoolSettingsDefaults: a config file that leaves the pool and
// fingerprint numbers out runs its pools with the pool's defaults (an
// external agent's max_sessions its own), what it sets is kept, and
// max_dormant = 0 keeps none rather than reading as "unset". The
// matcher's freshness ends at each pool's idle timeout.
func TestPoolSettingsDefaults(t *testing.T) {
	src := `
agent "plain" { bundled = "gotour" }
agent "set" {
  bundled = "gotour"
  pool {
    max_sessions = 2
    idle_timeout = "5m"
    max_dormant  = 0
  }
  fingerprint { max_files = 7 }
}
agent "cc" { external = "claude-code" }
`
	cfg, err := config.Parse([]byte(src), "p.hcl", config.Options{Bundled: []string{"gotour"}})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		sessions, dormant int
		idle, fresh       time.Duration
		limits            pool.Limits
	}
	defaults := pool.Limits{MaxFiles: pool.DefaultMaxFiles, MaxDirectories: pool.DefaultMaxDirectories, MaxTechnologies: pool.DefaultMaxTechnologies}
	for _, c := range []struct {
		agent string
		want  got
	}{
		{"plain", got{4, 64, 30 * time.Minute, 30 * time.Minute, defaults}},
		{"set", got{2, 0, 5 * time.Minute, 5 * time.Minute, pool.Limits{MaxFiles: 7, MaxDirectories: 256, MaxTechnologies: 32}}},
		{"cc", got{16, 64, 30 * time.Minute, 30 * time.Minute, defaults}},
	} {
		sp := PoolSettings(cfg.Agent(c.agent), cfg.Matcher)
		g := got{sp.MaxSessions, sp.MaxDormant, sp.IdleTimeout, sp.Matcher.IdleTimeout, sp.Fingerprint}
		if g != c.want {
			t.Errorf("%s: got %+v, want %+v", c.agent, g, c.want)
		}
	}
}

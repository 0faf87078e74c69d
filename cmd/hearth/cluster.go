package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/host/cluster/member"
	"github.com/hearth-dev/hearth/host/cluster/peer"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// The member is the engine's cluster: the engine names it only through
// its Cluster interface, so that it links no cluster implementation.
var _ engine.Cluster = (*member.Member)(nil)

// newMember makes this host's member of the cluster its config's
// cluster block names (host/cluster/member), or nil without a cluster
// block. It checks the block and reads the hosts' certificates, and
// starts nothing: serve hands it to the engine and joins it once the
// daemon listens. Its spans go where the engine's go, tp.
func (m *Main) newMember(cfg *config.Config, logger hclog.Logger, tp *telemetry.Provider) (*member.Member, error) {
	if cfg.Cluster == nil {
		return nil, nil
	}
	o := member.Options{Cluster: *cfg.Cluster, Listen: cfg.Server.Listen, DataDir: cfg.DataDir,
		Version: buildInfo().Version, ConfigHash: configHash(cfg), Logger: logger, Tracer: tp.TracerProvider()}
	if t := cfg.Server.TLS; t != nil {
		o.TLS = &peer.TLS{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.ClientCAFile}
	}
	// The hosts send one another the token the daemon asks TCP clients
	// for, when it asks for one.
	token, err := config.ReadToken(cfg.Server.TokenFile)
	if err != nil {
		return nil, err
	}
	o.Token = token
	return member.New(o)
}

// configHash is a digest of what a host decides with: its agents (their
// workspaces included), matcher weights, guards and pipelines; not its listeners or its cluster block,
// which differ between hosts by design. `hearth hosts list` shows when
// hosts' hashes differ: their guards or agents are not the same.
//
// It digests content, not where the file is: loading resolves relative
// paths (a command, a workspace, read_paths) against the config file's
// directory, so the same file in /srv/a and /srv/b would otherwise hash
// apart (issue 26). Every path under that directory is digested relative
// to it; a path outside it is compared as written.
func configHash(cfg *config.Config) string {
	b, err := json.Marshal(struct {
		Agents    any
		Matcher   any
		Guards    any
		Pipelines any
	}{cfg.Agents, cfg.Matcher, cfg.Guards, cfg.Pipelines})
	if err != nil {
		// Not expected of a loaded config; the file itself then.
		b, _ = os.ReadFile(cfg.Path)
	}
	if dir := filepath.Dir(cfg.Path); cfg.Path != "" && dir != string(filepath.Separator) && filepath.IsAbs(dir) {
		b = relativeTo(b, dir)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// relativeTo replaces, in the JSON b, every string that is dir or a
// path below it by the same string relative to dir ("$CONFIG_DIR" and
// "$CONFIG_DIR/rest"). It works on the encoded form, so that every path
// field of every block is covered, including those added later.
func relativeTo(b []byte, dir string) []byte {
	q, _ := json.Marshal(dir) // "dir", escaped as in b
	open := q[:len(q)-1]      // "dir
	b = bytes.ReplaceAll(b, q, []byte(`"$CONFIG_DIR"`))
	sep, _ := json.Marshal(string(filepath.Separator))
	return bytes.ReplaceAll(b, append(slices.Clip(open), sep[1:len(sep)-1]...), []byte(`"$CONFIG_DIR/`))
}

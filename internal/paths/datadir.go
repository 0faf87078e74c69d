package paths

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
)

// Where the default data directory lives, and why.
//
// An agent's workspace defaults to the config file's directory, and a
// confined plugin may read and write its workspace but never the data
// directory. Landlock grants by path hierarchy: what is granted on a
// directory holds for everything beneath it. A data directory inside the
// workspace therefore forces the workspace to be granted entry by entry,
// around the branch that leads to the data directory, and leaves the
// directories on that branch, the workspace root among them, with no
// grant at all: a plugin could neither list its own workspace root nor
// create a file in it. So the default data directory lies outside every
// workspace, in the user's state directory ($XDG_STATE_HOME/hearth, else
// ~/.local/state/hearth), one directory per config file, named after the
// file's directory and a hash of the file's path: the same file finds the
// same sessions from any current directory, and two files never share a
// store. Without a config file the current directory stands in for it.
//
// Earlier versions kept the default data directory in .hearth beside the
// config file. One found there, when the new default does not exist yet,
// is used as it is (nothing is lost), and the host says, once at start,
// how to move it (config.Config.DataDirMove). The daemon's Go client finds
// the default the same way, with this code.

// LegacyDataDir is the default data directory of earlier versions,
// beside the config file (or in the current directory without one).
const LegacyDataDir = ".hearth"

// StateHome is the directory default data directories are made in:
// $XDG_STATE_HOME/hearth when that is an absolute path (the XDG base
// directory specification ignores a relative one), else
// $HOME/.local/state/hearth; "" when neither variable is set. getenv
// reads the environment (os.Getenv).
func StateHome(getenv func(string) string) string {
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "hearth")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "hearth")
	}
	return ""
}

// DefaultDataDir is the default data directory of the config file file
// (absolute), or, with file "", of a host run without one in the
// directory dir (absolute): under stateHome, named after the directory
// and a hash of the path. from says so, for messages. A .hearth directory
// of an earlier version found beside the file (or in dir) is used
// instead while the new default does not exist, and move is then the new
// default it should be moved to; otherwise move is "". With stateHome
// "" there is no default: dir is "" and from says why.
func DefaultDataDir(file, dir, stateHome string) (dataDir, from, move string) {
	key, beside, legacyFrom := dir, "in "+dir+" (no config file)", LegacyDataDir+" in "+dir
	if file != "" {
		key, dir, beside, legacyFrom = file, filepath.Dir(file), "of "+file, LegacyDataDir+" beside "+file
	}
	if stateHome == "" {
		return "", "the default " + beside + ", which needs $XDG_STATE_HOME or $HOME to be set", ""
	}
	named := dir
	if real, err := filepath.EvalSymlinks(key); err == nil {
		key, named = real, real
		if file != "" {
			named = filepath.Dir(real)
		}
	}
	sum := sha256.Sum256([]byte(key))
	name := dirName(filepath.Base(named))
	if file != "" && filepath.Base(file) != "hearth.hcl" {
		name += "-" + dirName(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
	}
	dataDir = filepath.Join(stateHome, name+"-"+hex.EncodeToString(sum[:4]))
	from = "the default " + beside + ", in the state directory " + stateHome
	legacy := filepath.Join(dir, LegacyDataDir)
	if _, err := os.Stat(dataDir); err != nil {
		if fi, err := os.Stat(legacy); err == nil && fi.IsDir() {
			return legacy, "the default of earlier versions, " + legacyFrom, dataDir
		}
	}
	return dataDir, from, ""
}

// dirName makes s safe and short as part of a directory name: letters,
// digits, '.', '_' and '-' kept, anything else a '-', at most 24 bytes
// (the daemon's socket lies in the data directory, and a unix socket's
// path has room for 107).
func dirName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	s = strings.Trim(string(b), ".-")
	if len(s) > 24 {
		s = s[:24]
	}
	if s == "" {
		s = "root"
	}
	return s
}

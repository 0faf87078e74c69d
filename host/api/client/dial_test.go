package client_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/host/api/client"
)

// TestDialWithNoOptions: with no address at all, the client looks for
// the daemon `hearth serve` runs without a config in the current
// directory: in that directory's default data directory.
func TestDialWithNoOptions(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Chdir(t.TempDir())
	_, err := client.Dial(context.Background(), client.Options{})
	if !errors.Is(err, client.ErrNoDaemon) || !strings.Contains(err.Error(), filepath.Join(state, "hearth")+string(filepath.Separator)) {
		t.Errorf("got %v, want no daemon in the default data directory under %s", err, state)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	if _, err := client.Dial(context.Background(), client.Options{}); err == nil || !strings.Contains(err.Error(), "give Options.DataDir or Socket") {
		t.Errorf("with no home: %v, want the fix named", err)
	}
}

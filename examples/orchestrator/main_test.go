package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/plugins"
)

// The test binary serves the bundled agents, as the hearth binary does.
func TestMain(m *testing.M) {
	plugins.ServeIfRequested()
	os.Exit(m.Run())
}

// TestTourGetsWarmSessions runs the orchestrator against a real daemon
// on the embedded default config: every question after the first of its
// package runs warm.
func TestTourGetsWarmSessions(t *testing.T) {
	dir, err := os.MkdirTemp("", "orch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := config.Default(plugins.Names())
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Server.HTTP = ""
	h, err := engine.New(engine.Options{Config: cfg, Bundled: plugins.Command})
	if err != nil {
		t.Fatal(err)
	}
	l, err := api.NewServer(api.Options{Engine: h}).Listen(cfg.Server, cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		l.Close(ctx)
		_ = h.Close(ctx)
	})
	c, err := client.Dial(context.Background(), client.Options{DataDir: cfg.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out strings.Builder
	reused, err := tour(context.Background(), c, io.MultiWriter(&out, testLog{t}))
	if err != nil {
		t.Fatal(err)
	}
	// Two packages: two spawns, the five other questions warm.
	if reused != len(questions)-2 {
		t.Errorf("%d reused; want %d:\n%s", reused, len(questions)-2, out.String())
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

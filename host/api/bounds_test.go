package api_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/config"
)

// TestSlowClientsCannotStarveTheDaemon reproduces issue 13's fourth
// finding: 200 slow HTTP clients were held forever, and at the file limit
// the unix socket stopped answering too. Connections beyond the HTTP
// server's limit wait in the kernel's backlog; the unix socket answers.
func TestSlowClientsCannotStarveTheDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 300 {
		c, err := net.Dial("tcp", d.l.HTTP)
		if err != nil {
			break // the backlog is full: that is the bound working
		}
		// Half a request line, and then nothing.
		c.Write([]byte("GET /healthz HTT"))
		conns = append(conns, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := d.c.Status(ctx); err != nil {
		t.Fatalf("the unix socket, with %d slow HTTP clients: %v", len(conns), err)
	}
}

// TestSlowClientsWithoutTheTokenCannotDelayATokenedHook (issue 25,
// finding 3): 300 connections without the token, each holding half a
// request line, held every slot of the old 256-connection cap, and a
// hook call with the token waited behind them until their headers timed
// out. They are now in a budget of their own: the tokened call is served
// while they are all still open, well before any of them times out.
func TestSlowClientsWithoutTheTokenCannotDelayATokenedHook(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	for range 300 {
		c, err := net.Dial("tcp", d.l.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET /api/snapshot HTT")); err != nil {
			t.Fatal(err)
		}
	}
	// Shorter than the slow connections' header deadline: the call is
	// not served because they timed out.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.l.HTTP+"/api/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a tokened request behind 300 slow connections without the token: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("got %s, want 200", resp.Status)
	}
}

// TestBadPathsAreNotFound: GET /0%87 (a path that is not UTF-8) answered
// 500 (issue 13, found by fuzzing the HTTP handler).
func TestBadPathsAreNotFound(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	req, err := http.NewRequest(http.MethodGet, "http://"+d.l.HTTP+"/0%87", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /0%%87: %d, want 404", resp.StatusCode)
	}
}

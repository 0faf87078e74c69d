package member_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/cluster/member"
	"github.com/hearth-dev/hearth/host/cluster/peer"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/testcert"
	"github.com/hearth-dev/hearth/sdk"
)

// TestPlaceAcrossHosts: the host's pools keep the other hosts' sessions
// from the view in their indexes, and one decision covers both: a task
// whose context is on host b goes there, one whose context is here stays
// here; a spawn goes to the member with room; a host that leaves takes
// its sessions out of placement at once. The host's own record and
// summaries are what it publishes.
func TestPlaceAcrossHosts(t *testing.T) {
	a := testAgent(0)
	a.Pool.MaxSessions = 1
	h := startHost(t, hostOptions{ID: "a", Agent: a})
	ctx := context.Background()

	// A session here that knows pkg/here.
	out, err := h.Engine.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "read:pkg/here/a.go"})
	if err != nil {
		t.Fatal(err)
	}
	local := out.Session

	src := h.Member.Source()
	rec := src.Host()
	if rec.ID != "a" || len(rec.Agents) != 1 || rec.Agents[0].Live != 1 || rec.Agents[0].MaxSessions != 1 {
		t.Fatalf("the host's record: %+v", rec)
	}
	sums := src.Sessions()
	if len(sums) != 1 || sums[0].Session != local || sums[0].Files[0] != "pkg/here/a.go" {
		t.Fatalf("the host's summaries: %+v", sums)
	}
	if _, ok := src.Session("no-such-session"); ok {
		t.Fatal("a session that does not exist is published")
	}

	now := time.Now()
	load := func(live, max int) []hearth.AgentLoad {
		return []hearth.AgentLoad{{Name: "scripted", Live: live, MaxSessions: max, Capacity: live}}
	}
	v := h.Member.View()
	v.Apply(1, []cluster.Change{
		{Kind: cluster.KeyHost, Host: "a", Info: hearth.Member{ID: "a", Addr: "127.0.0.1:1", Agents: load(1, 1)}},
		{Kind: cluster.KeyHost, Host: "b", Info: hearth.Member{ID: "b", Addr: "127.0.0.1:2", Agents: load(1, 4)}},
		{Kind: cluster.KeySession, Host: "b", Summary: cluster.Summary{Session: "s1", Agent: "scripted",
			Files: []string{"pkg/there/b.go"}, Capacity: 1, LastActivity: now}},
	})

	d, err := h.Engine.Place(ctx, "scripted", sdk.Hints{Directories: []string{"pkg/there"}})
	if err != nil || d.Host != "b" || d.Session != "s1" || d.Action != hearth.ActionReused {
		t.Fatalf("pkg/there: %+v %v, want s1 on b", d, err)
	}
	d, err = h.Engine.Place(ctx, "scripted", sdk.Hints{Directories: []string{"pkg/here"}})
	if err != nil || d.Host != "" || d.Session != local {
		t.Fatalf("pkg/here: %+v %v, want %s here", d, err, local)
	}
	// Nothing known anywhere: this host is full (1 of 1), b has room.
	d, err = h.Engine.Place(ctx, "scripted", sdk.Hints{Directories: []string{"pkg/new"}})
	if err != nil || d.Host != "b" || d.Action != hearth.ActionSpawned {
		t.Fatalf("pkg/new: %+v %v, want a spawn on b", d, err)
	}
	// A task with its context here runs here, without the peers.
	out, err = h.Engine.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "echo:here", Hints: sdk.Hints{Directories: []string{"pkg/here"}}})
	if err != nil || out.Session != local || out.Decision.Host != "" {
		t.Fatalf("submit pkg/here: %+v %v", out, err)
	}

	// b leaves: its session is no candidate any more.
	v.Apply(2, []cluster.Change{{Kind: cluster.KeyHost, Host: "b", Delete: true}})
	d, err = h.Engine.Place(ctx, "scripted", sdk.Hints{Directories: []string{"pkg/there"}})
	if err != nil || d.Host != "" {
		t.Fatalf("pkg/there after b left: %+v %v, want this host", d, err)
	}
	if members := v.Members(); len(members) != 1 || members[0].ID != "a" {
		t.Fatalf("the view's members after b left: %+v", members)
	}
	ms, err := h.Member.Members(ctx)
	if err != nil || !ms.Clustered || ms.Self != "a" || len(ms.Hosts) != 1 || ms.Hosts[0].ID != "a" || !ms.Hosts[0].Self || ms.Hosts[0].Sessions != 1 {
		t.Fatalf("members after b left: %+v %v, want a alone, with its one session", ms, err)
	}
}

// TestSubmitRefusedGoesElsewhere: host a places a task on b's session,
// which knows its package; b refuses it (its lease is lost: its fence
// has ended), so a places it again without b's session, and runs it
// itself. The task ran once, on a.
func TestSubmitRefusedGoesElsewhere(t *testing.T) {
	dir := tempDir(t)
	ca, cert, key := testcert.Write(t, dir)
	hb := startHost(t, hostOptions{ID: "b", CA: ca, Cert: cert, Key: key, Daemon: true})
	ha := startHost(t, hostOptions{ID: "a", CA: ca, Cert: cert, Key: key, Daemon: true})
	ctx := t.Context()
	if _, err := hb.Engine.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "read:pkg/b/x.go"}); err != nil {
		t.Fatal(err)
	}
	// b loses its lease: its fence ends.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	hb.membership.SetFence(ended)
	ha.Member.View().Apply(1, append(ha.Record(t), hb.Record(t)...))

	d, err := ha.Engine.Place(ctx, "scripted", sdk.Hints{Directories: []string{"pkg/b"}})
	if err != nil || d.Host != "b" {
		t.Fatalf("place: %+v %v, want b's session", d, err)
	}
	ran := filepath.Join(dir, "ran")
	out, err := ha.Engine.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=x;echo:ok", Hints: sdk.Hints{Directories: []string{"pkg/b"}}})
	if err != nil || out.Decision.Host != "" || out.Result.Output != "ok" {
		t.Fatalf("submit: %+v %v, want it run on a after b refused", out, err)
	}
	if b, _ := os.ReadFile(ran); string(b) != "x\n" {
		t.Fatalf("the task ran %q, want once", b)
	}
}

// TestMemberRefusesMisuse: a member that cannot work says so, and what
// to do, before anything starts: a cluster block without the hosts'
// mutual TLS or with a bad field fails New; Join before an engine took
// the member, or (on etcd) before the daemon serves its peer service,
// fails; an engine cannot take a member another engine took, or one
// given incomplete parts.
func TestMemberRefusesMisuse(t *testing.T) {
	ca, cert, key := testcert.Write(t, tempDir(t))
	listen, files := "127.0.0.1:7420", &peer.TLS{CertFile: cert, KeyFile: key, CAFile: ca}
	block := cluster.Config{Endpoints: []string{"http://127.0.0.1:2379"}, HostID: "a"}
	for _, tc := range []struct {
		name string
		o    member.Options
		want error
		says string
	}{
		{"no TLS", member.Options{Cluster: block, Listen: listen, Token: "0123456789abcdef"}, member.ErrNoTLS, "client_ca_file"},
		{"no client CA", member.Options{Cluster: block, Listen: listen, TLS: &peer.TLS{CertFile: cert, KeyFile: key}}, member.ErrNoTLS, "client_ca_file"},
		{"no TCP API", member.Options{Cluster: cluster.Config{Endpoints: block.Endpoints, HostID: "a", Advertise: listen}, TLS: files}, member.ErrNoTLS, "listen"},
		{"a bad host ID", member.Options{Cluster: cluster.Config{Endpoints: block.Endpoints, HostID: "a/b"}, Listen: listen, TLS: files}, cluster.ErrInvalidConfig, "host_id"},
		{"nothing to advertise", member.Options{Cluster: block, TLS: files}, cluster.ErrInvalidConfig, "advertise"},
	} {
		if _, err := member.New(tc.o); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.want, tc.says)
		}
	}

	m, err := member.New(member.Options{Cluster: block, Listen: listen, TLS: files, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave()
	if err := m.Join(t.Context()); err == nil || !strings.Contains(err.Error(), "engine.Options.Cluster") {
		t.Errorf("Join before an engine took it: %v", err)
	}
	if err := m.Attach(cluster.Deps{Now: time.Now}); err == nil || !strings.Contains(err.Error(), "Deps lack Admit, Closing, Emit") {
		t.Errorf("Attach with parts missing: %v", err)
	}
	h := startHost(t, hostOptions{ID: "b"})
	if _, err := engine.New(engine.Options{Config: &config.Config{DataDir: t.TempDir(), Matcher: config.DefaultMatcher()}, Cluster: h.Member}); err == nil || !strings.Contains(err.Error(), "attached to an engine already") {
		t.Errorf("a second engine took the member: %v", err)
	}
	// On etcd, Join waits for the peer service: listed, the host would be
	// sent tasks it cannot take.
	e, err := engine.New(engine.Options{Config: &config.Config{DataDir: t.TempDir(), Matcher: config.DefaultMatcher()}, Cluster: m})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	if err := m.Join(t.Context()); err == nil || !strings.Contains(err.Error(), "api.Options.Register") {
		t.Errorf("Join before the peer service is served: %v", err)
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/sdk"
)

// The nemesis: three real hosts on an embedded etcd run a workload of
// tasks whose every execution writes to a ledger (start and finish, with
// the task and the plugin's PID), while a randomized schedule of faults
// strikes: a host paused with SIGSTOP and continued, a host killed with
// kill -9 and started again on its data directory, etcd stopped and
// started, the peer connections to a host cut (a proxy it is reached
// through drops them and refuses new ones) and restored. At the end:
//
//   - nothing acknowledged is lost: every task the submitter got a
//     result for names (its output is the PID) an execution whose finish
//     the ledger holds;
//   - every task completed exactly once: one result accepted per task,
//     and for a forwarded task, the completion etcd holds is that
//     result;
//   - executions that reached their finish but whose result was refused
//     (their host's lease lost between the plugin finishing and the host
//     writing the completion) are counted: work done twice, never a
//     result accepted twice.
//
// CI runs one short schedule. The long one is a command:
//
//	HEARTH_NEMESIS=long go test -race -run TestClusterNemesis -timeout 60m -v ./cmd/hearth/
//
// (HEARTH_NEMESIS_SEED=N repeats a schedule; every run logs its seed.)

// nemesisPlan is how much a run does.
type nemesisPlan struct {
	schedules, tasks, faults int
}

func nemesisPlanFromEnv() nemesisPlan {
	if os.Getenv("HEARTH_NEMESIS") == "long" {
		return nemesisPlan{schedules: 8, tasks: 40, faults: 12}
	}
	return nemesisPlan{schedules: 1, tasks: 12, faults: 4}
}

func TestClusterNemesis(t *testing.T) {
	t.Parallel()
	plan := nemesisPlanFromEnv()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HEARTH_NEMESIS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HEARTH_NEMESIS_SEED=%q: %v", s, err)
		}
		seed = n
	}
	var total nemesisTally
	for i := range plan.schedules {
		s := seed + uint64(i)
		t.Run(fmt.Sprintf("seed-%d", s), func(t *testing.T) {
			tally := runNemesis(t, s, plan)
			total.add(tally)
		})
	}
	t.Logf("nemesis: %d schedules, %d faults injected (%s), %d tasks: %d acknowledged (%d of them ran on another host), %d completions in etcd, %d double completions, %d executions finished whose result was not delivered (refused as stale, or their submitter's host gone)",
		plan.schedules, total.faults, total.kinds(), total.tasks, total.acked, total.remote, total.forwarded, total.doubles, total.stale)
}

type nemesisTally struct {
	faults, tasks, acked, remote, forwarded, doubles, stale int
	byKind                                                  map[string]int
}

func (n *nemesisTally) add(o nemesisTally) {
	n.faults += o.faults
	n.tasks += o.tasks
	n.acked += o.acked
	n.remote += o.remote
	n.forwarded += o.forwarded
	n.doubles += o.doubles
	n.stale += o.stale
	if n.byKind == nil {
		n.byKind = make(map[string]int)
	}
	for k, v := range o.byKind {
		n.byKind[k] += v
	}
}

func (n *nemesisTally) kinds() string {
	var out []string
	for _, k := range []string{"pause", "kill", "etcd", "cut"} {
		out = append(out, fmt.Sprintf("%s %d", k, n.byKind[k]))
	}
	return strings.Join(out, ", ")
}

// runNemesis runs one schedule and checks it.
func runNemesis(t *testing.T, seed uint64, plan nemesisPlan) nemesisTally {
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	c := newTestCluster(t)
	c.leaseTTL = "3s"
	c.proxied = true
	ids := []string{"a", "b", "c"}
	dir := t.TempDir() // the agents' workspace, the ledger's directory
	c.workspace(dir)
	for _, id := range ids {
		h := c.host(id)
		// Each host holds the context of its own package: tasks on it
		// submitted elsewhere are forwarded to it.
		h.submit(t, "read:pkg/"+id+"/x.go;read:pkg/"+id+"/y.go;echo:warm", "pkg/"+id)
	}
	l := ledger(filepath.Join(dir, "ledger"))

	// The schedule is drawn up front, so that a seed repeats it: the
	// tasks (their package, the host they are submitted to, how long
	// they work, the gap to the next) and the faults (the gap before
	// each, how long it holds, its kind and its host).
	type submission struct {
		pkg, to   string
		work, gap time.Duration
	}
	subs := make([]submission, plan.tasks)
	for i := range subs {
		subs[i] = submission{ids[rng.IntN(len(ids))], ids[rng.IntN(len(ids))],
			time.Duration(200+rng.IntN(1300)) * time.Millisecond, time.Duration(100+rng.IntN(400)) * time.Millisecond}
	}
	type fault struct {
		gap, hold time.Duration
		kind, id  string
	}
	faults := make([]fault, plan.faults)
	for i := range faults {
		faults[i] = fault{time.Duration(200+rng.IntN(800)) * time.Millisecond, time.Duration(1000+rng.IntN(3000)) * time.Millisecond,
			[]string{"pause", "kill", "etcd", "cut"}[rng.IntN(4)], ids[rng.IntN(len(ids))]}
	}

	results := make(chan asyncOutcome, plan.tasks)
	var wg sync.WaitGroup
	submit := func(i int, sub submission) {
		defer wg.Done()
		// The host's answer to the pre-tool-use question (read:) comes
		// just before the finish: a plugin whose host is paused stops
		// there.
		prompt := fmt.Sprintf("mark:%s=start;sleep:%dms;read:pkg/%s/y.go;mark:%s=finish;pid", l, sub.work.Milliseconds(), sub.pkg, l)
		// Through the daemon's client, not the CLI: the CLI runs a task
		// in its own process when no daemon answers (a host killed), and
		// would hold the host's data directory.
		var r asyncOutcome
		sock := config.Server{}.SocketPath(c.hosts[sub.to].dataDir)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cl, err := client.Dial(ctx, client.Options{Socket: sock})
		if err == nil {
			r.o, err = cl.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: prompt, Hints: sdk.Hints{Directories: []string{"pkg/" + sub.pkg}}})
			cl.Close()
		}
		if err != nil {
			r.o, r.out = nil, fmt.Sprintf("task %d to %s: %v", i, sub.to, err)
		}
		results <- r
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, sub := range subs {
			wg.Add(1)
			go submit(i, sub)
			time.Sleep(sub.gap)
		}
	}()

	// The faults, while the tasks run: one at a time, each healed
	// before the next.
	tally := nemesisTally{tasks: plan.tasks, byKind: map[string]int{}}
	for _, f := range faults {
		time.Sleep(f.gap)
		h := c.hosts[f.id]
		t.Logf("fault: %s %s for %s", f.kind, f.id, f.hold)
		tally.faults++
		tally.byKind[f.kind]++
		switch f.kind {
		case "pause":
			h.pause(t)
			time.Sleep(f.hold)
			h.resume(t)
		case "kill":
			h.kill9(t)
			_, _ = h.cmd.Process.Wait()
			time.Sleep(f.hold / 4)
			h.start(t)
		case "etcd":
			c.etcd.Stop()
			time.Sleep(f.hold)
			c.etcd.Start()
		case "cut":
			c.proxies[f.id].cut()
			time.Sleep(f.hold)
			c.proxies[f.id].heal()
		}
	}
	wg.Wait()
	close(results)

	// The completions etcd holds, by task.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.etcd.ClientURL.String()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, cluster.CompletionsPrefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	completed := map[string]cluster.Completion{}
	for _, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), cluster.CompletionsPrefix)
		cm, err := cluster.DecodeCompletion(key, kv.Value)
		if err != nil {
			t.Errorf("completion %s: %v", key, err)
			continue
		}
		completed[key] = cm
	}

	// By task ID: the PIDs that finished it (the ledger), and the PIDs
	// whose result was accepted: the submitter's, and etcd's completion.
	finished := map[string]map[string]bool{}
	accepted := map[string]map[string]bool{}
	acked := map[string]string{}
	add := func(m map[string]map[string]bool, task, pid string) {
		if m[task] == nil {
			m[task] = map[string]bool{}
		}
		m[task][pid] = true
	}
	for _, ln := range l.lines(t) {
		if ln.what == "finish" {
			add(finished, ln.task, ln.pid)
		}
	}
	for r := range results {
		if r.o == nil {
			t.Logf("not acknowledged: %s", r.out)
			continue
		}
		tally.acked++
		if r.o.Decision.Host != "" {
			tally.remote++
		}
		if len(r.o.Decision.Attempts) > 1 {
			t.Logf("task %s took %d attempts: %+v", r.o.TaskID, len(r.o.Decision.Attempts), r.o.Decision.Attempts)
		}
		pid := strings.TrimSpace(r.o.Result.Output)
		acked[r.o.TaskID] = pid
		add(accepted, r.o.TaskID, pid)
	}
	for task, cm := range completed {
		if cm.Result.Outcome != nil {
			tally.forwarded++
			add(accepted, task, strings.TrimSpace(cm.Result.Outcome.Result.Output))
		}
	}
	for task, pid := range acked {
		if !finished[task][pid] {
			t.Errorf("task %s: acknowledged with the result of PID %s, whose finish the ledger does not hold (lost or made up)", task, pid)
		}
	}
	for task, pids := range accepted {
		if len(pids) > 1 {
			tally.doubles++
			t.Errorf("task %s completed twice: the results of PIDs %v were accepted", task, pids)
		}
	}
	for task, pids := range finished {
		for pid := range pids {
			if !accepted[task][pid] {
				tally.stale++
				t.Logf("task %s: PID %s finished, its result not delivered (refused as stale, or its submitter's host gone)", task, pid)
			}
		}
	}
	// Every host is back and sees the others.
	for _, id := range ids {
		c.hosts[id].until(t, "all three hosts", func(hs hearth.Members) bool { return len(hs.Hosts) == 3 })
	}
	t.Logf("seed %d: %d faults, %d of %d tasks acknowledged (%d ran on another host), %d completions in etcd, %d double completions, %d finished, not delivered",
		seed, tally.faults, tally.acked, tally.tasks, tally.remote, tally.forwarded, tally.doubles, tally.stale)
	return tally
}

// proxy is what the other hosts reach a host through: cut, it drops the
// connections it carries and refuses new ones, as a failed link or a
// firewall would; the host's own link to etcd is untouched.
type proxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func newProxy(t testing.TB, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	done := make(chan struct{})
	go p.accept(done)
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		<-done
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept(done chan struct{}) {
	defer close(done)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			in.Close()
			continue
		}
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
			p.mu.Lock()
			delete(p.conns, dst)
			delete(p.conns, src)
			p.mu.Unlock()
		}
		go pipe(in, out)
		go pipe(out, in)
	}
}

// cut drops every connection and refuses new ones until heal.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as a failed link's peer sees it
		}
		c.Close()
	}
}

func (p *proxy) heal() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

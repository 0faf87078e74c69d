package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/sdk"
)

// sseEvent is one server-sent event: its type ("event", "sessions",
// "missed", "dropped") and its data.
type sseEvent struct {
	kind, data string
}

// readSSE parses server-sent events from r and sends each on out until
// the stream ends; it returns the error that ended it (nil at EOF).
// Comments (": still here") are not events.
func readSSE(r io.Reader, out chan<- sseEvent) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var e sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if e.kind != "" || e.data != "" {
				out <- e
			}
			e = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			e.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			e.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return sc.Err()
}

// openEvents opens /api/events on d's HTTP side and returns the response
// once the stream is subscribed (the server writes its first line after
// subscribing). With a small readBuffer, the client's kernel holds little
// of what the server sends: a client that does not read is behind at
// once.
func openEvents(t *testing.T, ctx context.Context, d *daemon, readBuffer int) (*http.Response, *bufio.Reader) {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil && readBuffer > 0 {
			err = c.(*net.TCPConn).SetReadBuffer(readBuffer)
		}
		return c, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.l.HTTP+"/api/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/events: %s", resp.Status)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != ": hearth events\n" {
		t.Fatalf("the event stream began with %q, %v; want its comment", line, err)
	}
	return resp, br
}

// TestEventStreamDropsASubscriberThatFallsBehind: an event-stream
// subscriber that stops reading is dropped once it has missed more than
// the stream allows (issue 13: 50 silent subscribers grew the daemon by
// 210 MB), and is told so: once it reads again, the last thing on its
// stream is a "dropped" event, and the stream ends. Meanwhile the host
// publishes at its own pace, a subscriber that reads gets every event in
// order, and the daemon answers.
func TestEventStreamDropsASubscriberThatFallsBehind(t *testing.T) {
	// Well past what the stalled subscriber can hold: the server's
	// buffer (256), its socket's send buffer and the client's receive
	// buffer, and the 1,024 missed events after which it is dropped.
	const total, batch = 2000, 100
	// The stalled stream's write waits for as long as publishing takes
	// (see below), not sseWrite: under load that can pass 10 s.
	api.HoldStalledStreams(t, 10*time.Minute)
	d := claudeCodeDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Each denial of a .env read is one guard.fired event.
	ref := hearth.ExternalRef{Agent: "claude-code", Session: ccSession, Workspace: "/home/dev/shop"}
	call := sdk.ToolCall{Tool: "Read", Kind: sdk.KindRead, Paths: []string{"/home/dev/shop/.env"}}
	deny := func() {
		if v, err := d.h.CheckExternalToolUse(ctx, ref, call); err != nil || v.Allow {
			t.Fatalf("a read of .env: %+v, %v; want it denied", v, err)
		}
	}
	// The first denial attaches the session; the streams begin once its
	// events are out, so that all of them see the same ones.
	probe, err := d.h.Subscribe(ctx, hearth.EventFilter{ToolUses: true, Buffer: 16})
	if err != nil {
		t.Fatal(err)
	}
	deny()
	for e := range probe.Events() {
		if e.Kind == hearth.EventGuardFired {
			break
		}
	}
	probe.Close()

	stalled, stalledBody := openEvents(t, ctx, d, 4<<10)
	_, readingBody := openEvents(t, ctx, d, 0)
	reading := make(chan sseEvent, batch)
	readingDone := make(chan error, 1)
	go func() {
		readingDone <- readSSE(readingBody, reading)
		close(reading)
	}()
	// What the host published, in its order: the reading stream must
	// show exactly this.
	want, err := d.h.Subscribe(ctx, hearth.EventFilter{ToolUses: true, Buffer: total + 16})
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()

	// The host publishes every event while one stream is stalled. Each
	// batch waits for the reading stream to have it, so that the reading
	// one is never behind: the host does not wait for the stalled one.
	var got []sseEvent
	start := time.Now()
	for sent := 0; sent < total; {
		for range batch {
			deny()
		}
		sent += batch
		for len(got) < sent {
			select {
			case e, ok := <-reading:
				if !ok {
					t.Fatalf("the reading stream ended after %d of %d events: %v", len(got), sent, <-readingDone)
				}
				got = append(got, e)
			case <-ctx.Done():
				t.Fatalf("the reading stream has %d of %d events", len(got), sent)
			}
		}
	}

	t.Logf("published %d events in %v", total, time.Since(start))
	// The daemon answers, over HTTP and the socket, while the stalled
	// stream has not read a byte.
	if body := httpGet(t, "http://"+d.l.HTTP+"/healthz", ""); body != "ok\n" {
		t.Errorf("healthz: %q", body)
	}
	httpGet(t, "http://"+d.l.HTTP+"/api/snapshot", d.token)
	if _, err := d.c.Status(ctx); err != nil {
		t.Errorf("status over the socket: %v", err)
	}

	// The reading stream saw every event, in the host's order, and
	// nothing else.
	var published []string
	for len(published) < total {
		select {
		case e := <-want.Events():
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			published = append(published, string(b))
		default:
			t.Fatalf("the host published %d events; want %d", len(published), total)
		}
	}
	for i, e := range got {
		if e.kind != "event" || e.data != published[i] {
			t.Fatalf("reading stream, event %d: %s %s; want event %s", i, e.kind, e.data, published[i])
		}
	}

	// The stalled stream, read now: a prefix of the events, then
	// "dropped", then the end. Its handler has been blocked in a write
	// since the first few hundred events. A daemon gives up on such a
	// write after sseWrite (10 s), cutting the stream without the
	// message; publishing 2,000 events takes 1 to 4 s here under -race,
	// but more on a loaded machine, so this test holds the write instead.
	rest := make(chan sseEvent, total+16)
	// A stream that is never dropped never ends: bound the wait.
	stop := time.AfterFunc(30*time.Second, func() { stalled.Body.Close() })
	defer stop.Stop()
	if err := readSSE(stalledBody, rest); err != nil {
		t.Fatalf("the stalled stream ended with %v after %d events; want its end after the drop message", err, len(rest))
	}
	stalled.Body.Close()
	close(rest)
	var seen []sseEvent
	for e := range rest {
		seen = append(seen, e)
	}
	if len(seen) == 0 {
		t.Fatal("the stalled stream got nothing; want events and then the drop message")
	}
	last := seen[len(seen)-1]
	var drop struct {
		Missed uint64 `json:"missed"`
		Reason string `json:"reason"`
	}
	if last.kind != "dropped" || json.Unmarshal([]byte(last.data), &drop) != nil || drop.Missed <= 1024 || !strings.Contains(drop.Reason, "reconnect") {
		t.Fatalf("the stalled stream ended with %s %s; want dropped, with more than 1024 missed and a reason that says to reconnect", last.kind, last.data)
	}
	for i, e := range seen[:len(seen)-1] {
		if e.kind != "event" || e.data != published[i] {
			t.Fatalf("stalled stream, event %d: %s %s; want event %s", i, e.kind, e.data, published[i])
		}
	}
	if n := uint64(len(seen) - 1); n+drop.Missed > total {
		t.Errorf("the stalled stream got %d events and missed %d: more than the %d published", n, drop.Missed, total)
	}
	t.Logf("the stalled stream got %d of %d events before it was dropped, having missed %d", len(seen)-1, total, drop.Missed)
}

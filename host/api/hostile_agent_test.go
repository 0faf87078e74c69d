package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
)

// TestAgentsBadNumbersReachTheStream: an agent (a real plugin process)
// that reports progress with a fraction and a cost that are not finite
// numbers (NaN, ±Inf) or out of range: the event still reaches the
// dashboard's stream (/api/events, JSON, which has no NaN nor Inf: the
// event was dropped without a word), its fraction within [0, 1] and its
// cost a finite number of at least 0.
func TestAgentsBadNumbersReachTheStream(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{DataDir: t.TempDir(), Agents: []*config.Agent{testAgent("coder")}})
	for _, bad := range []string{"NaN", "+Inf", "-Inf", "-2", "7"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.l.HTTP+"/api/events", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+d.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		if _, err := r.ReadString('\n'); err != nil { // the subscription exists
			t.Fatal(err)
		}
		res, err := d.c.Submit(context.Background(), hearth.Task{Agent: "coder", Prompt: "cost:" + bad + ";progress:" + bad + ";echo:done"})
		if err != nil {
			t.Fatal(err)
		}
		var progress *hearth.Event
		var seen []string
		for progress == nil {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: the stream ended before the task's progress or end: %v; it said:\n%s", bad, err, strings.Join(seen, ""))
			}
			seen = append(seen, line)
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var e hearth.Event
			if json.Unmarshal([]byte(data), &e) != nil || e.Task != res.TaskID {
				continue
			}
			if e.Kind == hearth.EventTaskProgress {
				progress = &e
			} else if e.Kind == hearth.EventTaskSucceeded {
				t.Fatalf("%s: the task ended and its progress never reached the stream", bad)
			}
		}
		resp.Body.Close()
		if f := progress.Fraction; math.IsNaN(f) || f < 0 || f > 1 {
			t.Errorf("%s: progress %v", bad, f)
		}
		if c := progress.Cost; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			t.Errorf("%s: cost %v", bad, c)
		}
	}
}

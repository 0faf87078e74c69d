package api_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/store"
)

// hostileBars reads, for every segment the page draws, whether it lies
// within its bar, its computed background image and colour, and whether
// any markup of a factor's name became an element or ran.
const hostileBars = `JSON.stringify({
  pwned: window.__pwned === 1,
  imgs: document.querySelectorAll("#decisions img, #factor-legend img").length,
  segs: [...document.querySelectorAll("#decisions .stack .seg")].map((s) => {
    const bar = s.parentElement.getBoundingClientRect(), r = s.getBoundingClientRect(), cs = getComputedStyle(s);
    return { task: s.closest("li").dataset.task, factor: s.dataset.factor || null, left: r.left - bar.left, right: r.right - bar.left,
      bar: bar.width, image: cs.backgroundImage };
  }),
})`

// TestDashboardSurvivesHostileDecisions: decisions as an old, corrupt or
// hostile record may hold them, written to the store before a real
// daemon starts, drawn in Chromium. Every form of a bad share (NaN, +Inf,
// -Inf, negative, larger than the bar, 1e308) and of a bad factor name
// (CSS that would set a background image, markup that would run,
// names of JavaScript's own properties): the snapshot still reads as
// JSON (one record with a NaN made /api/snapshot an empty 200, and the
// page showed nothing at all), no segment is drawn outside its bar,
// no name becomes CSS or markup.
func TestDashboardSurvivesHostileDecisions(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(shortTempDir(t), "data")
	st, err := store.Open(dir, store.Write, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := func(name string, share float64) hearth.Factor {
		return hearth.Factor{Name: name, Weight: 0.2, Score: 1, Applied: true, Share: share}
	}
	hostile := map[string][]hearth.Factor{
		"t-nan":      {f("directory", math.NaN()), f("file", 0.3)},
		"t-inf":      {f("directory", math.Inf(1)), f("file", 0.3)},
		"t-neg-inf":  {f("directory", math.Inf(-1)), f("file", 0.3)},
		"t-negative": {f("directory", -0.5), f("file", 0.9)},
		"t-wide":     {f("directory", 0.7), f("file", 0.9)},
		"t-huge":     {f("directory", 1e308), f("file", 1e308)},
		"t-names": {
			f("a;background:url(http://127.0.0.1:1/x)", 0.1),
			f("</span><img src=x onerror=window.__pwned=1>", 0.1),
			f("x) ;background-image:url(http://127.0.0.1:1/y", 0.1),
			f("__proto__", 0.1), f("constructor", 0.1), f("", 0.1),
		},
	}
	earlier := time.Now().Add(-time.Minute)
	i := 0
	for task, factors := range hostile {
		d := hearth.Decision{Task: task, Agent: "coder", Action: hearth.ActionReused, Session: "s-" + task, Threshold: 0.6, Score: 0.8,
			Candidates: []hearth.Candidate{{Session: "s-" + task, Eligible: true, Capacity: 1, Total: 0.8, Factors: factors}}}
		_, pending := st.Append(hearth.Event{Kind: hearth.EventDecision, Time: earlier.Add(time.Duration(i) * time.Second), Agent: d.Agent, Task: d.Task, Decision: &d})
		if err := pending.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		i++
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	d := startDaemon(t, &config.Config{DataDir: dir, Agents: []*config.Agent{testAgent("coder")}})
	var snap api.Snapshot
	if body := httpGet(t, "http://"+d.l.HTTP+"/api/snapshot", d.token); json.Unmarshal([]byte(body), &snap) != nil {
		t.Fatalf("/api/snapshot is not a snapshot: %q", body)
	}
	p := page{t, browser(t)}
	signInPage(t, p, d)
	for task := range hostile {
		p.wait("the bar of "+task, `#decisions li[data-task="`+task+`"] .stack`)
	}
	var got struct {
		Pwned bool
		Imgs  int
		Segs  []struct {
			Task, Factor, Image string
			Left, Right, Bar    float64
		}
	}
	if js := p.eval(hostileBars); json.Unmarshal([]byte(js), &got) != nil {
		t.Fatalf("the page's bars: %s", js)
	}
	if got.Pwned || got.Imgs > 0 {
		t.Errorf("a factor's name became markup: script ran %v, %d images", got.Pwned, got.Imgs)
	}
	for _, s := range got.Segs {
		if s.Left < -0.5 || s.Right > s.Bar+0.5 || s.Right < s.Left {
			t.Errorf("%s: segment %q drawn from %.1f to %.1f px of a bar %.1f px wide", s.Task, s.Factor, s.Left, s.Right, s.Bar)
		}
		if s.Image != "none" && !strings.HasPrefix(s.Image, "none") {
			t.Errorf("%s: segment %q has the background image %s", s.Task, s.Factor, s.Image)
		}
	}
}

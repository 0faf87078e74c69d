package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/sdk"
)

// drawnBars reads every candidate's bar the page shows, in one
// evaluation (so that no redraw falls between two reads): per decision
// and candidate, the bar's width in pixels and each segment's factor
// (null for a total drawn unsplit), share and width as laid out.
const drawnBars = `JSON.stringify([...document.querySelectorAll("#decisions li")].flatMap((li) =>
  [...li.querySelectorAll(".stack")].map((st) => ({
    task: li.dataset.task, candidate: st.dataset.candidate, width: st.getBoundingClientRect().width,
    segs: [...st.querySelectorAll(".seg")].map((s) => ({
      factor: s.dataset.factor === undefined ? null : s.dataset.factor,
      share: Number(s.dataset.share), width: s.getBoundingClientRect().width })) }))))`

type drawnBar struct {
	Task, Candidate string
	Width           float64
	Segs            []struct {
		Factor *string
		Share  float64
		Width  float64
	}
}

// TestDashboardDrawsTheFactorsOfTheList: a decision's bar comes from its
// factor list (hearth.Factor) alone: one segment per factor of the
// JSON's list, in its order and named by it, as wide as its share, the
// widths adding up to the total's. So a factor the page never heard of
// ("live", as a later matcher, or another host's, lists it) is drawn
// like the seed's five, and the legend names it. The decisions are the
// matcher's own (two real placements on a real daemon) and two written
// to the data directory before the daemon starts, through the store: one
// with the unknown factor, one recorded before hearth kept shares, whose
// total the page draws whole, unsplit.
func TestDashboardDrawsTheFactorsOfTheList(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(shortTempDir(t), "data")
	st, err := store.Open(dir, store.Write, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	live := []hearth.Factor{
		{Name: "directory", Weight: 0.3, Score: 1, Applied: true, Share: 0.3 / 0.9},
		{Name: "file", Weight: 0.2, Score: 0.5, Applied: true, Share: 0.1 / 0.9},
		{Name: "tech", Weight: 0.1, Score: 0},
		{Name: "live", Weight: 0.4, Score: 1, Applied: true, Share: 0.4 / 0.9},
	}
	older := []hearth.Factor{ // no shares: recorded before hearth kept them
		{Name: "directory", Weight: 0.3, Score: 1, Applied: true},
		{Name: "freshness", Weight: 0.15, Score: 0.5, Applied: true},
	}
	earlier := time.Now().Add(-time.Minute)
	for i, d := range []hearth.Decision{
		{Task: "t-older", Agent: "coder", Action: hearth.ActionReused, Session: "s-2", Threshold: 0.6, Score: 0.8,
			Candidates: []hearth.Candidate{{Session: "s-2", Eligible: true, Capacity: 1, Total: 0.8, Factors: older}}},
		{Task: "t-live", Agent: "coder", Action: hearth.ActionReused, Session: "s-1", Threshold: 0.6, Score: 0.8 / 0.9,
			Candidates: []hearth.Candidate{{Session: "s-1", Eligible: true, Capacity: 1, Total: 0.8 / 0.9, Factors: live}}},
	} {
		_, pending := st.Append(hearth.Event{Kind: hearth.EventDecision, Time: earlier.Add(time.Duration(i) * time.Second), Agent: d.Agent, Task: d.Task, Decision: &d})
		if err := pending.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	p := page{t, browser(t)}
	d := startDaemon(t, &config.Config{DataDir: dir, Agents: []*config.Agent{testAgent("coder")}})
	signInPage(t, p, d)
	task := hearth.Task{Agent: "coder", Prompt: "read:src/cart/cart.go", Hints: sdk.Hints{Files: []string{"src/cart/cart.go"}, Technologies: []string{"go"}}}
	first, err := d.c.Submit(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	second, err := d.c.Submit(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	p.wait("the reuse's bar", fmt.Sprintf(`#decisions li[data-task=%q] .stack[data-candidate=%q]`, second.TaskID, first.Session))

	var snap api.Snapshot
	if body := httpGet(t, "http://"+d.l.HTTP+"/api/snapshot", d.token); json.Unmarshal([]byte(body), &snap) != nil {
		t.Fatalf("/api/snapshot is not a snapshot: %s", body)
	}
	var bars []drawnBar
	if js := p.eval(drawnBars); json.Unmarshal([]byte(js), &bars) != nil {
		t.Fatalf("the page's bars: %s", js)
	}
	drawn := map[string]drawnBar{}
	for _, b := range bars {
		drawn[b.Task+"/"+b.Candidate] = b
	}
	tasks := map[string]bool{}
	for _, e := range snap.Decisions {
		tasks[e.Decision.Task] = true
		for _, c := range e.Decision.Candidates {
			b, ok := drawn[e.Decision.Task+"/"+c.Session]
			if !ok {
				t.Errorf("%s: no bar for candidate %s", e.Decision.Task, c.Session)
				continue
			}
			checkBar(t, e.Decision.Task, c, b)
		}
	}
	for _, want := range []string{"t-older", "t-live", first.TaskID, second.TaskID} {
		if !tasks[want] {
			t.Errorf("the snapshot has no decision of %s", want)
		}
	}
	if b := drawn["t-live/s-1"]; len(b.Segs) != 4 || b.Segs[3].Factor == nil || *b.Segs[3].Factor != "live" || b.Segs[3].Width < 1 {
		t.Errorf("the factor the page never heard of: drawn %+v; want its own segment, wide", b.Segs)
	}
	p.waitText("the legend naming every factor shown", "#factor-legend", "directory", "file", "tech", "freshness", "load", "live")
	p.screenshot("HEARTH_SCREENSHOT_FACTORS") // HEARTH_SCREENSHOT_FACTORS=factors.png keeps it
}

// checkBar holds a candidate's drawn bar to its factor list: one segment
// per factor, named by it, each as wide as its share, adding up to the
// total's width; or, for a decision recorded without shares, the total
// drawn whole as one unnamed segment.
func checkBar(t *testing.T, task string, c hearth.Candidate, b drawnBar) {
	t.Helper()
	px := func(v float64) float64 { return v * b.Width }
	var sum, widths float64
	for _, f := range c.Factors {
		sum += f.Share
	}
	for _, s := range b.Segs {
		widths += s.Width
	}
	// Layout rounds each segment to the pixel grid, a fraction each.
	slack := 0.5 * float64(len(b.Segs)+1)
	if math.Abs(widths-px(c.Total)) > slack {
		t.Errorf("%s, %s: segments %.1f px wide in all, the total %.3f of %.1f px is %.1f px", task, c.Session, widths, c.Total, b.Width, px(c.Total))
	}
	if sum == 0 && c.Total > 0 {
		if len(b.Segs) != 1 || b.Segs[0].Factor != nil {
			t.Errorf("%s, %s, recorded without shares: drawn %+v; want the total as one unnamed segment", task, c.Session, b.Segs)
		}
		return
	}
	if len(b.Segs) != len(c.Factors) {
		t.Fatalf("%s, %s: %d segments for %d factors (%+v)", task, c.Session, len(b.Segs), len(c.Factors), b.Segs)
	}
	for i, f := range c.Factors {
		s := b.Segs[i]
		if s.Factor == nil || *s.Factor != f.Name || s.Share != f.Share || math.Abs(s.Width-px(f.Share)) > 1 {
			t.Errorf("%s, %s: segment %d drawn %+v; want %s, share %v, %.1f px", task, c.Session, i, s, f.Name, f.Share, px(f.Share))
		}
	}
}

package store

import (
	"context"
	"reflect"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/store/internal/storepb"
	"github.com/hearth-dev/hearth/internal/protoconv"
)

// TestDecisionFactors: a decision's factors are kept whole (their shares
// too), names and weights once per decision, a factor beyond the five the record has
// fields for included; the five are also written to those fields, for
// an older hearth reading the same data directory.
func TestDecisionFactors(t *testing.T) {
	s := MustOpen(t, t.TempDir())
	factors := func(scores ...float64) []hearth.Factor {
		names := []string{"directory", "file", "tech", "freshness", "load", "young"}
		weights := []float64{0.3, 0.2, 0.2, 0.1, 0.1, 0.1}
		out := make([]hearth.Factor, len(names))
		for i := range names {
			out[i] = hearth.Factor{Name: names[i], Weight: weights[i], Score: scores[i], Applied: i != 2}
			if out[i].Applied {
				out[i].Share = weights[i] * scores[i]
			}
		}
		return out
	}
	d := &hearth.Decision{Task: "t1", Session: "a", Action: hearth.ActionReused, Score: 0.9, Candidates: []hearth.Candidate{
		{Session: "a", Eligible: true, Load: 1, Capacity: 2, Total: 0.9, Factors: factors(1, 0.5, 0, 0.9, 0.5, 0.25)},
		{Session: "b", Dormant: true, Total: 0.1, Factors: factors(0, 0.1, 0, 0, 1, 1)},
	}}
	if err := appendEvent(s, hearth.Event{Kind: "decision", Task: d.Task, Decision: d}).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	all, err := s.Decisions(1)
	if err != nil || len(all) != 1 {
		t.Fatalf("decisions: got %v, %v", all, err)
	}
	if got := all[0].Decision.Candidates; !reflect.DeepEqual(got, d.Candidates) {
		t.Errorf("candidates read back:\n got %+v\nwant %+v", got, d.Candidates)
	}

	// A record written by a hearth that listed factors but kept no
	// shares reads with every share 0 (and the rest as it was).
	pre := decisionToPB(d)
	for _, c := range pre.GetRanked() {
		c.Shares = nil
	}
	for i, c := range decisionFromPB(pre).Candidates {
		for j, f := range c.Factors {
			want := d.Candidates[i].Factors[j]
			want.Share = 0
			if f != want {
				t.Errorf("from a record without shares, %s's factor %d: got %+v, want %+v", c.Session, j, f, want)
			}
		}
	}

	r := decisionToPB(d).GetRanked()[0]
	if r.GetDirectory() != 1 || r.GetFile() != 0.5 || r.GetFreshness() != 0.9 || r.GetLoad() != 0.5 || r.GetApplied() != 1|2|8|16 {
		t.Errorf("the five's own fields: got %+v", r)
	}
}

// TestDecisionLegacyRecord: a record written before factors were a list
// reads as the five factors, applied as its bits say.
func TestDecisionLegacyRecord(t *testing.T) {
	old := &storepb.Decision{Task: "t", Session: "a", Action: "reused", Ranked: []*storepb.Candidate{
		{Id: "a", Directory: 0.1, File: 0.2, Tech: 0.3, Freshness: 0.4, Load: 0.5, Applied: 1 | 16, Total: 0.7},
	}}
	got := decisionFromPB(old).Candidates[0].Factors
	if len(got) != len(protoconv.LegacyFactors) {
		t.Fatalf("got %+v, want the five", got)
	}
	for i, f := range got {
		want := hearth.Factor{Name: protoconv.LegacyFactors[i], Score: float64(i+1) / 10, Applied: i == 0 || i == 4}
		if f != want {
			t.Errorf("factor %d: got %+v, want %+v", i, f, want)
		}
	}
}

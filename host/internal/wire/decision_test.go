package wire

import (
	"reflect"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/internal/protoconv"
)

// TestDecisionRoundTrip: every field of a decision survives the wire,
// its candidates' factors included, filled by reflection so that a field
// added to hearth.Decision, hearth.Candidate or hearth.Factor and not
// carried fails here. One factor is not among the five the message has
// fields for: a factor added to the matcher needs no change to the wire.
func TestDecisionRoundTrip(t *testing.T) {
	var d hearth.Decision
	fill(t, reflect.ValueOf(&d).Elem(), new(int))
	d.Candidates[0].Factors = append(d.Candidates[0].Factors,
		hearth.Factor{Name: "directory", Weight: 0.3, Score: 0.5, Applied: true, Share: 0.15},
		hearth.Factor{Name: "young", Weight: 0.1, Score: 0.25})
	if got := DecisionOf(Decision(&d)); !reflect.DeepEqual(got, d) {
		t.Errorf("decision through the wire:\n got %+v\nwant %+v", got, d)
	}
}

// TestDecisionLegacyFactors: a candidate carries the seed's five factors
// in their old fields too, for clients older than the list, and one from
// a daemon older than the list decodes into the five factors.
func TestDecisionLegacyFactors(t *testing.T) {
	d := hearth.Decision{Candidates: []hearth.Candidate{{Session: "s", Factors: []hearth.Factor{
		{Name: "directory", Score: 0.1, Applied: true}, {Name: "file", Score: 0.2}, {Name: "tech", Score: 0.3},
		{Name: "freshness", Score: 0.4, Applied: true}, {Name: "load", Score: 0.5, Applied: true}, {Name: "young", Score: 0.6, Applied: true},
	}}}}
	m := Decision(&d).GetCandidates()[0]
	if m.GetDirectory() != 0.1 || m.GetFile() != 0.2 || m.GetTech() != 0.3 || m.GetFreshness() != 0.4 || m.GetLoadScore() != 0.5 ||
		!reflect.DeepEqual(m.GetApplied(), []string{"directory", "freshness", "load", "young"}) {
		t.Errorf("legacy fields: got %+v", m)
	}
	old := &apipb.Decision{Candidates: []*apipb.Candidate{{Session: "s", Directory: 0.1, File: 0.2, Tech: 0.3, Freshness: 0.4, LoadScore: 0.5, Applied: []string{"directory", "load"}}}}
	got := DecisionOf(old).Candidates[0].Factors
	if len(got) != len(protoconv.LegacyFactors) {
		t.Fatalf("from an old daemon: got %+v, want the five", got)
	}
	for i, f := range got {
		want := hearth.Factor{Name: protoconv.LegacyFactors[i], Score: float64(i+1) / 10, Applied: i == 0 || i == 4}
		if f != want {
			t.Errorf("factor %d from an old daemon: got %+v, want %+v", i, f, want)
		}
	}
}

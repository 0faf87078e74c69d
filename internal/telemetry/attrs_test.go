package telemetry_test

import (
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// TestDecisionAttrsFactors: a placement span names the chosen session's
// applied factors, each with its score and its share of the total, by
// the names the decision's list gives them (one the code never heard
// of included); a factor that did not apply is left out.
func TestDecisionAttrsFactors(t *testing.T) {
	d := &hearth.Decision{Action: hearth.ActionReused, Session: "s", Score: 0.7, Candidates: []hearth.Candidate{
		{Session: "other", Total: 0.2, Factors: []hearth.Factor{{Name: "directory", Score: 1, Applied: true, Share: 0.2}}},
		{Session: "s", Total: 0.7, Factors: []hearth.Factor{
			{Name: "directory", Weight: 0.5, Score: 0.8, Applied: true, Share: 0.4},
			{Name: "tech", Weight: 0.2, Score: 0},
			{Name: "young", Weight: 0.3, Score: 1, Applied: true, Share: 0.3},
		}},
	}}
	got := map[string]float64{}
	for _, kv := range telemetry.DecisionAttrs(d) {
		got[string(kv.Key)] = kv.Value.AsFloat64()
	}
	for k, want := range map[string]float64{
		telemetry.AttrFactor + "directory": 0.8, telemetry.AttrShare + "directory": 0.4,
		telemetry.AttrFactor + "young": 1, telemetry.AttrShare + "young": 0.3,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s: got %v (present %t), want %v", k, v, ok, want)
		}
	}
	for _, k := range []string{telemetry.AttrFactor + "tech", telemetry.AttrShare + "tech"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s: present for a factor that did not apply", k)
		}
	}
}

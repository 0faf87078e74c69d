package hearth_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hearth-dev/hearth"
)

// TestCandidateJSON: a candidate's JSON carries its factors as a list,
// and, for readers of the JSON from before the list (the dashboard,
// scripts over `hearth decisions --json`), each factor's score under its
// name at the top level (load's as load_score) and the applied names;
// each factor of the list has its share; it reads back as it was.
func TestCandidateJSON(t *testing.T) {
	c := hearth.Candidate{Session: "s", Eligible: true, Load: 1, Capacity: 2, Total: 0.75, Factors: []hearth.Factor{
		{Name: "directory", Weight: 0.3, Score: 1, Applied: true, Share: 0.6},
		{Name: "tech", Weight: 0.2, Score: 0},
		{Name: "load", Weight: 0.1, Score: 0.5, Applied: true, Share: 0.1},
		{Name: "young", Weight: 0.1, Score: 0.25, Applied: true, Share: 0.05},
	}}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var flat map[string]any
	if err := json.Unmarshal(b, &flat); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"session": "s", "load": 1.0, "capacity": 2.0, "total": 0.75,
		"directory": 1.0, "tech": 0.0, "load_score": 0.5, "young": 0.25,
		"applied": []any{"directory", "load", "young"},
	} {
		if !reflect.DeepEqual(flat[k], want) {
			t.Errorf("%s: got %v, want %v (in %s)", k, flat[k], want, b)
		}
	}
	// Each factor of the list says its share, 0 included.
	if fs, _ := flat["factors"].([]any); len(fs) != 4 || fs[0].(map[string]any)["share"] != 0.6 || fs[1].(map[string]any)["share"] != 0.0 {
		t.Errorf("factors: got %v, want each with its share (in %s)", flat["factors"], b)
	}
	var back hearth.Candidate
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("read back: got %+v, %v; want %+v", back, err, c)
	}
	if got := c.Score("load"); got != 0.5 {
		t.Errorf("Score(load): got %v", got)
	}
	if _, ok := c.Factor("file"); ok {
		t.Error("Factor(file): found one the candidate does not have")
	}
}

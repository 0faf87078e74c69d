package api

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWriteJSONNeverAnEmpty200: an answer that cannot be written as JSON
// (a NaN, an Inf) is a 500 whose JSON says why; one that can is the
// same bytes json.Encoder writes.
func TestWriteJSONNeverAnEmpty200(t *testing.T) {
	for _, v := range []any{math.NaN(), map[string]any{"share": math.Inf(1)}, []float64{1, math.Inf(-1)}} {
		w := httptest.NewRecorder()
		writeJSON(w, v)
		var body map[string]string
		if w.Code != http.StatusInternalServerError || json.Unmarshal(w.Body.Bytes(), &body) != nil || !strings.Contains(body["error"], "could not write its answer as JSON") {
			t.Errorf("%v: %d %q; want a 500 saying why", v, w.Code, w.Body)
		}
	}
	w := httptest.NewRecorder()
	writeJSON(w, map[string]float64{"share": 0.5})
	if w.Code != http.StatusOK || w.Body.String() != "{\"share\":0.5}\n" || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("a finite answer: %d %q %v", w.Code, w.Body, w.Header())
	}
}

package contextchain

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// customTemplate is a compact layout an operator might configure: one line
// per step, with the distance and what is missing.
const customTemplate = `<context task="{{.Task}}">
{{range .Steps}}<step name="{{.Name}}" task="{{.Task}}" version="{{.Version}}" distance="{{.Distance}}" at="{{.CreatedAt.Format "2006-01-02T15:04Z07:00"}}">
{{range .KeyDecisions}}decided: {{.}}
{{end}}{{range .PotentialGotchas}}watch out: {{.}}
{{end}}{{range .NewPatterns}}pattern: {{.}}
{{end}}{{with .ModifiedFiles}}files: {{join . " "}}
{{end}}</step>
{{end}}{{with .Missing}}<!-- no notes from: {{join . ", "}} -->
{{end}}{{with .Note}}<!-- {{.}} -->
{{end}}</context>
`

func TestGolden(t *testing.T) {
	tests := []struct {
		name  string
		opts  []Option
		chain func() (string, Graph, []Artifact)
	}{
		{"seed", nil, seedChain},
		{"transitive", nil, pipelineChain},
		{"truncated", []Option{WithBudget(700)}, pipelineChain},
		{"custom", []Option{WithTemplate(customTemplate)}, pipelineChain},
		{"custom_truncated", []Option{WithTemplate(customTemplate), WithBudget(600)}, pipelineChain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task, g, arts := tt.chain()
			res, err := mustNew(t, tt.opts...).Build(task, g, arts)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(res.Block), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v; run go test -update to create it", err)
			}
			if res.Block != string(want) {
				t.Errorf("block differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", file, res.Block, want)
			}
		})
	}
}

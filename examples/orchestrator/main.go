// Command orchestrator is an orchestrator in a few lines: it submits
// questions about the Go standard library to a running hearth daemon
// through the Go client, asks first where each would go, and shows the
// warm sessions it gets.
//
//	hearth serve &                     # in one terminal, or in the background
//	go run ./examples/orchestrator
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/sdk"
)

func main() {
	dataDir := flag.String("data-dir", "", "the data directory of the daemon to use (default: that of hearth serve without a config, here)")
	flag.Parse()
	ctx := context.Background()
	c, err := client.Dial(ctx, client.Options{DataDir: *dataDir})
	if err != nil {
		log.Fatalf("%v\nstart one first, from this directory: go run ./cmd/hearth serve", err)
	}
	defer c.Close()
	if _, err := tour(ctx, c, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// questions come in bursts per package, as an orchestrator's work does.
var questions = []struct{ prompt, dir string }{
	{"summary net/http", "net/http"},
	{"symbol net/http Server", "net/http"},
	{"imports net/http", "net/http"},
	{"summary encoding/json", "encoding/json"},
	{"symbol encoding/json Decoder", "encoding/json"},
	{"symbol net/http Client", "net/http"},
	{"imports encoding/json", "encoding/json"},
}

// tour asks the daemon's gotour agent each question, and returns how many
// ran on a warm session.
func tour(ctx context.Context, c *client.Client, w io.Writer) (reused int, err error) {
	for _, q := range questions {
		hints := sdk.Hints{Directories: []string{q.dir}, Technologies: []string{"go"}}
		// Place runs nothing: it says where the task would go, and why.
		plan, err := c.Place(ctx, "gotour", hints)
		if err != nil {
			return reused, err
		}
		start := time.Now()
		out, err := c.Submit(ctx, hearth.Task{Agent: "gotour", Prompt: q.prompt, Hints: hints})
		if err != nil {
			return reused, err
		}
		if out.Decision.Action == hearth.ActionReused {
			reused++
		}
		fmt.Fprintf(w, "%-30s %-10s %-16s %6s  (placement said: %s)\n", q.prompt, out.Decision.Action, out.Session,
			time.Since(start).Round(time.Millisecond), plan.Action)
	}
	fmt.Fprintf(w, "\n%d of %d questions ran on a warm session\n", reused, len(questions))
	return reused, nil
}

// Command hearth-fakeapi serves the project's scripted model (package
// internal/fakeapi) on a local address, so that examples that need a
// model API (examples/claude-fleet, examples/ask) run without a key and
// without the internet:
//
//	go run ./internal/fakeapi/cmd/hearth-fakeapi -listen 127.0.0.1:8089 -key fleet-key
//
// It prints its URL, then one line for each model request it answers
// (the API, the status, and the tokens as the fake counted them), until
// interrupted. Its model reads files only when the conversation does not
// already hold them: see the package's documentation.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hearth-dev/hearth/internal/fakeapi"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8089", "the address to serve on (loopback)")
	key := flag.String("key", "", "the API key it accepts (required)")
	flag.Parse()
	if *key == "" {
		fmt.Fprintln(os.Stderr, "hearth-fakeapi: -key is required: the key clients must send, such as -key fleet-key")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hearth-fakeapi: %v\n", err)
		os.Exit(1)
	}
	s := fakeapi.NewOn(ln, *key)
	defer s.Close()
	fmt.Println(s.URL)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	seen := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		reqs := s.Requests()
		for ; seen < len(reqs); seen++ {
			r := reqs[seen]
			fmt.Printf("%s %d: %d input, %d cached, %d cache write, %d output tokens\n", r.API, r.Status, r.Usage.Input, r.Usage.CachedInput, r.Usage.CacheWrite, r.Usage.Output)
		}
	}
}

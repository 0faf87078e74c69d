package otlptest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The test binary doubles as the receiver process.
const envProcess = "HEARTH_TEST_OTLPTEST_PROCESS"

func TestMain(m *testing.M) {
	if os.Getenv(envProcess) != "" {
		if err := ServeProcess(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestProcessCountsWhatItIsSent: a receiver in its own process takes
// OTLP/gRPC exports, says how many spans arrived, and ends when its
// stdin closes.
func TestProcessCountsWhatItIsSent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envProcess+"=1")
	p, err := StartProcess(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Received(); err != nil || n != 0 {
		t.Fatalf("before any export: %d spans, %v; want 0", n, err)
	}
	conn, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "a"}, {Name: "b"}, {Name: "c"}}}},
	}}}
	if _, err := coltracepb.NewTraceServiceClient(conn).Export(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Received(); err != nil || n != 3 {
		t.Fatalf("after exporting 3 spans: %d, %v", n, err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("the process ended %v, want exit 0 at the end of its stdin", cmd.ProcessState)
	}
}

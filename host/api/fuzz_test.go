package api_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/host/internal/apipb"
)

// FuzzRequests sends the API's handlers requests decoded from arbitrary
// bytes, as a client could: the first byte picks the method. Every
// answer is a reply or a gRPC status error with a code other than
// Unknown or Internal (a request is bad, or names what does not exist);
// nothing panics. Methods that would start plugins are left out: their
// request decoding is the same code as Place's.
func FuzzRequests(f *testing.F) {
	cfg := &config.Config{DataDir: filepath.Join(shortTempDir(f), "data"), Matcher: config.DefaultMatcher(),
		Agents: []*config.Agent{config.DefaultExternal("claude-code", config.ExternalClaudeCode)},
		Hooks:  config.Hooks{Agent: "claude-code", WhenUnreachable: config.HookAllow}}
	h, err := engine.New(engine.Options{Config: cfg})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = h.Close(context.Background()) })
	srv := api.NewServer(api.Options{Engine: h})

	seed := func(method byte, m proto.Message) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{method}, b...))
	}
	for _, file := range mustGlob(f, "../../examples/claude-code/payloads/*.json") {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		seed(0, &apipb.HookRequest{Kind: "claude-code", Payload: b})
	}
	seed(1, &apipb.PlaceRequest{Agent: "claude-code", Hints: &apipb.Hints{Files: []string{"/home/dev/shop/src/cart/cart.go"}, Directories: []string{"./src/", "../.."}}})
	seed(2, &apipb.ShowSessionRequest{Id: "3f1c2a9e-5d41-4b7e-9c0a-1e2f3a4b5c6d", Limit: -3})
	seed(3, &apipb.ShowRunRequest{Run: "build-", Outputs: true, Events: 1 << 30})
	seed(4, &apipb.RunEventsRequest{Run: "", Limit: -1})
	seed(5, &apipb.SubmitTaskRequest{Agent: "claude-code", Prompt: "x", Metadata: map[string]string{"": ""}})
	seed(6, &apipb.RunRef{Run: "x"})

	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		body := b[1:]
		switch b[0] % 7 {
		case 0:
			req := &apipb.HookRequest{}
			if proto.Unmarshal(body, req) != nil {
				return
			}
			_, err = srv.Hook(ctx, req)
		case 1:
			req := &apipb.PlaceRequest{}
			if proto.Unmarshal(body, req) != nil {
				return
			}
			_, err = srv.Place(ctx, req)
		case 2:
			req := &apipb.ShowSessionRequest{}
			if proto.Unmarshal(body, req) != nil {
				return
			}
			_, err = srv.ShowSession(ctx, req)
		case 3:
			req := &apipb.ShowRunRequest{}
			if proto.Unmarshal(body, req) != nil {
				return
			}
			_, err = srv.ShowRun(ctx, req)
		case 4:
			req := &apipb.RunEventsRequest{}
			if proto.Unmarshal(body, req) != nil {
				return
			}
			_, err = srv.RunEvents(ctx, req)
		case 5:
			req := &apipb.SubmitTaskRequest{}
			if proto.Unmarshal(body, req) != nil || req.GetAgent() != "claude-code" {
				return // a plugin agent would start a process
			}
			_, err = srv.SubmitTask(ctx, req)
		case 6:
			req := &apipb.RunRef{}
			if proto.Unmarshal(body, req) != nil {
				return
			}
			_, err = srv.CancelRun(ctx, req)
		}
		if err == nil {
			return
		}
		st, ok := status.FromError(err)
		if !ok || st.Code() == codes.Unknown || st.Code() == codes.Internal {
			t.Fatalf("request %x: error without a proper code: %v", b, err)
		}
	})
}

func mustGlob(t testing.TB, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s: %v", pattern, err)
	}
	return files
}

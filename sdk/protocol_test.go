package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/internal/agentpb"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// The tests below start real plugin processes (this test binary run
// again as TestHelperProcess) to check the negotiation of protocol
// versions between a host and a plugin built at different times.

// helperEnv selects what TestHelperProcess serves: "sdk" (an agent served
// with plugin.Serve, version 2), or "wire1" and "wire2" (a plugin written
// against the wire alone, served as version 1 or 2, that reports its tool
// use without an outcome as version-1 plugins did).
const helperEnv = "HEARTH_SDK_TEST_HELPER"

func TestHelperProcess(t *testing.T) {
	which := os.Getenv(helperEnv)
	if which == "" {
		return
	}
	switch which {
	case "sdk":
		plugin.Serve(&funcAgent{run: func(_ context.Context, tk sdk.Task, _ sdk.Callbacks) (sdk.Result, error) {
			return sdk.Result{Output: "v2 saw: " + tk.Prompt}, nil
		}})
	case "wire1", "wire2":
		v, _ := strconv.Atoi(which[len("wire"):])
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig:  goplugin.HandshakeConfig{ProtocolVersion: uint(v), MagicCookieKey: plugin.Handshake.MagicCookieKey, MagicCookieValue: plugin.Handshake.MagicCookieValue},
			VersionedPlugins: map[int]goplugin.PluginSet{v: {plugin.PluginName: wirePlugin{}}},
			GRPCServer:       goplugin.DefaultGRPCServer,
		})
	}
	os.Exit(0)
}

// startHelper starts the helper process serving which, as a host offering
// the given plugin sets, and returns its client.
func startHelper(t *testing.T, which string, handshake goplugin.HandshakeConfig, versions map[int]goplugin.PluginSet) *goplugin.Client {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+which)
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  handshake,
		VersionedPlugins: versions,
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     20 * time.Second,
		Logger:           hclog.NewNullLogger(),
	})
	t.Cleanup(c.Kill)
	return c
}

func dispense(t *testing.T, c *goplugin.Client) plugin.Remote {
	t.Helper()
	rpc, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rpc.Dispense(plugin.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(plugin.Remote)
}

// TestVersion1PluginStillWorks: a plugin built before version 2 gets the
// upstream context and feedback in its prompt, as it expects; its artifact
// is collected with Summarize; and its tool use without an outcome counts
// as done, as it meant.
func TestVersion1PluginStillWorks(t *testing.T) {
	c := startHelper(t, "wire1", plugin.Handshake, plugin.VersionedPlugins(nil, nil))
	remote := dispense(t, c)
	if remote.Protocol() != 1 {
		t.Fatalf("negotiated protocol %d, want 1", remote.Protocol())
	}
	ctx := context.Background()
	info, err := remote.Describe(ctx)
	if err != nil || info.Name != "wire" {
		t.Fatalf("Describe: got %+v, %v; want the plugin named wire", info, err)
	}
	rec := conformance.NewRecorder(nil)
	task := sdk.Task{
		ID: "t1", Prompt: "summary net/http",
		Upstream: []sdk.Upstream{{Task: "overview", Version: 1, Artifact: sdk.ContextArtifact{KeyDecisions: []string{"x"}}}},
		Context:  "# Context from Previous Steps\n- x\n",
		Feedback: "say more",
	}
	res, err := remote.Run(ctx, task, rec.For("t1"))
	if err != nil {
		t.Fatal(err)
	}
	wantPrompt := "# Context from Previous Steps\n- x\n\nsummary net/http\n\n# Feedback\nsay more\n"
	if res.Output != "wire saw: "+wantPrompt {
		t.Errorf("output: got %q, want the version-1 prompt %q", res.Output, wantPrompt)
	}
	if got := res.Artifact.KeyDecisions; len(got) != 1 || got[0] != "summarized t1" {
		t.Errorf("artifact: got %+v, want the one Summarize returned", res.Artifact)
	}
	uses := rec.ToolUses("t1")
	if len(uses) != 1 || uses[0].Outcome != sdk.OutcomeOK || uses[0].Kind != "" {
		t.Errorf("tool uses: got %+v, want one OK use with no kind", uses)
	}
}

// TestUnsetOutcomeIsRefusedInVersion2: a version-2 plugin that sends a
// tool use without an outcome (one not built with this SDK, which never
// sends it) has its report refused, and its task fails.
func TestUnsetOutcomeIsRefusedInVersion2(t *testing.T) {
	c := startHelper(t, "wire2", plugin.Handshake, plugin.VersionedPlugins(nil, nil))
	remote := dispense(t, c)
	if remote.Protocol() != 2 {
		t.Fatalf("negotiated protocol %d, want 2", remote.Protocol())
	}
	rec := conformance.NewRecorder(nil)
	_, err := remote.Run(context.Background(), sdk.Task{ID: "t1", Prompt: "p"}, rec.For("t1"))
	if err == nil || !strings.Contains(err.Error(), `tool use "Read" of task t1 has no outcome (OUTCOME_UNSPECIFIED)`) {
		t.Fatalf("got %v, want the report refused for its missing outcome", err)
	}
	if uses := rec.ToolUses("t1"); len(uses) != 0 {
		t.Errorf("the host recorded %+v; want nothing", uses)
	}
}

// TestHostSpeakingOnlyVersion1IsRefused: a plugin built with this SDK
// serves version 2 only; a host that speaks only version 1 gets go-plugin's
// error naming both versions.
func TestHostSpeakingOnlyVersion1IsRefused(t *testing.T) {
	old := plugin.Handshake
	old.ProtocolVersion = 1
	c := startHelper(t, "sdk", old, map[int]goplugin.PluginSet{1: plugin.VersionedPlugins(nil, nil)[1]})
	_, err := c.Client()
	if err == nil {
		t.Fatal("a version-1 host connected to a version-2 plugin")
	}
	for _, want := range []string{"incompatible API version", "Plugin version: 2", "Client versions: [1]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to contain %q", err, want)
		}
	}
}

// TestVersion2PluginAsSubprocess: the same host speaks version 2 to a
// plugin built with this SDK, and never rewrites the prompt.
func TestVersion2PluginAsSubprocess(t *testing.T) {
	c := startHelper(t, "sdk", plugin.Handshake, plugin.VersionedPlugins(nil, nil))
	remote := dispense(t, c)
	if remote.Protocol() != plugin.ProtocolVersion {
		t.Fatalf("negotiated protocol %d, want %d", remote.Protocol(), plugin.ProtocolVersion)
	}
	res, err := remote.Run(context.Background(), sdk.Task{ID: "t1", Prompt: "p", Context: "# Context\n", Feedback: "f"}, conformance.NewRecorder(nil).For("t1"))
	if err != nil || res.Output != "v2 saw: p" {
		t.Fatalf("got %q, %v; want the prompt as written", res.Output, err)
	}
}

// wirePlugin serves wireServer: an agent written against the protocol's
// messages alone, as a plugin in another language would be.
type wirePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (wirePlugin) GRPCServer(b *goplugin.GRPCBroker, s *grpc.Server) error {
	agentpb.RegisterAgentServer(s, &wireServer{broker: b})
	return nil
}

func (wirePlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("wirePlugin is served, never dispensed")
}

type wireServer struct {
	agentpb.UnimplementedAgentServer
	broker *goplugin.GRPCBroker
	mu     sync.Mutex
	host   agentpb.HostClient
}

func (s *wireServer) Describe(context.Context, *agentpb.DescribeRequest) (*agentpb.Info, error) {
	return &agentpb.Info{Name: "wire", Version: "0.9.0", Capacity: 1}, nil
}

func (s *wireServer) Attach(_ context.Context, m *agentpb.AttachRequest) (*agentpb.AttachResponse, error) {
	conn, err := s.broker.Dial(m.GetHostBrokerId())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.host = agentpb.NewHostClient(conn)
	s.mu.Unlock()
	return &agentpb.AttachResponse{}, nil
}

func (s *wireServer) Run(ctx context.Context, m *agentpb.RunRequest) (*agentpb.RunResponse, error) {
	s.mu.Lock()
	host := s.host
	s.mu.Unlock()
	st, err := host.ToolUses(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Send(&agentpb.ToolUse{TaskId: m.GetTask().GetId(), Tool: "Read", Paths: []string{"a.go"}}); err != nil {
		return nil, err
	}
	ack, err := st.CloseAndRecv()
	if err != nil {
		return nil, err
	}
	return &agentpb.RunResponse{Output: "wire saw: " + m.GetTask().GetPrompt(), ToolUses: ack.GetCount()}, nil
}

func (s *wireServer) Summarize(_ context.Context, m *agentpb.SummarizeRequest) (*agentpb.Artifact, error) {
	return &agentpb.Artifact{KeyDecisions: []string{fmt.Sprintf("summarized %s", m.GetTaskId())}, SourceSession: "old", CreatedUnixNano: 1}, nil
}

// Package rawplugin is a go-plugin plugin with no hearth code in it: a
// unary call and a client stream that do nothing but answer and count.
// hearth's benchmarks run it beside the agent protocol, in the same run,
// to report hearth's overhead over the raw layer underneath.
package rawplugin

import (
	"context"
	"io"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/hearth-dev/hearth/internal/rawplugin/rawpb"
)

// Name is the plugin's name in its plugin set.
const Name = "raw"

// Plugin serves the Raw service; on the host side it dispenses a
// rawpb.RawClient.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
}

// GRPCServer implements plugin.GRPCPlugin.
func (Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	rawpb.RegisterRawServer(s, server{})
	return nil
}

// GRPCClient implements plugin.GRPCPlugin.
func (Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return rawpb.NewRawClient(c), nil
}

type server struct {
	rawpb.UnimplementedRawServer
}

func (server) Check(context.Context, *rawpb.Call) (*rawpb.Verdict, error) {
	return &rawpb.Verdict{Allow: true}, nil
}

func (server) Sink(stream rawpb.Raw_SinkServer) error {
	var n uint64
	for {
		if _, err := stream.Recv(); err == io.EOF {
			return stream.SendAndClose(&rawpb.Ack{Count: n})
		} else if err != nil {
			return err
		}
		n++
	}
}

var _ plugin.GRPCPlugin = Plugin{}

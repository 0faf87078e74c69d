// Package peer is the hosts' API to one another (peer.proto, in package
// host/internal/peerpb): the server side a host registers on its
// daemon's listeners (Register, answering with a Handler: its
// host/cluster/member.Member), and the Client another host forwards
// tasks, asks about their idempotency keys and lists runs with. Over TCP
// the hosts authenticate one another with mutual TLS (the server block's
// tls, with client_ca_file): every host presents its own certificate as
// a client and checks the others' against the CA they all trust.
//
// Errors cross as the daemon's API carries them (host/internal/wire),
// with two reasons of the peer service's own: a task the host did not
// start is FAILED_PRECONDITION with reason REFUSED (cluster.ErrRefused on
// the forwarding side: the task may go elsewhere); a key whose task the
// host stopped before it finished, reason INTERRUPTED
// (cluster.ErrInterrupted). A call that never found a ready connection
// within the dial timeout is cluster.ErrUnreachable: the request did not
// reach the host. Any other failure leaves a forward's outcome unknown;
// cluster.Forward says what to do then.
package peer

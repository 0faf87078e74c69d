package telemetry

import (
	"context"
	"sync"
	"sync/atomic"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// relayQueue bounds the batches of plugins' spans waiting for upload. A
// plugin's SDK sends a batch at most every few seconds or at the end of
// a task, so 256 batches is minutes of a busy host's plugins; past it a
// batch is dropped (and counted), never waited for: a slow backend must
// not slow the plugins' tasks.
const relayQueue = 256

// uploader is what the relay uploads with: the OTLP exporter's client.
type uploader interface {
	UploadTraces(ctx context.Context, rs []*tracepb.ResourceSpans) error
}

// Relay takes the spans plugins export over their connection to the host
// (OTLP's TraceService, served beside the host's callbacks) and uploads
// them with the host's exporter client. Export answers at once; uploads
// run in one goroutine, in order.
type Relay struct {
	coltracepb.UnimplementedTraceServiceServer
	up uploader

	mu      sync.Mutex
	queue   chan []*tracepb.ResourceSpans
	closed  bool
	pending sync.WaitGroup
	done    chan struct{}
	// cancel ends an upload in flight when Close's ctx is done.
	ctx    context.Context
	cancel context.CancelFunc

	dropped, failed, spans atomic.Uint64
}

func newRelay(up uploader, n int) *Relay {
	r := &Relay{up: up, queue: make(chan []*tracepb.ResourceSpans, n), done: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.loop()
	return r
}

func (r *Relay) loop() {
	defer close(r.done)
	for rs := range r.queue {
		if err := r.up.UploadTraces(r.ctx, rs); err != nil {
			r.failed.Add(1)
		}
		r.pending.Done()
	}
}

// Export implements the OTLP TraceService for plugins: the request's spans
// are queued for upload, or dropped when the queue is full or the relay
// closed.
func (r *Relay) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	rs := req.GetResourceSpans()
	n := countSpans(rs)
	if n == 0 {
		return &coltracepb.ExportTraceServiceResponse{}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.dropped.Add(uint64(n))
		return &coltracepb.ExportTraceServiceResponse{}, nil
	}
	r.pending.Add(1)
	select {
	case r.queue <- rs:
		r.spans.Add(uint64(n))
	default:
		r.pending.Done()
		r.dropped.Add(uint64(n))
	}
	// OTLP's partial success says how many spans were refused: the
	// plugin's SDK logs it.
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func countSpans(rs []*tracepb.ResourceSpans) int {
	n := 0
	for _, r := range rs {
		for _, s := range r.GetScopeSpans() {
			n += len(s.GetSpans())
		}
	}
	return n
}

// Flush returns once every batch queued so far is uploaded (or failed),
// or ctx is done.
func (r *Relay) Flush(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		r.pending.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close uploads what is queued, within ctx, and stops the relay; later
// exports are dropped.
func (r *Relay) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
	stop := context.AfterFunc(ctx, r.cancel)
	defer stop()
	select {
	case <-r.done:
		r.cancel()
		return nil
	case <-ctx.Done():
		<-r.done // the upload in flight was cancelled; the rest fail fast
		return ctx.Err()
	}
}

// RelayStats counts the spans the relay took, dropped (queue full or
// closed), and the batches whose upload failed.
type RelayStats struct{ Spans, Dropped, FailedBatches uint64 }

// Stats returns the relay's counts so far.
func (r *Relay) Stats() RelayStats {
	return RelayStats{Spans: r.spans.Load(), Dropped: r.dropped.Load(), FailedBatches: r.failed.Load()}
}

var _ coltracepb.TraceServiceServer = (*Relay)(nil)

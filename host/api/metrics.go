package api

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hearth-dev/hearth"
)

// Metrics are the daemon's Prometheus metrics. Counters are fed by the
// host's events as they are emitted (engine.Options.Observe), so none is
// missed however busy the host is; gauges are read at scrape time.
//
//	hearth_sessions{agent,status}              sessions by status
//	hearth_decisions_total{agent,action,outcome} placements
//	hearth_tool_uses_total{agent,outcome}      tool-use reports
//	hearth_guard_fired_total{guard,hook,action} denials, blocks, vetoes, gates
//	hearth_task_duration_seconds{agent,result} finished tasks
//	hearth_tokens_total{agent,model,outcome,type} tokens finished tasks' model calls used
//	hearth_cost_total{agent,model,outcome}     what finished tasks cost
//	hearth_plugin_spawns_total{agent}          processes started (spawned or rehydrated)
//	hearth_plugin_crashes_total{agent}         sessions lost (crashed, hung)
//	hearth_events_total{kind}                  every event
//	hearth_store_bytes{part}                   Badger's LSM tree and value log
//
// A host of a cluster adds, read at scrape time from its member
// (hearth.ClusterStats; docs/cluster.md, "Seeing the cluster"):
//
//	hearth_cluster_decisions_total{ran}                tasks submitted here, by where they ran: local, forwarded
//	hearth_cluster_forwards_sent_total{outcome}        attempts to run a task on another host
//	hearth_cluster_forwards_received_total{outcome}    forwards other hosts sent here
//	hearth_cluster_forwards_in_flight{direction}       sent and unanswered; received and running
//	hearth_cluster_replacements_total                  placements of a forwarded task after its first
//	hearth_cluster_lease_losses_total                  cluster leases lost
//	hearth_cluster_etcd_txns_total                     etcd write transactions: rate() is the publish rate
//	hearth_cluster_etcd_keys_written_total             keys written in them
//	hearth_cluster_members{state}                      hosts seen: all, unhealthy, draining
//	hearth_cluster_etcd_reachable                      1 while the host is registered in etcd
//
// A forwarded task is one decision in hearth_decisions_total, on the host
// that ran it: its pool chose the session (reused or spawned, the
// matcher's outcome). The forwarding host's decision (a session on
// another host, Decision.Host set) is counted as a forward sent instead,
// so that the sum over the hosts counts each task once.
type Metrics struct {
	reg       *prometheus.Registry
	decisions *prometheus.CounterVec
	toolUses  *prometheus.CounterVec
	guards    *prometheus.CounterVec
	durations *prometheus.HistogramVec
	spawns    *prometheus.CounterVec
	crashes   *prometheus.CounterVec
	events    *prometheus.CounterVec
	tokens    *prometheus.CounterVec
	cost      *prometheus.CounterVec
}

// NewMetrics makes the metrics; Observe feeds them.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hearth_decisions_total", Help: "Placement decisions, by agent, what the host did, and the matcher's outcome.",
		}, []string{"agent", "action", "outcome"}),
		toolUses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hearth_tool_uses_total", Help: "Tool uses reported by sessions, by agent and outcome.",
		}, []string{"agent", "outcome"}),
		guards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hearth_guard_fired_total", Help: "Guards that fired (denied, blocked, vetoed, gated), by guard, hook and action.",
		}, []string{"guard", "hook", "action"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hearth_task_duration_seconds", Help: "Durations of finished tasks, by agent and result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms .. 4.4 min
		}, []string{"agent", "result"}),
		spawns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hearth_plugin_spawns_total", Help: "Plugin processes started, spawned or rehydrated, by agent.",
		}, []string{"agent"}),
		crashes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hearth_plugin_crashes_total", Help: "Sessions lost because their plugin crashed, hung or failed health checks, by agent.",
		}, []string{"agent"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hearth_events_total", Help: "Events the host emitted, by kind.",
		}, []string{"kind"}),
		// type is input (billed at the full price, cache writes
		// included), cached_input, cache_write (also in input) or
		// output: the model agent's accounting (sdk.MetricInputTokens).
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hearth_tokens_total", Help: "Tokens used by finished tasks' model calls, as their results report them, by agent, model, outcome and type (input, cached_input, cache_write, output).",
		}, []string{"agent", "model", "outcome", "type"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hearth_cost_total", Help: "What finished tasks cost, as their results report it (the model agent: dollars), by agent, model and outcome.",
		}, []string{"agent", "model", "outcome"}),
	}
	m.reg.MustRegister(m.decisions, m.toolUses, m.guards, m.durations, m.spawns, m.crashes, m.events, m.tokens, m.cost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe counts one event; it is the host's Options.Observe.
func (m *Metrics) Observe(e *hearth.Event) {
	m.events.WithLabelValues(string(e.Kind)).Inc()
	switch e.Kind {
	case hearth.EventToolUsed:
		if e.ToolUse != nil {
			m.toolUses.WithLabelValues(e.Agent, e.ToolUse.Outcome.String()).Inc()
		}
	case hearth.EventDecision:
		if d := e.Decision; d != nil && d.Host == "" {
			m.decisions.WithLabelValues(d.Agent, string(d.Action), d.Outcome).Inc()
		}
	case hearth.EventGuardFired:
		m.guards.WithLabelValues(e.Guard, e.Hook, e.Action).Inc()
	case hearth.EventTaskSucceeded:
		m.durations.WithLabelValues(e.Agent, "succeeded").Observe(e.Duration.Seconds())
		m.usage(e, "succeeded")
	case hearth.EventTaskFailed:
		if e.Session != "" { // placed and run, not refused before
			m.durations.WithLabelValues(e.Agent, "failed").Observe(e.Duration.Seconds())
			m.usage(e, "failed")
		}
	case hearth.EventSessionSpawned, hearth.EventSessionRehydrated:
		m.spawns.WithLabelValues(e.Agent).Inc()
	case hearth.EventSessionLost:
		m.crashes.WithLabelValues(e.Agent).Inc()
	}
}

// usage counts a finished task's tokens and cost. A task that reports
// neither adds nothing: no series for agents that call no model.
func (m *Metrics) usage(e *hearth.Event, outcome string) {
	model := ""
	if t := e.Tokens; t != nil {
		model = t.Model
		for _, n := range []struct {
			typ string
			v   int64
		}{{"input", t.Input}, {"cached_input", t.CachedInput}, {"cache_write", t.CacheWrite}, {"output", t.Output}} {
			m.tokens.WithLabelValues(e.Agent, model, outcome, n.typ).Add(float64(n.v))
		}
	}
	if e.Cost > 0 || e.Tokens != nil {
		m.cost.WithLabelValues(e.Agent, model, outcome).Add(e.Cost)
	}
}

// hostCollector reads the host's gauges at scrape time, from its status,
// and the cluster's series, which the member counts.
type hostCollector struct {
	status   hearth.StatusReader
	sessions *prometheus.Desc
	store    *prometheus.Desc
	cluster  clusterDescs
}

// clusterDescs are the cluster's series (hearth.ClusterStats).
type clusterDescs struct {
	decisions, sent, received, inFlight, replacements, leaseLosses, txns, keys, members, etcdUp *prometheus.Desc
}

func newHostCollector(status hearth.StatusReader) *hostCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &hostCollector{
		status:   status,
		sessions: d("hearth_sessions", "Sessions by agent and status.", "agent", "status"),
		store:    d("hearth_store_bytes", "Size of the Badger store, by part (lsm, vlog).", "part"),
		cluster: clusterDescs{
			decisions:    d("hearth_cluster_decisions_total", "Tasks submitted to this host of a cluster, by where they ran (local, forwarded).", "ran"),
			sent:         d("hearth_cluster_forwards_sent_total", "Attempts to run a task on another host, by what each came to.", "outcome"),
			received:     d("hearth_cluster_forwards_received_total", "Forwards other hosts sent here, by outcome.", "outcome"),
			inFlight:     d("hearth_cluster_forwards_in_flight", "Forwards sent and unanswered (sent), forwarded tasks running here (received).", "direction"),
			replacements: d("hearth_cluster_replacements_total", "Placements of a forwarded task after its first attempt."),
			leaseLosses:  d("hearth_cluster_lease_losses_total", "Cluster leases this host lost."),
			txns:         d("hearth_cluster_etcd_txns_total", "Write transactions to etcd (registrations and publishing batches): rate() is the publish rate."),
			keys:         d("hearth_cluster_etcd_keys_written_total", "Keys written to etcd in those transactions."),
			members:      d("hearth_cluster_members", "Hosts this host sees, by state: all, unhealthy (it cannot work with them), draining.", "state"),
			etcdUp:       d("hearth_cluster_etcd_reachable", "1 while this host is registered in etcd, 0 while etcd does not answer it."),
		},
	}
}

func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sessions
	ch <- c.store
	cd := c.cluster
	for _, d := range []*prometheus.Desc{cd.decisions, cd.sent, cd.received, cd.inFlight, cd.replacements, cd.leaseLosses, cd.txns, cd.keys, cd.members, cd.etcdUp} {
		ch <- d
	}
}

// collectCluster sends the cluster's series of cs.
func (c *hostCollector) collectCluster(ch chan<- prometheus.Metric, cs *hearth.ClusterStats) {
	cd := c.cluster
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	// Both places always, so that rate() over them has a series from
	// the first scrape.
	for _, ran := range []string{"local", "forwarded"} {
		metric(cd.decisions, prometheus.CounterValue, float64(cs.Decisions[ran]), ran)
	}
	for outcome, n := range cs.ForwardsSent {
		metric(cd.sent, prometheus.CounterValue, float64(n), outcome)
	}
	for outcome, n := range cs.ForwardsReceived {
		metric(cd.received, prometheus.CounterValue, float64(n), outcome)
	}
	metric(cd.inFlight, prometheus.GaugeValue, float64(cs.InFlightSent), "sent")
	metric(cd.inFlight, prometheus.GaugeValue, float64(cs.InFlightReceived), "received")
	metric(cd.replacements, prometheus.CounterValue, float64(cs.Replacements))
	metric(cd.leaseLosses, prometheus.CounterValue, float64(cs.LeaseLosses))
	metric(cd.txns, prometheus.CounterValue, float64(cs.EtcdTxns))
	metric(cd.keys, prometheus.CounterValue, float64(cs.EtcdKeys))
	metric(cd.members, prometheus.GaugeValue, float64(cs.Members), "all")
	metric(cd.members, prometheus.GaugeValue, float64(cs.Unhealthy), "unhealthy")
	metric(cd.members, prometheus.GaugeValue, float64(cs.Draining), "draining")
	up := 1.0
	if cs.EtcdErr != "" {
		up = 0
	}
	metric(cd.etcdUp, prometheus.GaugeValue, up)
}

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.status.Status(context.Background())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.sessions, err)
		return
	}
	for _, sc := range st.Sessions {
		ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(sc.N), sc.Agent, sc.Status)
	}
	ch <- prometheus.MustNewConstMetric(c.store, prometheus.GaugeValue, float64(st.Store.LSM), "lsm")
	ch <- prometheus.MustNewConstMetric(c.store, prometheus.GaugeValue, float64(st.Store.VLog), "vlog")
	if st.Cluster != nil {
		c.collectCluster(ch, st.Cluster)
	}
}

// handler serves the metrics of m, and the gauges of status.
func (m *Metrics) handler(status hearth.StatusReader) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newHostCollector(status))
	return promhttp.HandlerFor(prometheus.Gatherers{m.reg, reg}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

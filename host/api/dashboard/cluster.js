// hearth's dashboard, the cluster view: the hosts of this host's cluster
// as it sees them (/api/cluster), with their state, sessions and load,
// the forwards in flight this host sends or runs, and whether it reaches
// etcd. Uses app.js's helpers (el, ago, age, bar, status).
//
// Polled, not pushed: membership, a host's load and etcd's reachability
// are not host events (the event stream carries this host's sessions,
// tasks and decisions), and the view they come from changes with every
// host's publish (up to once a publish_interval each). The read is in
// memory on the daemon; a poll every CLUSTER_POLL keeps the view within
// that of what the host knows.
"use strict";

const CLUSTER_POLL = 2000;

// hostState is a member's state as the view shows it: unhealthy first
// (this host cannot work with it, whatever it says of itself), then
// draining, else up.
function hostState(h) {
  if (h.unhealthy) return { state: "unhealthy", why: h.unhealthy };
  if (h.draining) return { state: "draining", why: h.draining };
  return { state: "up", why: "" };
}

function agentLoads(h) {
  return (h.agents || []).map((a) => el("div", { class: "agent-load", "data-agent": a.name },
    el("span", { class: "mono" }, a.name), " ",
    bar(a.capacity ? a.load / a.capacity : 0, `${a.load}/${a.capacity} tasks`),
    el("span", { class: "muted" }, ` · ${a.live} live` + (a.dormant ? `, ${a.dormant} dormant` : "") +
      (a.max_sessions ? ` of ${a.max_sessions}` : "") + (a.external ? " · external" : ""))));
}

function renderCluster(v) {
  const box = document.getElementById("cluster");
  box.hidden = false;
  box.dataset.clustered = String(v.clustered);
  document.getElementById("cluster-none").hidden = v.clustered;
  document.getElementById("cluster-body").hidden = !v.clustered;
  if (!v.clustered) return;

  const banner = document.getElementById("cluster-etcd");
  banner.hidden = !v.etcd_err;
  banner.textContent = v.etcd_err ? `etcd is unreachable from this host: ${v.etcd_err}. ` +
    "The hosts below are its last view and may be stale; it serves locally and rejoins when etcd answers." : "";

  const self = v.hosts.find((h) => h.self);
  document.querySelector("#hosts tbody").replaceChildren(...v.hosts.map((h) => {
    const { state, why } = hostState(h);
    const name = [el("span", { class: "mono" }, h.id)];
    if (h.self) name.push(" ", el("span", { class: "muted" }, "(this host)"));
    if (h.hostname) name.push(el("div", { class: "muted" }, h.hostname));
    const notes = [];
    if (self && !h.self && h.config_hash && self.config_hash && h.config_hash !== self.config_hash) {
      notes.push(el("div", { class: "muted", title: "its agents, matcher, guards or pipelines differ from this host's" }, "config differs from this host's"));
    }
    return el("tr", { "data-host": h.id, "data-state": state, "data-self": h.self ? "true" : null },
      el("td", {}, name),
      el("td", {}, status(state), why ? el("div", { class: "why" }, why) : null),
      el("td", { class: "sessions" }, String(h.sessions)),
      el("td", {}, agentLoads(h)),
      el("td", {}, el("span", { class: "mono" }, h.addr), notes),
      el("td", {}, age(h.started), h.version ? el("div", { class: "muted" }, h.version) : null));
  }));

  document.querySelector("#forwards tbody").replaceChildren(...v.forwards.map((f) => el("tr",
    { "data-task": f.task, "data-state": f.state, "data-from": f.from, "data-to": f.to || "" },
    el("td", {}, el("span", { class: "mono" }, f.task)),
    el("td", {}, f.agent),
    el("td", {}, el("span", { class: "mono" }, f.from), " → ", el("span", { class: "mono" }, f.to || "-"),
      f.session ? el("div", { class: "muted mono" }, f.session) : null),
    el("td", {}, f.state),
    el("td", {}, ago(f.since), f.attempt > 1 ? el("div", { class: "muted" }, `attempt ${f.attempt}, first placed ${ago(f.started)}`) : null))));
  document.getElementById("forwards-empty").hidden = v.forwards.length > 0;
  document.body.dataset.clusterGenerated = v.generated;
}

async function refreshCluster() {
  let v = null, signedOut = false;
  try {
    const r = await fetch("/api/cluster", { cache: "no-store", credentials: "same-origin" });
    if (r.ok) v = await r.json();
    signedOut = r.status === 401;
  } catch (_) {
    // The daemon is gone for now: the next poll tries again.
  }
  if (v) renderCluster(v);
  // Signed out (app.js says how to sign in again), the page stops
  // asking: each refusal is a line in the daemon's log. A cluster block
  // takes a restart, which signs the page out too: a host in no cluster
  // is not asked again.
  if (!signedOut && (!v || v.clustered)) setTimeout(refreshCluster, CLUSTER_POLL);
}

refreshCluster();

// hearth's dashboard: a snapshot of the host from /api/snapshot, redrawn
// whenever the event stream (/api/events) says something happened.
"use strict";

// The page reads the API with the cookie its sign-in link set (HttpOnly:
// this script never sees a credential, and none is ever in an address).

const STATUSES = ["pending", "running", "retrying", "succeeded", "failed", "skipped"];
let selectedRun = null;
let userSelected = false;
let last = null;

// el builds an element; children are nodes or text (never parsed as HTML).
function el(tag, attrs, ...children) {
  const e = tag.startsWith("svg:") ? document.createElementNS("http://www.w3.org/2000/svg", tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.setAttribute("class", v);
    else if (k === "style") e.setAttribute("style", v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function ago(iso) {
  if (!iso || iso.startsWith("0001")) return "-";
  const s = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 60) return Math.round(s) + "s ago";
  if (s < 3600) return Math.round(s / 60) + "m ago";
  if (s < 86400) return (s / 3600).toFixed(1) + "h ago";
  return (s / 86400).toFixed(1) + "d ago";
}

function age(iso) {
  const a = ago(iso);
  return a.endsWith(" ago") ? a.slice(0, -4) : a;
}

function duration(ns) {
  if (!ns) return "-";
  const s = ns / 1e9;
  if (s < 1) return Math.round(s * 1000) + " ms";
  if (s < 120) return s.toFixed(1) + " s";
  return (s / 60).toFixed(1) + " min";
}

// count writes a token or call count with thousands separators.
const count = (v) => Math.round(v).toLocaleString("en-US");
const fixed = (v, n = 2) => (v === undefined || v === null) ? "-" : Number(v).toFixed(n);
const status = (s) => el("span", { class: "status " + s }, s);

function bar(fraction, label) {
  const pct = Math.round(Math.max(0, Math.min(1, fraction)) * 100);
  return el("span", {}, el("span", { class: "bar", title: label || pct + "%" }, el("span", { style: "width:" + pct + "%" })), " " + (label || pct + "%"));
}

function renderToday(s) {
  const t = s.today;
  document.getElementById("today-completed").textContent = t.completed;
  document.getElementById("today-failed").textContent = t.failed;
  document.getElementById("today-time").textContent = t.completed + t.failed ? duration(t.average_time) : "-";
  document.getElementById("today-cost").textContent = t.completed + t.failed ? fixed(t.average_cost) : "-";
  document.getElementById("today-quality").textContent = fixed(t.quality);
  document.getElementById("session-counts").textContent = `${s.sessions.length} live, ${s.dormant} dormant`;
  document.getElementById("where").textContent = `${s.data_dir} · ${s.version} · up ${age(s.started)}`;
}

function renderSessions(s) {
  const body = document.querySelector("#sessions tbody");
  body.replaceChildren(...s.sessions.map((x) => {
    const fp = [];
    if (x.directories && x.directories.length) fp.push("dirs: " + x.directories.slice(0, 3).join(", ") + (x.directories.length > 3 ? ` +${x.directories.length - 3}` : ""));
    if (x.technologies && x.technologies.length) fp.push("tech: " + x.technologies.slice(0, 4).join(", "));
    fp.push(`${(x.files || []).length} files`);
    const id = [el("span", { class: "mono" }, x.id)];
    if (x.external) id.push(el("div", { class: "muted" }, `${x.external}: ${x.resume}` + (x.workspace ? ` (in ${x.workspace})` : "")));
    return el("tr", { "data-session": x.id, "data-status": x.status },
      el("td", {}, id), el("td", {}, x.agent), el("td", {}, status(x.status)),
      el("td", {}, bar(x.capacity ? x.load / x.capacity : 0, `${x.load}/${x.capacity}`)),
      el("td", {}, age(x.created)), el("td", {}, ago(x.last_activity)),
      el("td", {}, x.unchecked ? [String(x.tool_uses), el("div", { class: "unchecked", title: "guarded tool uses reported without asking the host first (tool.unchecked events)" }, `${x.unchecked} unchecked`)] : x.tool_uses),
      el("td", { class: "fp" }, fp.join(" · ")));
  }));
  document.getElementById("sessions-empty").hidden = s.sessions.length > 0;
}

function renderRuns(s) {
  const body = document.querySelector("#runs tbody");
  if (!userSelected || !s.runs.some((r) => r.id === selectedRun)) {
    const running = s.runs.find((r) => r.status === "running");
    selectedRun = running ? running.id : (s.runs[0] && s.runs[0].id);
  }
  body.replaceChildren(...s.runs.map((r) => {
    const failures = r.task_list.filter((t) => t.status === "failed").length;
    const cost = r.budget ? `${fixed(r.cost)} / ${fixed(r.budget)}` : fixed(r.cost);
    return el("tr", {
      "data-run": r.id, "data-status": r.status, class: r.id === selectedRun ? "selected" : "",
      onclick: () => { selectedRun = r.id; userSelected = true; render(last); },
    },
    el("td", {}, el("span", { class: "mono" }, r.id), el("div", { class: "muted" }, r.pipeline), traceLink(r.trace_id)),
    el("td", {}, status(r.status), r.reason && r.status !== "completed" ? el("div", { class: "muted" }, r.reason) : null),
    el("td", {}, r.stage || "-"),
    el("td", { "data-progress": Math.round(r.progress * 100) }, bar(r.progress, `${Math.round(r.progress * 100)}% (${r.succeeded}/${r.tasks})`)),
    el("td", {}, cost, r.tokens ? el("div", { class: "muted tokens" },
      `${count(r.tokens.input)} in (${count(r.tokens.cached_input)} cached), ${count(r.tokens.output)} out; ${count(r.tokens.tool_calls)} tool calls`) : null),
    el("td", {}, fixed(r.quality)), el("td", {}, failures), el("td", {}, r.retries));
  }));
  document.getElementById("runs-empty").hidden = s.runs.length > 0;
  renderGraph(s.runs.find((r) => r.id === selectedRun));
}

// renderGraph draws a run's tasks as layers by dependency depth, each
// task colored by its status, with an edge from each dependency.
function renderGraph(run) {
  const box = document.getElementById("graph-box");
  box.hidden = !run;
  if (!run) return;
  document.getElementById("graph-run").textContent = run.id;
  const tasks = run.task_list;
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const depth = new Map();
  const depthOf = (t, seen = new Set()) => {
    if (depth.has(t.name)) return depth.get(t.name);
    if (seen.has(t.name)) return 0;
    seen.add(t.name);
    let d = 0;
    for (const dep of t.depends_on || []) if (byName.has(dep)) d = Math.max(d, 1 + depthOf(byName.get(dep), seen));
    depth.set(t.name, d);
    return d;
  };
  tasks.forEach((t) => depthOf(t));
  // A layer wider than maxRows wraps into more columns.
  const maxRows = 12, W = 150, H = 24, GX = 40, GY = 8;
  const layers = [];
  tasks.forEach((t) => { (layers[depth.get(t.name)] ||= []).push(t); });
  const pos = new Map();
  let col = 0, rows = 0;
  for (const layer of layers) {
    if (!layer) continue;
    layer.forEach((t, i) => {
      pos.set(t.name, { x: (col + Math.floor(i / maxRows)) * (W + GX) + 10, y: (i % maxRows) * (H + GY) + 10 });
      rows = Math.max(rows, Math.min(layer.length, maxRows));
    });
    col += Math.ceil(layer.length / maxRows);
  }
  const svg = document.getElementById("graph");
  const width = col * (W + GX) + 20, height = rows * (H + GY) + 20;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  const edges = [], nodes = [];
  for (const t of tasks) {
    const p = pos.get(t.name);
    for (const dep of t.depends_on || []) {
      const q = pos.get(dep);
      if (!q) continue;
      const x1 = q.x + W, y1 = q.y + H / 2, x2 = p.x, y2 = p.y + H / 2;
      edges.push(el("svg:path", { class: "edge", d: `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}` }));
    }
    const title = `${t.name}: ${t.status}` + (t.attempt > 1 ? `, attempt ${t.attempt}` : "") + (t.error ? ` — ${t.error}` : "");
    nodes.push(el("svg:g", { class: "node", "data-task": t.name, "data-status": t.status },
      el("svg:title", {}, title),
      el("svg:rect", { x: p.x, y: p.y, width: W, height: H, rx: 4, style: `fill: var(--${t.status}, #999)` }),
      el("svg:text", { x: p.x + 6, y: p.y + H / 2 + 4 }, t.name.length > 22 ? t.name.slice(0, 21) + "…" : t.name)));
  }
  svg.replaceChildren(...edges, ...nodes);
  document.getElementById("task-traces").replaceChildren(...tasks.filter((t) => t.trace_id).map((t) =>
    el("li", { "data-task": t.name }, el("span", { class: "mono" }, t.name), " ", traceLink(t.trace_id))));
}

// traceLink shows a run's or a task's trace ID, linked to the trace
// backend when the config's telemetry block names one (trace_url).
function traceLink(id) {
  if (!id) return null;
  const tmpl = last && last.trace_url;
  const text = `trace ${id}`;
  if (!tmpl) return el("div", { class: "trace mono muted", "data-trace": id }, text);
  return el("div", { class: "trace mono" },
    el("a", { href: tmpl.replaceAll("{trace_id}", encodeURIComponent(id)), target: "_blank", rel: "noopener", "data-trace": id }, text));
}

// segments are a candidate's bar: one per factor of the decision's
// list, in its order, as wide as the factor's share of the total (the
// matcher computes the shares and they add up to the total:
// hearth.Factor.Share), named by the list, so a factor this page never
// heard of is drawn like the others. A decision recorded before hearth
// kept shares has shares that add up to 0 under a total that is not: its
// bar is the total, unsplit.
//
// A share is drawn only as far as the bar goes: a record's share that is
// negative, or that with the ones before it would pass the bar's end (an
// old, corrupt or hostile record; the matcher's add up to its total, at
// most 1), is cut there, so that no segment is drawn outside its bar or
// over another.
function segments(c) {
  const factors = c.factors || [];
  const sum = factors.reduce((a, f) => a + part(f.share), 0);
  let left = 0;
  const fit = (v) => {
    const w = Math.min(part(v), 1 - left);
    left += w;
    return w;
  };
  if (sum === 0 && part(c.total) > 0) {
    return [{ name: null, share: fit(c.total), title: `total ${c.total.toFixed(2)}, recorded before hearth kept each factor's share` }];
  }
  return factors.map((f) => ({
    name: f.name, share: f.applied ? fit(f.share) : 0,
    title: f.applied ? `${f.name}: score ${fixed(f.score)}, weight ${fixed(f.weight)}, adds ${fixed(f.share)} to the total` : `${f.name}: did not apply`,
  }));
}

// part is a share as a bar may draw it: a number of at least 0.
function part(v) {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? v : 0;
}

// colour is a factor's: the stylesheet's --f-NAME where it has one, else
// a hue of its own from its name, so that a new factor gets a colour
// that stays the same from one redraw to the next.
function colour(name) {
  if (name === null) return "var(--unsplit)";
  let h = 0;
  for (const ch of name) h = (h * 31 + ch.codePointAt(0)) % 360;
  const own = `hsl(${h} 45% 52%)`;
  return /^[A-Za-z0-9_-]+$/.test(name) ? `var(--f-${name}, ${own})` : own;
}

// formatScore prints a total with the decimals it takes to read on the
// right side of the threshold: "0.6004", never "0.60" (matcher.FormatScore).
function formatScore(total, threshold) {
  for (let n = 2; n <= 17; n++) {
    const t = total.toFixed(n);
    if (t !== threshold.toFixed(n) || total === threshold) return t;
  }
  return String(total);
}

function renderDecisions(s) {
  const list = document.getElementById("decisions");
  // The legend names the factors of the decisions shown, as their lists
  // name them.
  const names = [];
  list.replaceChildren(...s.decisions.map((e) => {
    const d = e.decision;
    const rows = (d.candidates || []).slice(0, 3).map((c) => {
      let left = 0;
      const segs = segments(c).map(({ name, share, title }) => {
        if (name !== null && !names.includes(name)) names.push(name);
        const seg = el("span", { class: name === null ? "seg unsplit" : "seg", "data-factor": name, "data-share": share, title,
          style: `left:${left * 100}%;width:${share * 100}%;background:${colour(name)}` });
        left += share;
        return seg;
      });
      return [
        el("span", { class: "mono" }, c.session + (c.dormant ? " (dormant)" : "") + (c.eligible ? "" : " (busy)")),
        el("span", { class: "stack", "data-candidate": c.session, "data-total": formatScore(c.total, d.threshold) }, ...segs,
          el("span", { class: "threshold", title: "threshold " + d.threshold, style: `left:${d.threshold * 100}%` })),
        el("span", {}, formatScore(c.total, d.threshold)),
      ];
    });
    return el("li", { "data-task": d.task, "data-action": d.action, "data-session": d.session },
      el("div", {},
        el("span", { class: "action " + d.action }, d.action), " ",
        el("span", { class: "mono" }, d.task_name || d.task), " → ", el("span", { class: "mono" }, d.session || "-"),
        el("span", { class: "muted" }, ` · ${ago(e.time)}` + (e.run ? ` · run ${e.run}` : ""))),
      el("div", { class: "muted" }, d.reason),
      rows.length ? el("div", { class: "scores" }, ...rows.flat()) : null);
  }));
  document.getElementById("decisions-empty").hidden = s.decisions.length > 0;
  legend("factor-legend", names, colour);
}

// legend lists names, each beside a swatch of its colour.
function legend(id, names, colourOf) {
  document.getElementById(id).replaceChildren(
    ...names.flatMap((n) => [el("span", { class: "sw", "data-name": n, style: `background: ${colourOf(n)}` }), n]));
}

function render(s) {
  if (!s) return;
  renderToday(s);
  renderSessions(s);
  renderRuns(s);
  renderDecisions(s);
  document.body.dataset.generated = s.generated;
}

let pending = null, inflight = false, again = false;
async function refresh() {
  if (inflight) { again = true; return; }
  inflight = true;
  try {
    const r = await fetch("/api/snapshot", { cache: "no-store", credentials: "same-origin" });
    if (r.ok) { last = await r.json(); render(last); }
    else if (r.status === 401) signedOut();
  } catch (_) {
    // The daemon is gone for now: the event stream reconnects.
  } finally {
    inflight = false;
    if (again) { again = false; refresh(); }
  }
}

// soon coalesces bursts of events into one refresh.
function soon() {
  if (pending) return;
  pending = setTimeout(() => { pending = null; refresh(); }, 150);
}

// signedOut says how to sign in again: the cookie expired, or the daemon
// restarted (each start signs everyone out).
function signedOut() {
  const live = document.getElementById("live");
  live.textContent = "signed out: run hearth dashboard for a new link";
  live.className = "live off";
}

function connect() {
  const live = document.getElementById("live");
  const es = new EventSource("/api/events");
  es.onopen = () => { live.textContent = "live"; live.className = "live on"; refresh(); };
  // A stream refused (signed out) is closed for good; one cut off
  // reconnects by itself. A snapshot tells which it was.
  es.onerror = () => { live.textContent = "reconnecting"; live.className = "live off"; if (es.readyState === EventSource.CLOSED) setTimeout(refresh, 1000); };
  es.addEventListener("event", soon);
  es.addEventListener("sessions", soon);
  // Events this page missed (the daemon's buffer for it was full): a
  // snapshot catches up.
  es.addEventListener("missed", soon);
  // Too many missed: the daemon closes the stream. A new one, and the
  // snapshot its opening fetches, show everything again.
  es.addEventListener("dropped", () => {
    es.close();
    live.textContent = "fell behind: reconnecting";
    live.className = "live off";
    document.body.dataset.dropped = String(Number(document.body.dataset.dropped || 0) + 1);
    setTimeout(connect, 1000);
  });
}

legend("graph-legend", STATUSES, (n) => `var(--${n})`);
refresh();
connect();
// Ages and "last active" move on even when nothing happens.
setInterval(() => render(last), 5000);

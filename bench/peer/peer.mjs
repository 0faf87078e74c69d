// The peer of hearth's checkpoint benchmark: LangGraph.js's SqliteSaver
// (better-sqlite3, WAL) putting 1 KiB checkpoints from one writer, with
// PRAGMA synchronous=FULL: durable on each commit, as hearth's store is.
// (better-sqlite3's default is NORMAL: safe against a crash of the
// process, not of the machine.)
//
//   node peer.mjs DIR PUTS SYNCHRONOUS   -> prints "<puts/s>"
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { join } from "node:path";

const [dir, putsArg, sync] = process.argv.slice(2);
const puts = Number(putsArg || 2000);
const saver = SqliteSaver.fromConnString(join(dir, "peer.sqlite"));
saver.setup();
saver.db.pragma(`synchronous = ${sync || "FULL"}`);

const payload = "x".repeat(1024 - 200);
let parent;
const start = process.hrtime.bigint();
for (let i = 0; i < puts; i++) {
  const id = `cp-${String(i).padStart(8, "0")}`;
  const config = { configurable: { thread_id: "run-1", checkpoint_ns: "", ...(parent ? { checkpoint_id: parent } : {}) } };
  const checkpoint = {
    v: 1, id, ts: new Date().toISOString(),
    channel_values: { output: payload, task: `task-${i}` },
    channel_versions: { output: i + 1 }, versions_seen: {}, pending_sends: [],
  };
  await saver.put(config, checkpoint, { source: "loop", step: i, writes: null, parents: {} }, {});
  parent = id;
}
const secs = Number(process.hrtime.bigint() - start) / 1e9;
console.log((puts / secs).toFixed(0));

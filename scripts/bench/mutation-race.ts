#!/usr/bin/env bun
/**
 * Cross-process write race (docs/reliability.md, "Hardening: writes, temp files, transfers and
 * HTTP"): two real `serverfs mcp` processes, the Bridge disabled, edit one file with the same
 * `expected_revision` round after round. Each success appends its own marker; a lost update is a
 * reported success whose marker is not in the final file. stdout gets one JSON document.
 *
 *   bun run scripts/bench/mutation-race.ts [rounds = 2000]
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { errorCode, type McpSession, startStdio, structured } from "../../test/helpers/mcp-client.ts";
import { tempDir, writeConfig } from "../../test/helpers/workspace.ts";

const rounds = Number(process.argv[2] ?? 2000);
const dir = tempDir("serverfs-race-");
const ws = dir.dir("ws");
writeFileSync(join(ws, "race.txt"), "END\n");
const config = writeConfig(dir.path, { workdirs: [{ slot: 1, alias: "ws", path: ws, read_only: false }] });
const sessions = await Promise.all([startStdio(config), startStdio(config)]);

const edit = (s: McpSession, revision: string, mark: string) =>
  s.call("edit_text_file", { workdir: "ws", path: "race.txt", expected_revision: revision, edits: [{ old_text: "END", new_text: `${mark}\nEND` }] });

const counts = { rounds, both_succeeded: 0, one_succeeded: 0, none_succeeded: 0, conflicts: 0, other_errors: {} as Record<string, number> };
const reported: string[] = [];
const t0 = performance.now();
try {
  for (let i = 0; i < rounds; i++) {
    const { revision } = structured<{ revision: string }>(await sessions[0]!.call("stat_file", { workdir: "ws", path: "race.txt" }));
    const marks = [`a${i}`, `b${i}`];
    const codes = (await Promise.all(sessions.map((s, k) => edit(s, revision, marks[k]!)))).map(errorCode);
    const wins = codes.filter((c) => c === null).length;
    if (wins === 2) counts.both_succeeded++;
    else if (wins === 1) counts.one_succeeded++;
    else counts.none_succeeded++;
    codes.forEach((c, k) => {
      if (c === null) reported.push(marks[k]!);
      else if (c === "REVISION_CONFLICT") counts.conflicts++;
      else counts.other_errors[c] = (counts.other_errors[c] ?? 0) + 1;
    });
  }
} finally {
  await Promise.all(sessions.map((s) => s.close()));
}
const elapsed = performance.now() - t0;
const present = new Set(readFileSync(join(ws, "race.txt"), "utf8").split("\n"));
dir.remove();
const lost = reported.filter((m) => !present.has(m)).length;
console.log(
  JSON.stringify({ ...counts, reported_successes: reported.length, lost_updates: lost, ms_per_round: Math.round((elapsed / rounds) * 100) / 100 }, null, 2),
);

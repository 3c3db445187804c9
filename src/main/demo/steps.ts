/**
 * The steps `serverfs demo` shows (run.ts runs them): each is a title and what it does through the
 * MCP client, answering the lines it prints or throwing `DemoFailure` with what did not hold. Offers
 * `demoSteps(session)`, the `Step` shape, `DemoFailure` and `expect`.
 */
import { createHash } from "node:crypto";
import type { CallToolResult, Client } from "@modelcontextprotocol/client";
import { paint } from "../operator/output.ts";

const dim = (s: string) => paint("dim", s);

export interface Step {
  title: string;
  run: () => Promise<string[]>;
}

/** A step (or the setup) that did not hold; its message is what the transcript shows. */
export class DemoFailure extends Error {}

export function expect(cond: unknown, what: string): asserts cond {
  if (!cond) throw new DemoFailure(what);
}

function text(r: CallToolResult): string {
  return (r.content[0] as { text?: string } | undefined)?.text ?? "";
}

function ok<T = Record<string, unknown>>(r: CallToolResult, what: string): T {
  expect(!r.isError, `${what} failed: ${text(r)}`);
  return r.structuredContent as T;
}

/** The connected MCP client the steps drive. */
export function demoSteps(c: Client): Step[] {
  const call = (name: string, a: Record<string, unknown> = {}) => c.callTool({ name, arguments: a });

  const waitFor = async (taskId: string, until: (t: Record<string, unknown>) => boolean) => {
    const deadline = performance.now() + 20_000;
    for (;;) {
      const t = ok(await call("get_agent_task", { task_id: taskId }), "get_agent_task");
      if (until(t)) return t;
      expect(performance.now() < deadline, `task stuck in ${String(t["status"])}`);
      await call("read_agent_task_events", { task_id: taskId, after_event_id: 0, limit: 1, wait_ms: 200 });
    }
  };

  return [
    {
      title: "Connect and list the tools",
      run: async () => {
        const tools = (await c.listTools()).tools.map((t) => t.name);
        expect(tools.length === 20, `expected 20 tools, got ${tools.length}`);
        return [`${c.getServerVersion()?.name} ${c.getServerVersion()?.version}: ${tools.length} tools`, dim(tools.join(", "))];
      },
    },
    {
      title: "list_workdirs",
      run: async () => {
        const r = ok<{ workdirs: { alias: string; access: string; agent_mode: string }[] }>(await call("list_workdirs"), "list_workdirs");
        return r.workdirs.map((w) => `${w.alias}: ${w.access}, agent mode ${w.agent_mode}`);
      },
    },
    {
      title: "read_text_file README.md",
      run: async () => {
        const r = ok<{ content: string; revision: string; end_line: number }>(await call("read_text_file", { workdir: "demo", path: "README.md" }), "read");
        return [`${r.end_line} lines, revision ${r.revision}`, dim(r.content.trim().split("\n")[0] ?? "")];
      },
    },
    {
      title: 'search_text "TODO"',
      run: async () => {
        const r = ok<{ matches: { path: string; line: number; text: string }[] }>(await call("search_text", { workdir: "demo", query: "TODO" }), "search");
        expect(r.matches.length === 2, "expected two hits");
        return r.matches.map((m) => `${m.path}:${m.line}  ${m.text.trim()}`);
      },
    },
    {
      title: "Confinement and policy refuse escapes and secrets",
      run: async () => {
        const escaping = await call("read_text_file", { workdir: "demo", path: "../../etc/passwd" });
        const secret = await call("read_text_file", { workdir: "demo", path: ".env" });
        expect(text(escaping).startsWith("PATH_OUTSIDE_WORKDIR"), "escape was not refused");
        expect(text(secret).startsWith("HIDDEN_PATH_NOT_ALLOWED") || text(secret).startsWith("DENIED_PATH"), ".env was not refused");
        return [`../../etc/passwd → ${text(escaping)}`, `.env → ${text(secret)}`];
      },
    },
    {
      title: "edit_text_file with the revision from stat_file",
      run: async () => {
        const st = ok<{ revision: string }>(await call("stat_file", { workdir: "demo", path: "src/app.ts" }), "stat");
        const e = ok<{ revision: string; bytes_after: number }>(
          await call("edit_text_file", {
            workdir: "demo",
            path: "src/app.ts",
            expected_revision: st.revision,
            // biome-ignore lint/suspicious/noTemplateCurlyInString: the edit writes a template literal into the demo file
            edits: [{ old_text: '"Hello, " + name; // TODO: use a template', new_text: "`Hello, ${name}`;" }],
          }),
          "edit",
        );
        const stale = await call("edit_text_file", {
          workdir: "demo",
          path: "src/app.ts",
          expected_revision: st.revision,
          edits: [{ old_text: "Hello", new_text: "Hi" }],
        });
        expect(text(stale).startsWith("REVISION_CONFLICT"), "a stale revision was not refused");
        return [`edited: ${st.revision} → ${e.revision} (${e.bytes_after} bytes)`, `the old revision again → ${text(stale).split(":")[0]}`];
      },
    },
    {
      title: "An agent task asks for approval; a human approves",
      run: async () => {
        const s = ok<{ task_id: string; status: string }>(
          await call("submit_agent_task", { runtime: "fake", workdir: "demo", prompt: "approval:npm test", profile: "review", correlation_id: "demo-run-1" }),
          "submit",
        );
        const waiting = await waitFor(s.task_id, (t) => t["status"] === "waiting_for_approval");
        const req = waiting["pending_request"] as { request_id: string; payload: { command_display: string } };
        ok(await call("respond_agent_approval", { task_id: s.task_id, request_id: req.request_id, decision: "approve_once" }), "respond");
        const done = await waitFor(s.task_id, (t) => t["status"] === "succeeded");
        return [
          `submitted ${s.task_id} (${s.status})`,
          `approval requested for: ${req.payload.command_display}`,
          `approved once → ${done["status"]}: ${String(done["final_response"])}`,
        ];
      },
    },
    {
      title: "Follow its events",
      run: async () => {
        const tasks = ok<{ task_id: string }>(
          await call("submit_agent_task", { runtime: "fake", workdir: "demo", prompt: "events:3", profile: "review", correlation_id: "demo-run-2" }),
          "submit",
        );
        await waitFor(tasks.task_id, (t) => t["status"] === "succeeded");
        const ev = ok<{ events: { event_id: number; event_type: string; correlation_id: string | null }[] }>(
          await call("read_agent_task_events", { task_id: tasks.task_id }),
          "events",
        );
        expect(
          ev.events.every((e) => e.correlation_id === "demo-run-2"),
          "correlation id missing on events",
        );
        return ev.events.map((e) => `#${e.event_id} ${e.event_type}`);
      },
    },
    {
      title: "A large result is spooled and read back exactly",
      run: async () => {
        const unit = "ServerFS ✓ 多字节 ";
        const n = 20_000;
        const s = ok<{ task_id: string }>(
          await call("submit_agent_task", { runtime: "fake", workdir: "demo", prompt: `repeat:${n}:${unit}`, profile: "review" }),
          "submit",
        );
        const t = await waitFor(s.task_id, (x) => x["status"] === "succeeded");
        const result = t["result"] as { storage: string; size_bytes: number; sha256: string };
        expect(result.storage === "spool", "the result was not spooled");
        const hash = createHash("sha256");
        let offset = 0;
        let chunks = 0;
        for (;;) {
          const r = ok<{ text: string; next_offset_bytes: number; eof: boolean }>(
            await call("read_agent_task_result", { task_id: s.task_id, offset_bytes: offset, max_bytes: 65_535 }),
            "read result",
          );
          hash.update(r.text, "utf8");
          chunks++;
          offset = r.next_offset_bytes;
          if (r.eof) break;
        }
        const digest = hash.digest("hex");
        expect(digest === result.sha256, "SHA-256 mismatch");
        return [
          `${result.size_bytes} bytes spooled (inline limit 262144); preview ${Buffer.byteLength(String(t["final_response"]))} bytes`,
          `read back in ${chunks} UTF-8-safe chunks; SHA-256 ${digest.slice(0, 16)}… matches`,
        ];
      },
    },
    {
      title: "A write task holds the workdir's lease",
      run: async () => {
        const s = ok<{ task_id: string }>(await call("submit_agent_task", { runtime: "fake", workdir: "demo", prompt: "wait:" }), "submit");
        await waitFor(s.task_id, (t) => t["status"] === "running");
        const busy = await call("create_text_file", { workdir: "demo", path: "notes/new.md", content: "hi\n" });
        expect(text(busy).startsWith("WORKDIR_BUSY"), `expected WORKDIR_BUSY, got ${text(busy)}`);
        const cancelled = ok<{ status: string }>(await call("cancel_agent_task", { task_id: s.task_id }), "cancel");
        let created: CallToolResult | null = null;
        const deadline = performance.now() + 20_000;
        while (performance.now() < deadline) {
          created = await call("create_text_file", { workdir: "demo", path: "notes/new.md", content: "hi\n" });
          if (!created.isError) break;
          await Bun.sleep(100);
        }
        ok(created!, "create after cancel");
        return [
          `while the task runs: create_text_file → ${text(busy).split(":")[0]}`,
          `cancel → ${cancelled.status}; the lease is released and the write succeeds`,
        ];
      },
    },
  ];
}

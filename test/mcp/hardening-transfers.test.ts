/**
 * Binary transfers fit the transport (docs/reliability.md, "Hardening: writes, temp files,
 * transfers and HTTP"): over stdio a whole JSON-RPC message must fit the SDK's 10 MiB line cap,
 * so a transfer just under the default 8 MiB limit (about 11 MiB as base64) is refused with its
 * BINARY_* code and the session goes on; over HTTP the same transfer works. A stdio line larger
 * than the server reads at all is answered from its first bytes (an upload BINARY_PAYLOAD_TOO_LARGE,
 * anything else a JSON-RPC error; without a readable id it is dropped with a log line), and the
 * session goes on.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startHttp } from "../e2e/support.ts";
import { errorCode, type McpSession, parseAudit, startStdio, structured } from "../helpers/mcp-client.ts";
import { holdsWithin } from "../helpers/poll.ts";
import { type RawServer, startRaw } from "../helpers/raw-stdio.ts";
import { type TempDir, tempDir, writeConfig } from "../helpers/workspace.ts";

let dir: TempDir;
let bin: string;
let config: string;
let stdio: McpSession;

/** Just under the default max_binary_transfer_bytes (8 MiB). */
const JUST_UNDER_8_MIB = 8 * 1024 * 1024 - 1024;
const SEVEN_MIB = 7 * 1024 * 1024;
const big = randomBytes(JUST_UNDER_8_MIB);

const text = (r: { content: unknown[] }) => (r.content[0] as { text: string }).text;

beforeAll(async () => {
  dir = tempDir();
  bin = dir.dir("bin");
  dir.file("bin/big.bin", big);
  dir.file("bin/seven.bin", big.subarray(0, SEVEN_MIB));
  config = writeConfig(dir.path, { workdirs: [{ slot: 1, alias: "bin", path: bin, read_only: false, binary_transfer_enabled: true }] });
  stdio = await startStdio(config);
});
afterAll(async () => {
  await stdio.close();
  dir.remove();
});

describe("binary transfers over stdio", () => {
  test("a just-under-8-MiB upload is BINARY_PAYLOAD_TOO_LARGE naming the way around, and the session goes on", async () => {
    const r = await stdio.call("upload_binary_file", { workdir: "bin", path: "up.bin", data_base64: big.toString("base64") });
    expect(errorCode(r)).toBe("BINARY_PAYLOAD_TOO_LARGE");
    expect(text(r)).toContain("the largest binary transfer stdio can carry; use the HTTP transport");
    expect(existsSync(join(bin, "up.bin"))).toBe(false);
    expect(structured<{ workdirs: unknown[] }>(await stdio.call("list_workdirs")).workdirs).toHaveLength(1);
  });

  test("a just-under-8-MiB download is BINARY_FILE_TOO_LARGE, and the session goes on", async () => {
    const r = await stdio.call("download_binary_file", { workdir: "bin", path: "big.bin" });
    expect(errorCode(r)).toBe("BINARY_FILE_TOO_LARGE");
    expect(text(r)).toContain("the largest binary transfer stdio can carry");
    expect(structured<{ workdirs: unknown[] }>(await stdio.call("list_workdirs")).workdirs).toHaveLength(1);
  });

  test("an upload larger than the server reads at all (20 MiB) is BINARY_PAYLOAD_TOO_LARGE too, and the session goes on", async () => {
    const r = await stdio.call("upload_binary_file", { workdir: "bin", path: "huge.bin", data_base64: Buffer.alloc(20 << 20).toString("base64") });
    expect(errorCode(r)).toBe("BINARY_PAYLOAD_TOO_LARGE");
    expect(text(r)).toContain("use the HTTP transport");
    expect(existsSync(join(bin, "huge.bin"))).toBe(false);
    expect(structured<{ workdirs: unknown[] }>(await stdio.call("list_workdirs")).workdirs).toHaveLength(1);
  }, 30_000);

  test("7 MiB fits: it uploads and downloads byte-exact on the same session", async () => {
    const seven = big.subarray(0, SEVEN_MIB);
    const up = structured<{ sha256: string }>(
      await stdio.call("upload_binary_file", { workdir: "bin", path: "seven-up.bin", data_base64: seven.toString("base64") }),
    );
    expect(up.sha256).toBe(createHash("sha256").update(seven).digest("hex"));
    expect(readFileSync(join(bin, "seven-up.bin")).equals(seven)).toBe(true);
    const down = await stdio.call("download_binary_file", { workdir: "bin", path: "seven.bin" });
    const blob = (down.content[1] as { resource: { blob: string } }).resource.blob;
    expect(Buffer.from(blob, "base64").equals(seven)).toBe(true);
  });
});

describe("binary transfers over HTTP", () => {
  test("the same just-under-8-MiB upload and download work: HTTP has no line cap", async () => {
    const http = await startHttp(config);
    try {
      const up = await http.call("upload_binary_file", { workdir: "bin", path: "http-up.bin", data_base64: big.toString("base64") });
      expect(errorCode(up)).toBeNull();
      expect(readFileSync(join(bin, "http-up.bin")).equals(big)).toBe(true);
      const down = await http.call("download_binary_file", { workdir: "bin", path: "big.bin" });
      expect(Buffer.from((down.content[1] as { resource: { blob: string } }).resource.blob, "base64").equals(big)).toBe(true);
      // Past the configured limit the request is still read and answered with the code.
      const over = Buffer.concat([big, Buffer.alloc(4096)]).toString("base64");
      const refused = await http.call("upload_binary_file", { workdir: "bin", path: "over.bin", data_base64: over });
      expect(errorCode(refused)).toBe("BINARY_PAYLOAD_TOO_LARGE");
      expect(text(refused)).toContain("exceeds max_binary_transfer_bytes");
      expect(structured<{ workdirs: unknown[] }>(await http.call("list_workdirs")).workdirs).toHaveLength(1);
    } finally {
      await http.close();
    }
  });
});

describe("a stdio message larger than the server reads", () => {
  /** Over the reader's bound for this config by more than 1 MiB: 8 MiB of base64 plus 1 MiB of arguments is about 12.3 MiB. */
  const OVER = 14 * 1024 * 1024;
  const line = (head: Record<string, unknown>, params: Record<string, unknown>, where: "first" | "last") =>
    `${JSON.stringify(where === "first" ? { jsonrpc: "2.0", ...head, params } : { params, jsonrpc: "2.0", ...head })}\n`;
  const upload = (id: number | null, where: "first" | "last") =>
    line(
      { ...(id === null ? {} : { id }), method: "tools/call" },
      { name: "upload_binary_file", arguments: { workdir: "bin", path: "huge.bin", data_base64: "A".repeat(OVER) } },
      where,
    );
  /** The answer to `id`, or "exited" if the session ended first. */
  const answerOrExit = (raw: RawServer, id: number) => Promise.race([raw.answer(id), raw.proc.exited.then(() => "exited" as const)]);
  const listWorkdirs = async (raw: RawServer, id: number) => {
    raw.callTool(id, "list_workdirs", {});
    const r = await answerOrExit(raw, id);
    expect(r).not.toBe("exited");
    return (r as { result: { structuredContent: { workdirs: unknown[] } } }).result.structuredContent.workdirs;
  };
  const tooLarge = (raw: RawServer) => parseAudit(raw.stderr()).filter((l) => l["event"] === "stdio_message_too_large");
  const SIZE = /the message is (\d+) bytes; a stdio message may hold at most (\d+)/;

  test("an upload is answered BINARY_PAYLOAD_TOO_LARGE naming the bound, logged without content, and the session goes on", async () => {
    const raw = await startRaw(config);
    try {
      const sent = upload(1, "first");
      raw.write(sent);
      const r = (await answerOrExit(raw, 1)) as { result: { isError: boolean; content: { text: string }[] } };
      expect(r.result.isError).toBe(true);
      const text = r.result.content[0]!.text;
      expect(text).toStartWith("BINARY_PAYLOAD_TOO_LARGE: ");
      expect(text).toEndWith("; use the HTTP transport for it");
      const [, bytes, limit] = SIZE.exec(text)!;
      expect(Number(bytes)).toBe(sent.length);
      expect(Number(limit)).toBeLessThan(OVER - 1024 * 1024);
      expect(await listWorkdirs(raw, 2)).toHaveLength(1);
      expect(existsSync(join(bin, "huge.bin"))).toBe(false);
      expect(tooLarge(raw)).toEqual([
        expect.objectContaining({ level: "WARN", bytes: Number(bytes), limit: Number(limit), answered: "BINARY_PAYLOAD_TOO_LARGE" }),
      ]);
      expect(raw.stderr()).not.toContain("AAAA");
    } finally {
      raw.proc.kill();
    }
  }, 30_000);

  test("any other request is answered JSON-RPC -32600 naming the bound, and the session goes on", async () => {
    const raw = await startRaw(config);
    try {
      raw.write(
        line({ id: 1, method: "tools/call" }, { name: "create_text_file", arguments: { workdir: "bin", path: "t.txt", content: "A".repeat(OVER) } }, "first"),
      );
      const r = (await answerOrExit(raw, 1)) as { error: { code: number; message: string } };
      expect(r.error.code).toBe(-32600);
      expect(r.error.message).toMatch(new RegExp(`^${SIZE.source}$`));
      expect(await listWorkdirs(raw, 2)).toHaveLength(1);
      expect(tooLarge(raw).map((l) => l["answered"])).toEqual(["invalid_request"]);
    } finally {
      raw.proc.kill();
    }
  }, 30_000);

  test("a notification, or a request whose id lies in neither end, is dropped with a log line, and the session goes on", async () => {
    const raw = await startRaw(config);
    try {
      raw.write(upload(null, "first"));
      // The id between the payload and 100 KiB of another member: neither kept end holds it.
      const hidden = JSON.parse(upload(3, "last")) as Record<string, unknown>;
      raw.write(`${JSON.stringify({ ...hidden, trailer: "B".repeat(100 * 1024) })}\n`);
      expect(await listWorkdirs(raw, 4)).toHaveLength(1);
      expect(raw.answered.has(3)).toBe(false);
      await holdsWithin(() => tooLarge(raw).length >= 2, 5000);
      expect(tooLarge(raw).map((l) => l["answered"])).toEqual([null, null]);
      // A large request that fits still goes through on the same session after the dropped lines.
      raw.callTool(5, "upload_binary_file", { workdir: "bin", path: "after.bin", data_base64: big.subarray(0, 1 << 20).toString("base64") });
      expect(await answerOrExit(raw, 5)).toMatchObject({ result: { structuredContent: { bytes_written: 1 << 20 } } });
      expect(readFileSync(join(bin, "after.bin")).equals(big.subarray(0, 1 << 20))).toBe(true);
    } finally {
      raw.proc.kill();
    }
  }, 30_000);
});

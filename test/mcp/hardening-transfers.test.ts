/**
 * Binary transfers fit the transport (docs/reliability.md, "Hardening: writes, temp files,
 * transfers and HTTP"): over stdio a whole JSON-RPC message must fit the SDK's 10 MiB line cap,
 * so a transfer just under the default 8 MiB limit (about 11 MiB as base64) is refused with its
 * BINARY_* code and the session goes on; over HTTP the same transfer works.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startHttp } from "../e2e/support.ts";
import { errorCode, type McpSession, startStdio, structured } from "../helpers/mcp-client.ts";
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

  test("7 MiB fits: it uploads and downloads byte-exact on the same session", async () => {
    const seven = big.subarray(0, SEVEN_MIB);
    const up = structured<{ sha256: string }>(await stdio.call("upload_binary_file", { workdir: "bin", path: "seven-up.bin", data_base64: seven.toString("base64") }));
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

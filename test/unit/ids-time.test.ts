import { describe, expect, test } from "bun:test";
import { isRequestId, isTaskId, newMark, newRequestId, newRpcRequestId, newTaskId, random16Hex } from "../../src/shared/ids.ts";
import { addSecondsIso, earlierIso, hoursBeforeIso, isIsoTimestamp, msOfIso, nowIso } from "../../src/shared/time.ts";

describe("identifiers", () => {
  test("task, request, RPC ids and marks have their fixed prefix and lowercase hex length", () => {
    for (let i = 0; i < 50; i++) {
      expect(newTaskId()).toMatch(/^agt_[0-9a-f]{24}$/);
      expect(newRequestId()).toMatch(/^req_[0-9a-f]{24}$/);
      expect(newRpcRequestId()).toMatch(/^mcp_[0-9a-f]{24}$/);
      expect(newMark()).toMatch(/^[0-9a-f]{32}$/);
      expect(random16Hex()).toMatch(/^[0-9a-f]{16}$/);
    }
  });

  test("ids are random: a thousand draws never repeat", () => {
    const ids = new Set(Array.from({ length: 1000 }, newTaskId));
    expect(ids.size).toBe(1000);
  });

  test("generated ids pass their validator", () => {
    expect(isTaskId(newTaskId())).toBe(true);
    expect(isRequestId(newRequestId())).toBe(true);
  });

  test.each([
    ["agt_0123456789abcdef01234567", true],
    ["agt_0123456789ABCDEF01234567", false],
    ["agt_0123456789abcdef0123456", false],
    ["agt_0123456789abcdef012345678", false],
    ["req_0123456789abcdef01234567", false],
    [" agt_0123456789abcdef01234567", false],
    ["agt_0123456789abcdef01234567\n", false],
    ["../agt_0123456789abcdef01234567", false],
  ])("isTaskId(%j) is %p", (id, ok) => {
    expect(isTaskId(id)).toBe(ok);
  });

  test("request ids are validated by their own prefix; non-strings never match", () => {
    expect(isRequestId("req_0123456789abcdef01234567")).toBe(true);
    expect(isRequestId("agt_0123456789abcdef01234567")).toBe(false);
    expect(isTaskId(42)).toBe(false);
    expect(isRequestId(null)).toBe(false);
  });
});

describe("time", () => {
  test("nowIso is the fixed 24-character toISOString form", () => {
    const before = Date.now();
    const now = nowIso();
    const after = Date.now();
    expect(now).toHaveLength(24);
    expect(isIsoTimestamp(now)).toBe(true);
    // the clock read between two others
    expect(Date.parse(now)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(now)).toBeLessThanOrEqual(after);
  });

  test("deadline arithmetic keeps the fixed form and milliseconds", () => {
    expect(addSecondsIso("2026-01-05T10:00:00.125Z", 86_400)).toBe("2026-01-06T10:00:00.125Z");
    expect(addSecondsIso("2026-12-31T23:59:59.999Z", 1)).toBe("2027-01-01T00:00:00.999Z");
    expect(hoursBeforeIso("2026-01-08T10:00:00.000Z", 168)).toBe("2026-01-01T10:00:00.000Z");
  });

  test("a migrated v0.6 form is read as it is", () => {
    expect(addSecondsIso("2025-06-01T00:00:00Z", 60)).toBe("2025-06-01T00:01:00.000Z");
    expect(isIsoTimestamp("2025-06-01T00:00:00Z")).toBe(false);
    expect(msOfIso("2025-06-01T00:00:00Z")).toBe(msOfIso("2025-06-01T00:00:00.000Z"));
  });

  test("limits up to 2^53 − 1 clamp to the last representable fixed-form instant, so string order still holds", () => {
    const far = addSecondsIso("2026-01-05T10:00:00.000Z", Number.MAX_SAFE_INTEGER);
    expect(far).toBe("9999-12-31T23:59:59.999Z");
    expect(hoursBeforeIso("2026-01-05T10:00:00.000Z", Number.MAX_SAFE_INTEGER)).toBe("0000-01-01T00:00:00.000Z");
    expect(isIsoTimestamp(far)).toBe(true);
    expect("2026-01-05T10:00:00.000Z" < far).toBe(true);
  });

  test("the fixed form orders as strings exactly as in time", () => {
    const a = "2026-01-05T09:59:59.999Z";
    const b = addSecondsIso(a, 0.001);
    expect(b).toBe("2026-01-05T10:00:00.000Z");
    expect(a < b).toBe(true);
  });

  test("earlierIso is the minimum (expires_at never exceeds the deadline)", () => {
    const deadline = "2026-01-05T10:00:00.000Z";
    expect(earlierIso(addSecondsIso("2026-01-05T09:00:00.000Z", 600), deadline)).toBe("2026-01-05T09:10:00.000Z");
    expect(earlierIso(addSecondsIso("2026-01-05T09:55:00.000Z", 600), deadline)).toBe(deadline);
  });

  test("a value that is not a timestamp is refused, not turned into a date", () => {
    expect(() => addSecondsIso("yesterday", 1)).toThrow(RangeError);
  });
});

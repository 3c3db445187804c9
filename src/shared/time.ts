/**
 * Timestamps in the one fixed form of docs/task-model.md#conventions, `YYYY-MM-DDTHH:MM:SS.sssZ` (24 characters, what
 * `Date.prototype.toISOString()` gives), so SQL may compare them as strings. Offers:
 * - `nowIso()`;
 * - `addSecondsIso(iso, s)` for `deadline_at` and `expires_at`;
 * - `hoursBeforeIso(iso, h)` for the retention GC cutoff (docs/task-model.md#retention);
 * - `earlierIso(a, b)` for `expires_at = min(now + interaction timeout, deadline_at)` (docs/task-model.md#human-in-the-loop-requests);
 * - `isIsoTimestamp(v)` to tell the fixed form from the other ISO forms migrated v0.6 rows may hold;
 * - `msOfIso(iso)`, the milliseconds since the epoch a timestamp names.
 *
 * These are the wall clock, which the records are written in. How long is left until a deadline or an
 * expiry while the Bridge runs is counted on the monotonic clock (src/main/bridge/service/timers.ts,
 * docs/task-model.md#time-and-clocks).
 *
 * Limits are positive integers up to 2^53 − 1, so sums are clamped to the years 0000–9999: beyond
 * them `toISOString` would throw or change the form (`+010000-…`), breaking string comparison.
 */

export const ISO_TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const MIN_MS = Date.parse("0000-01-01T00:00:00.000Z");
const MAX_MS = Date.parse("9999-12-31T23:59:59.999Z");

const fromMs = (ms: number): string => new Date(Math.min(MAX_MS, Math.max(MIN_MS, ms))).toISOString();

/** Milliseconds of a timestamp; any ISO-8601 form `Date.parse` accepts (migrated rows included). */
export const msOfIso = (iso: string): number => {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError("not an ISO-8601 timestamp");
  return ms;
};

export const nowIso = (): string => new Date().toISOString();

export const addSecondsIso = (iso: string, seconds: number): string => fromMs(msOfIso(iso) + seconds * 1000);

export const hoursBeforeIso = (iso: string, hours: number): string => fromMs(msOfIso(iso) - hours * 3_600_000);

export const earlierIso = (a: string, b: string): string => (msOfIso(a) <= msOfIso(b) ? a : b);

export const isIsoTimestamp = (v: unknown): v is string => typeof v === "string" && ISO_TIMESTAMP_PATTERN.test(v);

/**
 * The console's JSON API (docs/console.md#the-api): `GET /api/…` reads, `POST /api/…` decides. Each
 * route answers JSON; a coded failure is `{error: {code, message}}` with a status that fits the code
 * (a decision that lost a race is 409). Offers `Route`, `findRoute`, `statusOf`.
 */
import * as v from "valibot";
import type { ServerFsError } from "../../shared/errors.ts";
import { TASK_STATUSES } from "../../shared/store/task-states.ts";
import { AnswerBody, type ConsoleApi, DecisionBody } from "./api.ts";

export type Json = Record<string, unknown>;

export interface RouteInput {
  /** The path's task id, where the route has one. */
  taskId: string;
  query: URLSearchParams;
  /** A POST's parsed JSON body. */
  body: unknown;
}

export interface Route {
  method: "GET" | "POST";
  handle(api: ConsoleApi, input: RouteInput): Promise<Json>;
}

/** A body the route refuses is a 400 with this code, before the Bridge is asked. */
export class BadRequest extends Error {}

function parsed<T>(schema: v.GenericSchema<unknown, T>, body: unknown): T {
  const out = v.safeParse(schema, body);
  if (!out.success) throw new BadRequest("the request body does not have the expected fields");
  return out.output;
}

function intParam(query: URLSearchParams, name: string): number {
  const raw = query.get(name) ?? "0";
  if (!/^\d{1,15}$/.test(raw)) throw new BadRequest(`${name} must be a whole number`);
  return Number(raw);
}

const STATIC: Record<string, Route> = {
  "/api/tasks": {
    method: "GET",
    handle: (api, { query }) => {
      const status = query.get("status");
      if (status !== null && !(TASK_STATUSES as readonly string[]).includes(status)) throw new BadRequest("status is not a task status");
      return api.tasks(status);
    },
  },
  "/api/workdirs": { method: "GET", handle: (api) => api.workdirs() },
  "/api/health": { method: "GET", handle: (api) => api.health() },
};

const PER_TASK: Record<string, Route> = {
  "": { method: "GET", handle: (api, { taskId }) => api.task(taskId) },
  events: { method: "GET", handle: (api, { taskId, query }) => api.events(taskId, intParam(query, "after"), intParam(query, "wait_ms")) },
  approval: { method: "POST", handle: (api, { taskId, body }) => api.decide(taskId, parsed(DecisionBody, body)) },
  answer: { method: "POST", handle: (api, { taskId, body }) => api.answer(taskId, parsed(AnswerBody, body)) },
  cancel: { method: "POST", handle: (api, { taskId }) => api.cancel(taskId) },
};

/** `/api/tasks/<id>[/<action>]`: the id is whatever the path holds; the Bridge judges it (AGENT_TASK_NOT_FOUND). */
const TASK_PATH = /^\/api\/tasks\/([A-Za-z0-9_]{1,64})(?:\/([a-z]+))?$/;

export function findRoute(path: string): { route: Route; taskId: string } | null {
  const fixed = STATIC[path];
  if (fixed) return { route: fixed, taskId: "" };
  const m = TASK_PATH.exec(path);
  const route = m ? PER_TASK[m[2] ?? ""] : undefined;
  return route ? { route, taskId: m![1]! } : null;
}

const CONFLICT = new Set(["REQUEST_STALE", "REQUEST_ALREADY_RESOLVED", "AGENT_TASK_TERMINAL", "WORKDIR_BUSY"]);
const NOT_FOUND = new Set(["AGENT_TASK_NOT_FOUND", "REQUEST_NOT_FOUND"]);
const UNAVAILABLE = new Set(["AGENT_BRIDGE_UNAVAILABLE", "BRIDGE_CLOSED", "BRIDGE_STATE_LOST"]);

/** The HTTP status of a failure: the code travels in the body, the status only sorts it. */
export function statusOf(e: ServerFsError): number {
  if (CONFLICT.has(e.code)) return 409;
  if (NOT_FOUND.has(e.code)) return 404;
  if (UNAVAILABLE.has(e.code)) return 503;
  return e.code.startsWith("AGENT_BRIDGE") || e.code.startsWith("BRIDGE_") ? 502 : 400;
}

/**
 * Checking a human's reply against the pending request it answers (docs/bridge-rpc.md#taskapprovalrespond-and-taskquestionanswer steps 5–7):
 * the decision must be offered, granted permissions must have been requested, and answers must
 * fit the questions exactly. Pure functions: the CAS resolution happens in the store.
 */
import { ServerFsError } from "./errors.ts";

export const DECISIONS = ["approve_once", "approve_session", "deny", "cancel_task"] as const;
export type Decision = (typeof DECISIONS)[number];

// type aliases, not interfaces: a resolution crosses to the provider worker as a plain JSON record
export type ApprovalResolution = {
  decision: Decision;
  granted_permission_ids: string[];
};

export type QuestionAnswer = {
  question_id: string;
  selected_option_ids: string[];
  text?: string;
};

export type QuestionResolution = {
  answers: QuestionAnswer[];
};

export interface ApprovalOffer {
  available_decisions?: string[];
  requested_permissions?: { permission_id: string }[];
}

export interface QuestionPayload {
  questions: {
    question_id: string;
    options: { option_id: string }[];
    multi_select: boolean;
    allow_free_text: boolean;
  }[];
}

export function checkApproval(payload: ApprovalOffer, decision: string, granted: string[] | undefined): ApprovalResolution {
  const offered = payload.available_decisions ?? [];
  if (!(DECISIONS as readonly string[]).includes(decision) || (offered.length > 0 && !offered.includes(decision))) {
    // the human learns what they may answer instead (empty means all four)
    const choices = offered.length > 0 ? offered : DECISIONS;
    throw new ServerFsError("INVALID_APPROVAL_DECISION", `this decision is not offered for the request; offered: ${choices.join(", ")}`);
  }
  const requested = new Set((payload.requested_permissions ?? []).map((p) => p.permission_id));
  const ids = [...new Set(granted ?? [])];
  if (ids.some((id) => !requested.has(id))) {
    throw new ServerFsError("PERMISSION_OUTSIDE_POLICY", "a granted permission was not requested");
  }
  return { decision: decision as Decision, granted_permission_ids: ids };
}

const invalid = (phrase: string): never => {
  throw new ServerFsError("INVALID_QUESTION_ANSWER", phrase);
};

const ANSWER_KEYS = new Set(["question_id", "selected_option_ids", "text"]);

export function checkAnswers(payload: QuestionPayload, answers: unknown[]): QuestionResolution {
  if (answers.length === 0) invalid("answers must not be empty");
  const questions = new Map(payload.questions.map((q) => [q.question_id, q]));
  const seen = new Set<string>();
  const out: QuestionAnswer[] = [];
  for (const raw of answers) {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) invalid("each answer must be an object");
    const a = raw as Record<string, unknown>;
    if (Object.keys(a).some((k) => !ANSWER_KEYS.has(k))) invalid("an answer has an unknown key");
    if (typeof a["question_id"] !== "string") invalid("question_id must be a string");
    const id = a["question_id"] as string;
    const q = questions.get(id) ?? invalid("unknown question_id");
    if (seen.has(id)) invalid("a question is answered twice");
    seen.add(id);
    const selected = a["selected_option_ids"] ?? [];
    if (!Array.isArray(selected) || selected.some((s) => typeof s !== "string")) invalid("selected_option_ids must be strings");
    const options = new Set(q.options.map((o) => o.option_id));
    const picks = selected as string[];
    if (new Set(picks).size !== picks.length) invalid("selected_option_ids must be unique");
    if (picks.some((p) => !options.has(p))) invalid("unknown option id");
    if (!q.multi_select && picks.length > 1) invalid("this question takes one option");
    const text = a["text"];
    if (text !== undefined && typeof text !== "string") invalid("text must be a string");
    if (text !== undefined && !q.allow_free_text) invalid("this question takes no free text");
    if (picks.length === 0 && (text === undefined || text === "")) invalid("an answer needs an option or text");
    out.push(text === undefined ? { question_id: id, selected_option_ids: picks } : { question_id: id, selected_option_ids: picks, text: text as string });
  }
  if (seen.size !== questions.size) invalid("every question must be answered");
  return { answers: out };
}

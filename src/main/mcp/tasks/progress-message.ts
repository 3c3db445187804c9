/**
 * The `message` of a progress notification sent while tasks/result waits (docs/mcp-tasks.md#waiting):
 * the event type and a short summary from its payload, one line, so a host can show what the agent is
 * doing. Event contents are untrusted data, like everything read_agent_task_events returns.
 */

/** The payload fields that say the most about an event, in the order they are looked for (docs/events.md). */
const SUMMARY_FIELDS = ["summary", "title", "text", "command", "tool", "error_code", "decision", "status", "runtime"];
const MAX_SUMMARY_CHARS = 120;

export function progressMessage(eventType: string, payload: Record<string, unknown>): string {
  const field = SUMMARY_FIELDS.find((k) => typeof payload[k] === "string" && payload[k] !== "");
  if (field === undefined) return eventType;
  const oneLine = (payload[field] as string).replace(/\s+/g, " ").trim();
  const chars = Array.from(oneLine);
  const summary = chars.length > MAX_SUMMARY_CHARS ? `${chars.slice(0, MAX_SUMMARY_CHARS).join("")}…` : oneLine;
  return `${eventType}: ${summary}`;
}

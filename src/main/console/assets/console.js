// The ServerFS console page (docs/console.md). Plain script, no build step. Everything that came from a
// task, a provider or a file is put on the page with textContent, never as HTML: a prompt, a file name
// or a diff holding markup shows as text and runs nothing.

const LIST_EVERY_MS = 2000;
const TASK_EVERY_MS = 2000;
const HEALTH_EVERY_MS = 30000;
const EVENTS_WAIT_MS = 20000;
const DECISION_LABELS = {
  approve_once: "Approve once",
  approve_session: "Approve for the session",
  deny: "Deny",
  cancel_task: "Deny and cancel the task",
};
const ALL_DECISIONS = ["approve_once", "approve_session", "deny", "cancel_task"];
const TERMINAL = new Set(["succeeded", "failed", "cancelled", "interrupted"]);

let csrf = null;
/** The open task: its id, the last event seen, and a counter that retires an older poll loop. */
const open = { id: null, after: 0, n: 0, generation: 0, requestShown: null };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

const $ = (id) => document.getElementById(id);

async function api(path, options) {
  const res = await fetch(path, { credentials: "same-origin", ...options });
  const type = res.headers.get("content-type") || "";
  const body = type.startsWith("application/json") ? await res.json() : { error: { code: `HTTP_${res.status}`, message: await res.text() } };
  if (!res.ok) throw Object.assign(new Error(body.error?.message || res.statusText), { code: body.error?.code || `HTTP_${res.status}` });
  return body;
}

function post(path, body) {
  return api(path, { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": csrf }, body: JSON.stringify(body || {}) });
}

function age(iso) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

// `usage` ({by_model: [{model, …}], total: {input_tokens, …, cost_usd}}) and the manifest's `choices` exist
// on tasks of a Bridge that records them (docs/task-model.md); older tasks show neither.
function cost(task) {
  const total = task.usage?.total;
  return typeof total?.cost_usd === "number" ? `$${total.cost_usd.toFixed(4)}` : "";
}

/** The models the run used, else the one it was given, else nothing. */
function model(task) {
  const used = Array.isArray(task.usage?.by_model) ? task.usage.by_model.map((m) => m.model).filter((m) => typeof m === "string") : [];
  if (used.length > 0) return used.join(", ");
  return typeof task.choices?.model === "string" ? task.choices.model : "";
}

function usageLine(task) {
  const t = task.usage?.total;
  if (!t || typeof t !== "object") return null;
  const tokens = `input ${t.input_tokens ?? 0} (cached ${t.cached_input_tokens ?? 0}), output ${t.output_tokens ?? 0} (reasoning ${t.reasoning_output_tokens ?? 0}) tokens`;
  return cost(task) === "" ? tokens : `${tokens}, ${cost(task)}`;
}

const statusSpan = (status) => el("span", { class: `status-${status}` }, status);

function setConnection(ok, text) {
  const c = $("connection");
  c.textContent = text;
  c.className = ok ? "dim" : "verdict-fail";
}

// ----- the task list -----

async function refreshTasks() {
  try {
    const { tasks } = await api("/api/tasks");
    setConnection(true, `updated ${new Date().toLocaleTimeString()}`);
    const body = $("tasks").tBodies[0];
    body.replaceChildren(
      ...tasks.map((t) =>
        el(
          "tr",
          { class: `task${t.task_id === open.id ? " selected" : ""}`, "data-task-id": t.task_id, onclick: () => openTask(t.task_id) },
          el("td", { class: "mono" }, t.task_id),
          el("td", {}, statusSpan(t.status)),
          el("td", {}, t.runtime),
          el("td", {}, model(t)),
          el("td", {}, t.relative_cwd ? `${t.workdir_alias}/${t.relative_cwd}` : t.workdir_alias),
          el("td", { title: t.created_at }, age(t.created_at)),
          el("td", {}, cost(t)),
        ),
      ),
    );
    $("tasks-empty").hidden = tasks.length > 0;
    // a tab in the background still says that someone must decide
    const waiting = tasks.filter((t) => t.status === "waiting_for_approval" || t.status === "waiting_for_question").length;
    $("waiting").textContent = waiting === 0 ? "" : `${waiting} waiting for you`;
    document.title = waiting === 0 ? "ServerFS console" : `(${waiting}) ServerFS console`;
  } catch (e) {
    setConnection(false, `${e.code}: ${e.message}`);
  }
}

// ----- one task -----

function openTask(id) {
  if (open.id === id) return;
  history.replaceState(null, "", `#task=${id}`);
  Object.assign(open, { id, after: 0, n: 0, generation: open.generation + 1, requestShown: null });
  // nothing of the task shown before may stay: a button left here would act on that task
  for (const part of ["timeline", "pending", "task-actions", "task-fields", "task-status"]) $(part).replaceChildren();
  $("decision-result").textContent = "";
  $("task-panel").hidden = false;
  $("task-id").textContent = id;
  for (const row of $("tasks").tBodies[0].rows) row.classList.toggle("selected", row.dataset.taskId === id);
  const generation = open.generation;
  void taskLoop(generation);
  void eventsLoop(generation);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function taskLoop(generation) {
  while (generation === open.generation) {
    try {
      const task = await api(`/api/tasks/${encodeURIComponent(open.id)}`);
      if (generation !== open.generation) return;
      renderTask(task);
      if (TERMINAL.has(task.status) && open.requestShown === null) return;
    } catch (e) {
      $("task-status").replaceChildren(el("span", { class: "verdict-fail" }, `${e.code}: ${e.message}`));
    }
    await sleep(TASK_EVERY_MS);
  }
}

function field(name, value) {
  return value === null || value === undefined || value === "" ? [] : [el("dt", {}, name), el("dd", {}, value)];
}

function renderTask(task) {
  $("task-status").replaceChildren(statusSpan(task.status));
  $("task-fields").replaceChildren(
    ...field("runtime", task.runtime),
    ...field("model", model(task)),
    ...field("usage", usageLine(task)),
    ...field("profile", task.profile),
    ...field("workdir", `${task.workdir_alias} (slot ${task.workdir_slot}), start directory ${task.relative_cwd || "."}`),
    ...field("created", task.created_at),
    ...field("updated", task.updated_at),
    ...field("completed", task.completed_at),
    ...field("error", task.error_code ? `${task.error_code}: ${task.error_message || ""}` : null),
    ...field("response", task.final_response_preview === null ? null : el("pre", { class: "mono" }, task.final_response_preview)),
  );
  const actions = $("task-actions");
  if (TERMINAL.has(task.status)) actions.replaceChildren();
  else if (actions.childElementCount === 0)
    actions.append(
      el(
        "button",
        { type: "button", class: "cancel", id: "cancel-task", "data-task-id": task.task_id, onclick: () => cancelTask(task.task_id) },
        "Cancel task",
      ),
    );
  const pending = task.pending_request && task.pending_request.status === "pending" ? task.pending_request : null;
  const key = pending ? pending.request_id : null;
  if (key === open.requestShown) return;
  open.requestShown = key;
  $("pending").replaceChildren(pending ? renderRequest(task.task_id, pending) : "");
}

function renderDiff(text) {
  const pre = el("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    const cls = line.startsWith("@@")
      ? "diff-hunk"
      : line.startsWith("+") && !line.startsWith("+++")
        ? "diff-add"
        : line.startsWith("-") && !line.startsWith("---")
          ? "diff-del"
          : "";
    pre.append(el("span", cls ? { class: cls } : {}, line));
  }
  return pre;
}

function renderFileChange(change) {
  const name = change.new_path ? `${change.path} → ${change.new_path}` : change.path;
  const note = change.withheld ? "(content withheld: the path is outside the workdir or not allowed)" : change.truncated ? "(diff cut short)" : "";
  return el(
    "div",
    { class: "file" },
    el("div", {}, el("span", { class: "file-name mono" }, name), " ", el("span", { class: "dim" }, change.kind), " ", el("span", { class: "dim" }, note)),
    typeof change.diff === "string" ? renderDiff(change.diff) : null,
  );
}

function where(payload) {
  if (!("relative_cwd" in payload)) return null;
  if (payload.relative_cwd === null) return "an unknown directory";
  return payload.relative_cwd === "" ? ". (the workdir's root)" : payload.relative_cwd;
}

function renderRequest(taskId, request) {
  const p = request.payload || {};
  const box = el("div", { class: "request", id: "pending-request", "data-request-id": request.request_id });
  if (request.kind === "approval") {
    box.append(el("h3", {}, `Approval: ${p.title || p.category || "a request"}`));
    box.append(
      el(
        "dl",
        {},
        ...field("category", p.category),
        ...field("summary", p.summary),
        ...field("reason", p.reason),
        ...field("runs in", where(p)),
        ...field("tool", [p.server, p.tool].filter(Boolean).join("/")),
        ...field("path", p.blocked_path),
        ...field("expires", request.expires_at),
      ),
    );
    if (p.outside_sandbox === true) box.append(el("p", { class: "warning" }, "This command runs outside the sandbox."));
    const command = p.command_display || p.command;
    if (command) box.append(el("pre", { class: "command" }, command));
    for (const change of Array.isArray(p.file_changes) ? p.file_changes : []) box.append(renderFileChange(change));
    for (const perm of Array.isArray(p.requested_permissions) ? p.requested_permissions : [])
      box.append(el("p", { class: "mono" }, `${perm.kind}: ${JSON.stringify(perm.details)}`));
    const offered = Array.isArray(p.available_decisions) && p.available_decisions.length > 0 ? p.available_decisions : ALL_DECISIONS;
    box.append(
      el(
        "div",
        { class: "decisions" },
        ...offered.map((d) =>
          el("button", { type: "button", class: d, "data-decision": d, onclick: () => decide(taskId, request.request_id, d) }, DECISION_LABELS[d] || d),
        ),
      ),
    );
    return box;
  }
  box.append(el("h3", {}, "Question"));
  const form = el("form", { class: "question-form" });
  for (const q of Array.isArray(p.questions) ? p.questions : []) {
    const set = el("fieldset", { "data-question-id": q.question_id }, el("legend", {}, q.header || q.question_id), el("p", {}, q.prompt || ""));
    for (const o of q.options || []) {
      const input = el("input", { type: q.multi_select ? "checkbox" : "radio", name: `q-${q.question_id}`, value: o.option_id });
      set.append(el("label", {}, input, " ", o.label || o.option_id, o.description ? el("span", { class: "dim" }, ` — ${o.description}`) : null), el("br"));
    }
    if (q.allow_free_text) set.append(el("input", { type: "text", class: "free-text", placeholder: "or type an answer" }));
    form.append(set);
  }
  form.append(el("div", { class: "answers" }, el("button", { type: "submit", id: "answer-submit" }, "Answer")));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const answers = [...form.querySelectorAll("fieldset")].map((set) => {
      const answer = { question_id: set.dataset.questionId, selected_option_ids: [...set.querySelectorAll("input:checked")].map((i) => i.value) };
      const text = set.querySelector(".free-text")?.value.trim();
      if (text) answer.text = text;
      return answer;
    });
    void answer(taskId, request.request_id, answers);
  });
  box.append(form);
  return box;
}

function showResult(ok, text) {
  const r = $("decision-result");
  r.textContent = text;
  r.className = ok ? "" : "error";
}

async function act(what, call) {
  for (const b of document.querySelectorAll("#pending button, #task-actions button")) b.disabled = true;
  try {
    await call();
    showResult(true, what);
  } catch (e) {
    showResult(false, `${e.code}: ${e.message}`);
  } finally {
    for (const b of document.querySelectorAll("#pending button, #task-actions button")) b.disabled = false;
    open.requestShown = undefined;
  }
}

const decide = (taskId, requestId, decision) =>
  act(`${decision} sent`, () => post(`/api/tasks/${encodeURIComponent(taskId)}/approval`, { request_id: requestId, decision }));
const answer = (taskId, requestId, answers) =>
  act("answer sent", () => post(`/api/tasks/${encodeURIComponent(taskId)}/answer`, { request_id: requestId, answers }));
const cancelTask = (taskId) => act("cancel sent", () => post(`/api/tasks/${encodeURIComponent(taskId)}/cancel`));

// ----- the timeline: the Bridge's long poll, through the console -----

function eventDetail(payload) {
  const parts = [];
  if (typeof payload.text === "string") parts.push(JSON.stringify(payload.text.length > 300 ? `${payload.text.slice(0, 299)}…` : payload.text));
  for (const [k, v] of Object.entries(payload)) if (k !== "text") parts.push(`${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  const line = parts.join(" ");
  return line.length > 600 ? `${line.slice(0, 599)}…` : line;
}

async function eventsLoop(generation) {
  let ended = false;
  while (generation === open.generation) {
    try {
      const page = await api(`/api/tasks/${encodeURIComponent(open.id)}/events?after=${open.after}&wait_ms=${ended ? 0 : EVENTS_WAIT_MS}`);
      if (generation !== open.generation) return;
      for (const e of page.events) {
        open.n += 1;
        $("timeline").append(
          el(
            "li",
            { "data-event-type": e.event_type, value: String(open.n) },
            el("span", { class: "dim" }, `${e.created_at} `),
            el("span", { class: "type" }, e.event_type),
            " ",
            el("span", { class: "mono" }, eventDetail(e.payload || {})),
          ),
        );
      }
      open.after = page.next_after_event_id;
      if (page.events.length > 0) continue;
      if (ended) return;
      ended = TERMINAL.has($("task-status").textContent);
    } catch {
      await sleep(TASK_EVERY_MS);
    }
  }
}

// ----- workdirs and health -----

async function refreshWorkdirs() {
  try {
    const { workdirs } = await api("/api/workdirs");
    $("workdirs").tBodies[0].replaceChildren(
      ...workdirs.map((w) =>
        el(
          "tr",
          { "data-slot": String(w.slot) },
          el("td", {}, String(w.slot)),
          el("td", {}, w.alias),
          el("td", {}, `${w.read_only ? "read-only" : "writable"}, agents: ${w.agent_mode}`),
          el("td", { class: "mono" }, w.writer_task_id || "free"),
          el("td", { class: "mono" }, w.guard ? `${w.guard.task_id || "invalid guard"} (${w.guard.task_status || "task gone"})` : "none"),
          el("td", { class: w.recovery_needed ? "verdict-fail" : "verdict-ok" }, w.recovery_needed ? "needed: serverfs recovery" : "no"),
        ),
      ),
    );
  } catch (e) {
    $("workdirs").tBodies[0].replaceChildren(el("tr", {}, el("td", { colspan: "6", class: "verdict-fail" }, `${e.code}: ${e.message}`)));
  }
}

async function refreshHealth() {
  try {
    const { checks } = await api("/api/health");
    $("health").replaceChildren(
      ...checks.map((c) => el("li", {}, el("span", { class: `verdict-${c.verdict}` }, c.verdict), " ", el("strong", {}, c.check), " ", c.reason)),
    );
  } catch (e) {
    $("health").replaceChildren(el("li", { class: "verdict-fail" }, `${e.code}: ${e.message}`));
  }
}

async function every(ms, f) {
  for (;;) {
    await f();
    await sleep(ms);
  }
}

async function start() {
  try {
    csrf = (await api("/api/session")).csrf_token;
  } catch (e) {
    setConnection(false, `${e.code}: ${e.message}`);
    return;
  }
  $("health-refresh").addEventListener("click", () => void refreshHealth());
  void every(LIST_EVERY_MS, refreshTasks);
  void every(LIST_EVERY_MS, refreshWorkdirs);
  void every(HEALTH_EVERY_MS, refreshHealth);
  const m = /^#task=([A-Za-z0-9_]+)$/.exec(location.hash);
  if (m) openTask(m[1]);
}

document.addEventListener("DOMContentLoaded", () => void start());

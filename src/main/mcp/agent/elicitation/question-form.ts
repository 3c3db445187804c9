/**
 * A question request as a form (docs/elicitation.md): one field per question, its options as an enum
 * (a list of them when the question takes several), and a free-text field where the question allows
 * one. The enum shows the options' labels (a label two options share gets its option id added), and
 * an answer maps them back to option ids.
 */
import type { ElicitForm } from "../../client-session.ts";
import { type Json, list, type PendingForm, text } from "./form-kit.ts";
import { FormMessage } from "./form-message.ts";

interface Field {
  questionId: string;
  choiceKey: string | null;
  textKey: string | null;
  /** The label shown → the option id. */
  options: Map<string, string>;
  multi: boolean;
}

function labels(options: Json[]): Map<string, string> {
  const count = new Map<string, number>();
  for (const o of options) count.set(String(o["label"]), (count.get(String(o["label"])) ?? 0) + 1);
  const out = new Map<string, string>();
  for (const o of options) {
    const label = String(o["label"]);
    out.set(count.get(label) === 1 ? label : `${label} [${String(o["option_id"])}]`, String(o["option_id"]));
  }
  return out;
}

export function questionForm(taskId: string, requestId: string, payload: Json): PendingForm {
  const questions = list(payload["questions"]);
  const message = new FormMessage().add(
    `An agent task asks ${questions.length === 1 ? "a question" : `${questions.length} questions`} (task ${taskId}, request ${requestId}).`,
  );
  const properties: ElicitForm["requestedSchema"]["properties"] = {};
  const required: string[] = [];
  const fields: Field[] = questions.map((q, i) => {
    const n = i + 1;
    const prompt = text(q["prompt"]) ?? `Question ${n}`;
    message.add(questions.length === 1 ? prompt : `${n}. ${prompt}`);
    const options = labels(list(q["options"]));
    for (const o of list(q["options"])) if (text(o["description"])) message.add(`   ${String(o["label"])}: ${String(o["description"])}`);
    const multi = q["multi_select"] === true;
    const freeText = q["allow_free_text"] === true;
    const choiceKey = options.size > 0 ? `answer_${n}` : null;
    const textKey = freeText || options.size === 0 ? `text_${n}` : null;
    if (choiceKey) {
      const values = [...options.keys()];
      properties[choiceKey] = multi
        ? { type: "array", title: prompt, description: "Choose one or more.", items: { type: "string", enum: values } }
        : { type: "string", title: prompt, enum: values };
      if (!textKey) required.push(choiceKey);
    }
    if (textKey) {
      properties[textKey] = { type: "string", title: choiceKey ? `${prompt} (your own answer)` : prompt };
      if (!choiceKey) required.push(textKey);
    }
    return { questionId: String(q["question_id"]), choiceKey, textKey, options, multi };
  });

  return {
    form: { message: message.toString(), requestedSchema: { type: "object", properties, required } },
    answer(content) {
      const answers: Json[] = [];
      for (const f of fields) {
        const chosen = f.choiceKey ? content[f.choiceKey] : undefined;
        const picked = (Array.isArray(chosen) ? chosen : typeof chosen === "string" && chosen !== "" ? [chosen] : []).map(String);
        if (picked.some((p) => !f.options.has(p)) || (!f.multi && picked.length > 1)) return null;
        const freeText = f.textKey ? text(content[f.textKey]) : undefined;
        if (picked.length === 0 && freeText === undefined) return null;
        answers.push({
          question_id: f.questionId,
          selected_option_ids: picked.map((p) => f.options.get(p)!),
          ...(freeText !== undefined ? { text: freeText } : {}),
        });
      }
      return { method: "task.question.answer", decision: "answered", params: { task_id: taskId, request_id: requestId, answers } };
    },
  };
}

/**
 * The question payload a pending request carries (docs/task-model.md "Question payload"), for tests to
 * compare a provider's normalized question with.
 */

export interface QuestionOption {
  option_id: string;
  label: string;
  description?: string;
}

/** One single-select question with free text allowed, the shape every tested provider asks. */
export const singleQuestion = (question_id: string, prompt: string, options: QuestionOption[]) => ({
  questions: [{ question_id, prompt, options, multi_select: false, allow_free_text: true }],
});

/** What the `fake` runtime's `question:PROMPT` asks (docs/runtimes.md): `q1`, options `a` and `b`. */
export const fakeQuestion = (prompt: string) =>
  singleQuestion("q1", prompt, [
    { option_id: "a", label: "a" },
    { option_id: "b", label: "b" },
  ]);

/**
 * The text of an elicitation form, bounded (docs/elicitation.md): what the human must read to decide
 * comes first, and what does not fit the budget is left out with a line saying so, since
 * get_agent_task still has the whole request.
 */
import { byteLength, cutUtf8 } from "../../../../shared/utf8.ts";

/** A form message stays within this many UTF-8 bytes, its closing note included. */
export const FORM_MESSAGE_BYTES = 16 * 1024;

const ELLIPSIS_BYTES = byteLength("…");
const LEFT_OUT = "… (more is not shown here; get_agent_task has the whole request)";

export class FormMessage {
  private readonly parts: string[] = [];
  private used = 0;
  private full = false;
  private readonly budget = FORM_MESSAGE_BYTES - byteLength(LEFT_OUT) - 1;

  /**
   * Adds one block, cut to `max` bytes (with `…`) when longer. A block that does not fit what is left
   * of the budget is cut to it, and nothing after it is added.
   */
  add(text: string, max = this.budget): this {
    if (this.full || text === "") return this;
    const separator = this.parts.length > 0 ? 1 : 0;
    const left = this.budget - this.used - separator;
    const limit = Math.min(max, left);
    let block = text;
    if (byteLength(text) > limit) {
      block = limit > ELLIPSIS_BYTES ? `${cutUtf8(text, limit - ELLIPSIS_BYTES).text}…` : "";
      if (left <= max) this.full = true;
    }
    if (block !== "") {
      this.parts.push(block);
      this.used += byteLength(block) + separator;
    }
    return this;
  }

  toString(): string {
    return this.full ? [...this.parts, LEFT_OUT].join("\n") : this.parts.join("\n");
  }
}

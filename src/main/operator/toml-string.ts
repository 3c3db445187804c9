/**
 * A TOML 1.0 basic string (`"…"`) holding any text exactly, for the config files ServerFS writes (its
 * starter config, Codex's config.toml). A basic string may not hold `"`, `\` or a control character
 * other than tab raw; a path may hold any of them, and a strict reader (Codex's) rejects the whole
 * file over one raw DEL. So those are escaped (`\"`, `\\`, `\b` `\t` `\n` `\f` `\r`, else `\uXXXX`),
 * and the C1 controls (U+0080–U+009F) too, which TOML allows raw but no editor shows.
 */

const SHORT_ESCAPES = new Map([
  [0x08, "\\b"],
  [0x09, "\\t"],
  [0x0a, "\\n"],
  [0x0c, "\\f"],
  [0x0d, "\\r"],
  [0x22, '\\"'],
  [0x5c, "\\\\"],
]);

const isControl = (unit: number): boolean => unit < 0x20 || (unit >= 0x7f && unit <= 0x9f);

export function tomlString(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    const short = SHORT_ESCAPES.get(unit);
    if (short !== undefined) out += short;
    else if (isControl(unit)) out += `\\u${unit.toString(16).toUpperCase().padStart(4, "0")}`;
    else out += text[i];
  }
  return `${out}"`;
}

/**
 * The console's page: plain HTML, CSS and JS with no build step, imported as text so they are inside
 * the binary `bun build --compile` makes (docs/console.md). Offers `ASSETS` (path → type and body).
 */

import style from "./assets/console.css" with { type: "text" };
import script from "./assets/console.js" with { type: "text" };
import page from "./assets/index.html" with { type: "text" };

export const ASSETS: Readonly<Record<string, { type: string; body: string }>> = {
  "/index.html": { type: "text/html; charset=utf-8", body: String(page) },
  "/console.css": { type: "text/css; charset=utf-8", body: String(style) },
  "/console.js": { type: "text/javascript; charset=utf-8", body: String(script) },
};

// console.js imported `with { type: "text" }` (assets.ts) is its text, not a module.
declare const text: string;
export default text;

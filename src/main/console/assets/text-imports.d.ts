// A stylesheet imported `with { type: "text" }` (assets.ts) is its text; bun-types declares no `*.css`.
declare module "*.css" {
  const text: string;
  export default text;
}

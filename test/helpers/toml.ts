/** A small TOML writer for the configs tests generate (tables, arrays of tables, scalars, arrays). */
type Scalar = string | number | boolean;
type Value = Scalar | Scalar[] | Table | Table[];
export interface Table {
  [key: string]: Value | undefined;
}

const scalar = (v: Scalar): string => (typeof v === "string" ? JSON.stringify(v) : String(v));
const isTable = (v: unknown): v is Table => typeof v === "object" && v !== null && !Array.isArray(v);
const isTableArray = (v: unknown): v is Table[] => Array.isArray(v) && v.length > 0 && v.every(isTable);

export function toToml(table: Table, prefix = ""): string {
  const lines: string[] = [];
  const nested: string[] = [];
  for (const [k, v] of Object.entries(table)) {
    if (v === undefined) continue;
    const name = prefix ? `${prefix}.${k}` : k;
    if (isTableArray(v)) {
      for (const t of v) nested.push(`[[${name}]]\n${toToml(t, name).replace(/^\n/, "")}`);
    } else if (isTable(v)) {
      nested.push(`[${name}]\n${toToml(v, name).replace(/^\n/, "")}`);
    } else if (Array.isArray(v)) {
      lines.push(`${k} = [${(v as Scalar[]).map(scalar).join(", ")}]`);
    } else lines.push(`${k} = ${scalar(v)}`);
  }
  return [lines.join("\n"), ...nested].filter((s) => s !== "").join("\n\n") + "\n";
}

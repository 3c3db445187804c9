/** The parser ships no types; its answer is checked by a valibot schema in prometheus.ts before use. */
declare module "parse-prometheus-text-format" {
  export default function parsePrometheusTextFormat(text: string): unknown;
}

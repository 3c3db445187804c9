/** `serverfs demo`: filled in below as the parts of the system land. */
export async function runDemo(): Promise<number> {
  process.stderr.write("serverfs demo: not available yet\n");
  return 1;
}

/** `localhost`, `127.0.0.0/8` or `::1` (in any spelling); every other address reaches the network. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (h === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  if (!h.includes(":")) return false;
  try {
    return new URL(`http://[${h}]/`).hostname === "[::1]";
  } catch {
    return false;
  }
}

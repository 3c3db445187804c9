/**
 * How a message names a byte limit: `byteSize(65_536)` is "64 KiB", `byteSize(8_388_608)` "8 MiB",
 * so a message never states a size beside the constant that holds it.
 */
const UNITS = [
  { size: 1_048_576, name: "MiB" },
  { size: 1024, name: "KiB" },
] as const;

export function byteSize(bytes: number): string {
  const unit = UNITS.find((u) => bytes >= u.size && bytes % u.size === 0);
  return unit === undefined ? `${bytes} bytes` : `${bytes / unit.size} ${unit.name}`;
}

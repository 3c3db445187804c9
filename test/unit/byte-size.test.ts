import { describe, expect, test } from "bun:test";
import { byteSize } from "../../src/shared/byte-size.ts";
import { LIMITS } from "../../src/shared/limits.ts";
import { FIXED_LIMITS } from "../../src/shared/manifest.ts";

describe("byteSize", () => {
  test("names whole KiB and MiB the way the messages always have", () => {
    expect(byteSize(LIMITS.max_prompt_bytes)).toBe("64 KiB");
    expect(byteSize(LIMITS.max_spooled_result_bytes)).toBe("8 MiB");
    expect(byteSize(LIMITS.max_line_bytes)).toBe("1 MiB");
    expect(byteSize(LIMITS.max_final_response_bytes)).toBe("256 KiB");
  });

  test("a size that is no whole unit stays in bytes", () => {
    expect(byteSize(1000)).toBe("1000 bytes");
    expect(byteSize(1536)).toBe("1536 bytes");
    expect(byteSize(0)).toBe("0 bytes");
  });
});

describe("FIXED_LIMITS", () => {
  test("records the limits module's values under the same names", () => {
    for (const [name, value] of Object.entries(FIXED_LIMITS)) expect<number>(value).toBe(LIMITS[name as keyof typeof LIMITS]);
  });
});

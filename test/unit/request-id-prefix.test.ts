import { describe, expect, test } from "bun:test";
import { requestIdPrefix } from "../../src/main/mcp/request-id-prefix.ts";

describe("requestIdPrefix reads a top-level id from a message's first bytes", () => {
  test.each([
    ['{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"argu', 7],
    [' { "id" : "a\\"b" , "method":"x"', 'a"b'],
    ['{"jsonrpc":"2.0","method":"tools/call","id":-12.5e1,"params":', -125],
    ['{"params":{"id":1,"x":[{"id":2}]},"id":3,"m', 3],
    ['{"key":"has \\"id\\": 9 inside","id":4,', 4],
  ])("%s", (prefix, id) => {
    expect(requestIdPrefix(prefix)).toBe(id);
  });

  test.each([
    ['{"jsonrpc":"2.0","method":"notifications/x","params":{"data":"AAAA'],
    ['{"params":{"id":1,"data":"AAAA'],
    ['{"jsonrpc":"2.0","id":12'],
    ['{"jsonrpc":"2.0","id":"abc'],
    ['[{"id":1}]'],
    ['{"id":null,"method":"x"}'],
    ['{"a":1},"id":2,'],
    ["not json"],
  ])("none in %s", (prefix) => {
    expect(requestIdPrefix(prefix)).toBeNull();
  });
});
